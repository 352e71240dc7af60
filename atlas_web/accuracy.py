"""Measures any backend's float error against the reference, per (operation, type): one tool for every backend.

``python -m atlas_web.accuracy <backend> [--write | --print]`` runs every float per-lane instruction
and every float cooperative map operation that the backend supports on it and on the reference
(CpuBackend) over the same inputs (edge values, several random distributions and random bit
patterns of the type), and records, per (operation key, type name), the largest distance in ulps of
the type (``atlas_web.isa.floats.ulp_distance``: NaN equals NaN, an infinity only itself). Only
non-zero maxima are kept. ``--write`` stores the table as ``<backend package>/ulp_table.py``
(``MEASURED_ULPS``), which the backend's ``ulp_tolerance`` and its section of docs/backends.md
(``Backend.documentation()``) read; ``--print`` only prints it. Needs the reference (NumPy) and the
backend's engine; takes a minute or two per backend. Imports only the standard library until run.

Operation keys are instruction names (``"FMA"``) and ``"<instruction>.<Operation>"`` for cooperative
operations (``"ParallelMap.Exp"``), as ``Backend.ulp_tolerance`` and docs/backends.md use them.
"""

from __future__ import annotations

import importlib
import math
import random
import sys
from pathlib import Path
from typing import Collection

from .isa import (
    CVT, INSTRUCTION_CLASSES, LDG, MOV_IMM, MUL, OPCODE_TABLE, OR, STG, BinaryMapOperation, MapOperation, ParallelMap,
    ParallelMapBinary, Register, Type,
)
from .isa.addresses import Address
from .isa.floats import bits_to_float, float_to_bits, round_float, ulp_distance
from .isa.opcodes import FLOATS, Access, OperandKind
from .isa.operations import COOPERATIVE_OPERATION_TYPES, OPERATION_INSTRUCTIONS
from .launch import LaunchConfig
from .program import ProgramBuilder

__all__ = ["measure", "render_table", "table_path", "operation_key", "OPERATION_OWNERS", "float_inputs", "main"]

#: cooperative operation enum -> the instruction whose ``operation`` it is (the first part of its key)
OPERATION_OWNERS = OPERATION_INSTRUCTIONS


def operation_key(op: object) -> str:
    """The table key of ``op``: an instruction, its class, its name, or a cooperative operation member.

    Raises KeyError for anything else.
    """
    owner = OPERATION_OWNERS.get(type(op))
    if owner is not None:
        return f"{owner}.{op.name}"
    if isinstance(op, str):
        return op
    info = getattr(op, "INFO", None)
    if info is not None:
        return info.name
    raise KeyError(f"not an instruction or cooperative operation: {op!r}")


_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, math.inf, -math.inf, math.nan, 1e-3, 123.456, -7.75, 1e30, -1e-30,
          65504.0, 1e-7, 2.0 ** -126, 2.0 ** -140, 0.1, 2.0 ** -1022, 1e300, -1e300, 88.7, -103.9, 709.7, -745.1]
_FLOAT_TYPES = (Type.F16, Type.BF16, Type.F32, Type.F64)
LANES = 2048


def float_inputs(ty: Type, n: int, seed: int) -> list[float]:
    """``n`` values representable in ``ty``: edges, random values of several scales, random bit patterns."""
    rng = random.Random(seed)
    out = [round_float(v, ty) for v in _EDGES]
    bits = ty.bits
    while len(out) < n:
        pick = rng.randrange(6)
        if pick == 0:
            v = rng.uniform(-4, 4)
        elif pick == 1:
            v = rng.uniform(-100, 100)
        elif pick == 2:
            v = rng.gauss(0, 1e3)
        elif pick == 3:
            v = rng.uniform(-1, 1)
        elif pick == 4:
            v = rng.uniform(-20, 20)
        else:
            v = bits_to_float(rng.getrandbits(bits), ty)
        out.append(round_float(v, ty))
    rng.shuffle(out)
    return out[:n]


def _encode(ty: Type, values: list[float]) -> bytes:
    size = ty.size_bytes()
    return b"".join(float_to_bits(v, ty).to_bytes(size, "little") for v in values)


def _decode(ty: Type, raw: bytes) -> list[float]:
    size = ty.size_bytes()
    return [bits_to_float(int.from_bytes(raw[i:i + size], "little"), ty) for i in range(0, len(raw), size)]


def _lane_program(info, ty: Type, handles: list[int]):
    """Each lane loads its operands, runs the instruction once and stores the result."""
    b = ProgramBuilder()
    fields = {name: ty for name in info.type_fields}
    reads = [o.name for o in info.operands if o.kind is OperandKind.REG and o.access is Access.READ]
    for k in range(len(reads) + 1):
        b.add(CVT(dst=Register(200), src=Register(255), src_ty=Type.U32, dst_ty=Type.U64))
        b.add(MOV_IMM(dst=Register(201), value=ty.size_bytes(), ty=Type.U64))
        b.add(MUL(dst=Register(202), lhs=Register(200), rhs=Register(201), ty=Type.U64))
        b.add(MOV_IMM(dst=Register(203), value=handles[k] << 32, ty=Type.U64))
        b.add(OR(dst=Register(210 + k), lhs=Register(202), rhs=Register(203), ty=Type.U64))
    for k in range(len(reads)):
        b.add(LDG(dst=Register(1 + k), src=Address.RegisterIndirect(Register(210 + k), 0), ty=ty))
    operands = {name: Register(1 + k) for k, name in enumerate(reads)}
    b.add(_instruction(info, operands, fields))
    b.add(STG(dst=Address.RegisterIndirect(Register(210 + len(reads)), 0), src=Register(100), ty=ty))
    return b.build()


def _instruction(info, operands: dict, fields: dict):
    return INSTRUCTION_CLASSES[info.name](dst=Register(100), **operands, **fields)


def _run(backend, program_for, ty: Type, inputs: list[list[float]], config) -> list[float]:
    handles = []
    for values in inputs:
        h = backend.allocate_buffer(len(values) * ty.size_bytes())
        backend.copy_to_buffer(h, _encode(ty, values))
        handles.append(int(h))
    out = backend.allocate_buffer(len(inputs[0]) * ty.size_bytes())
    handles.append(int(out))
    backend.execute_program(program_for(handles), config)
    result = _decode(ty, backend.copy_from_buffer(out))
    for h in handles:
        backend.free_buffer(h)
    return result


def _max_error(backend, reference, program_for, ty: Type, arity: int, config, seeds: range) -> float:
    worst = 0.0
    for seed in seeds:
        inputs = [float_inputs(ty, LANES, seed * 7 + k) for k in range(arity)]
        want = _run(reference, program_for, ty, inputs, config)
        got = _run(backend, program_for, ty, inputs, config)
        worst = max([worst] + [ulp_distance(w, g, ty) for w, g in zip(want, got)])
    return worst


def measure(backend, seeds: range = range(3), reference=None, only: Collection[str] | None = None
            ) -> dict[tuple[str, str], float]:
    """``backend``'s largest error in ulps for every float operation it supports (non-zero ones only).

    ``backend`` is a started Backend; cooperative operations count as supported when its documentation
    hook says so (``Backend.documentation().supports_operation``). ``reference`` defaults to a new
    CpuBackend; ``only`` limits the operation keys measured. Raises what the launches raise (a backend
    that fails a launch it claims to support).
    """
    if reference is None:
        from .reference import CpuBackend
        reference = CpuBackend()
    doc = type(backend).documentation()
    supports_operation = doc.supports_operation if doc is not None else (lambda operation, ty: False)
    table: dict[tuple[str, str], float] = {}
    config = LaunchConfig.linear(LANES)
    for info in OPCODE_TABLE:
        if info.type_fields != ("ty",) or not (info.types & FLOATS) or info.name in _NOT_VALUE_OPS:
            continue
        if not all(o.kind in (OperandKind.REG,) for o in info.operands) or (only is not None and info.name not in only):
            continue
        for ty in _FLOAT_TYPES:
            if ty not in info.types or not backend.supports(info.name, ty):
                continue
            def program_for(handles, info=info, ty=ty):
                return _lane_program(info, ty, handles)
            arity = sum(1 for o in info.operands if o.access is Access.READ)
            worst = _max_error(backend, reference, program_for, ty, arity, config, seeds)
            if worst:
                table[(info.name, ty.name)] = worst
    for operation in (*MapOperation, *BinaryMapOperation):
        binary = isinstance(operation, BinaryMapOperation)
        for ty in _FLOAT_TYPES:
            if ty not in COOPERATIVE_OPERATION_TYPES[operation] or not supports_operation(operation, ty):
                continue
            if only is not None and operation_key(operation) not in only:
                continue
            def program_for(handles, operation=operation, ty=ty, binary=binary):
                b = ProgramBuilder()
                arrays = [Address.BufferOffset(h, 0) for h in handles]
                if binary:
                    b.add(ParallelMapBinary(dst_array=arrays[2], src_a=arrays[0], src_b=arrays[1], count=LANES,
                                            operation=operation, ty=ty))
                else:
                    b.add(ParallelMap(dst_array=arrays[1], src_array=arrays[0], count=LANES, operation=operation,
                                      ty=ty))
                return b.build()
            worst = _max_error(backend, reference, program_for, ty, 2 if binary else 1, LaunchConfig(), seeds)
            if worst:
                table[(operation_key(operation), ty.name)] = worst
    return table


#: typed float rows that are not value operations on registers (memory, comparisons, selection)
_NOT_VALUE_OPS = frozenset({"LDG", "STG", "LDS", "STS", "MOV", "MOV_IMM", "PoolLoad", "PoolStore", "SETcc", "SEL",
                            "ResAccum", "ReduceAdd", "ReduceMin", "ReduceMax", "ReduceMul"})


def render_table(table: dict[tuple[str, str], float], backend: str) -> str:
    """The text of ``<package>/ulp_table.py`` for ``table`` measured on ``backend`` (its registry name)."""
    lines = [f'"""Measured ulp errors of the {backend} backend against the reference (generated; do not edit by hand).',
             "",
             f"Written by ``python -m atlas_web.accuracy {backend} --write``: (operation key, type name) -> the largest",
             "error in units in the last place seen over its inputs. Operations absent here were measured bit-exact.",
             '"""', "", "MEASURED_ULPS: dict[tuple[str, str], float] = {"]
    for (op, ty), ulps in sorted(table.items()):
        value = "float('inf')" if math.isinf(ulps) else repr(ulps)
        lines.append(f"    ({op!r}, {ty!r}): {value},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def table_path(backend_class: type) -> Path:
    """Where ``--write`` stores the table of ``backend_class``: ``ulp_table.py`` in its top-level package."""
    package = importlib.import_module(backend_class.__module__.split(".")[0])
    return Path(package.__file__).with_name("ulp_table.py")


def main(argv: list[str] | None = None) -> int:
    """``<backend> [--write | --print]``: measure the named registered backend; write or print its table."""
    from .registry import get_backend
    args = sys.argv[1:] if argv is None else argv
    names = [a for a in args if not a.startswith("--")]
    if len(names) != 1:
        print("usage: python -m atlas_web.accuracy <backend> [--write | --print]", file=sys.stderr)
        return 2
    backend = get_backend(names[0])
    try:
        text = render_table(measure(backend), names[0])
    finally:
        backend.close()
    if "--write" in args:
        path = table_path(type(backend))
        path.write_text(text)
        print(f"wrote {path}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
