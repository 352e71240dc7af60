"""The documented accuracy of the wasm backend: ``ulp_tolerance_of(op, ty)`` for WasmBackend.ulp_tolerance.

Values come from the measured table (``ulp_table``, written by ``wasm_backend.measure_ulp``); an
operation computed by the math library that was not measured yet reports the library's own figure.
Operation keys are instruction names (``"FMA"``) and, for cooperative operations,
``"<instruction>.<Operation>"`` (``"ParallelMap.Exp"``).
"""

from __future__ import annotations

from atlas_web.isa.enums import BinaryMapOperation, MapOperation, ReduceOperation
from atlas_web.isa.types import Type

from .lowering.math_seam import math_function_for
from .ulp_table import MEASURED_ULPS

__all__ = ["operation_key", "ulp_tolerance_of"]

_ENUM_OWNERS = {MapOperation: "ParallelMap", BinaryMapOperation: "ParallelMapBinary", ReduceOperation: "ParallelReduce"}


def operation_key(op: object) -> str:
    """The table key of ``op``: an instruction, its class, its name, or a cooperative operation member.

    Raises KeyError for anything else.
    """
    owner = _ENUM_OWNERS.get(type(op))
    if owner is not None:
        return f"{owner}.{op.name}"
    if isinstance(op, str):
        return op
    info = getattr(op, "INFO", None)
    if info is not None:
        return info.name
    raise KeyError(f"not an instruction or cooperative operation: {op!r}")


def ulp_tolerance_of(op: object, ty: Type) -> float:
    """The largest error in ulps documented for ``op`` on ``ty`` (0.0: bit-exact)."""
    key = operation_key(op)
    measured = MEASURED_ULPS.get((key, ty.name))
    if measured is not None:
        return measured
    name = key.split(".")[-1] if "." in key else key
    member = next((m for enum in _ENUM_OWNERS for m in enum if f"{_ENUM_OWNERS[enum]}.{m.name}" == key), None)
    function = math_function_for(member if member is not None else name, ty)
    if function is not None:
        compute = Type.F64 if ty is Type.F64 else Type.F32
        return float(function.ulp.get(compute, 0.0))
    return 0.0
