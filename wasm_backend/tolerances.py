"""The documented accuracy of the wasm backend: ``ulp_tolerance_of(op, ty)`` for WasmBackend.ulp_tolerance.

Values come from the measured table (``ulp_table``, written by ``python -m atlas_web.accuracy wasm --write``); an
operation computed by the math library that was not measured yet reports the library's own figure.
Operation keys are instruction names (``"FMA"``) and, for cooperative operations,
``"<instruction>.<Operation>"`` (``"ParallelMap.Exp"``).
"""

from __future__ import annotations

from atlas_web.accuracy import OPERATION_OWNERS, operation_key
from atlas_web.isa.types import Type

from .lowering.math_seam import math_function_for
from .ulp_table import MEASURED_ULPS

__all__ = ["ulp_tolerance_of"]


def ulp_tolerance_of(op: object, ty: Type) -> float:
    """The largest error in ulps documented for ``op`` on ``ty`` (0.0: bit-exact)."""
    key = operation_key(op)
    measured = MEASURED_ULPS.get((key, ty.name))
    if measured is not None:
        return measured
    name = key.split(".")[-1] if "." in key else key
    member = next((m for enum in OPERATION_OWNERS for m in enum if operation_key(m) == key), None)
    function = math_function_for(member if member is not None else name, ty)
    if function is not None:
        compute = Type.F64 if ty is Type.F64 else Type.F32
        return float(function.ulp.get(compute, 0.0))
    return 0.0
