"""Measure the wasm backend's float error against the reference and write ``wasm_backend/ulp_table.py``.

``python -m wasm_backend.measure_ulp`` runs every float per-lane instruction and every float
cooperative map operation on WasmBackend and on the reference (CpuBackend) over the same inputs
(edge values, several random distributions and random bit patterns of the type), and records, per
(operation, type), the largest distance in ulps of the type (NaN equals NaN, an infinity only
itself). Only non-zero maxima are written; the table is what ``WasmBackend.ulp_tolerance`` and
docs/backends.md report. Needs NumPy; takes a minute or two.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import (
    CVT, INSTRUCTION_CLASSES, LDG, MOV_IMM, MUL, OPCODE_TABLE, OR, STG, BinaryMapOperation, MapOperation, ParallelMap,
    ParallelMapBinary, Register, Type,
)
from atlas_web.isa.floats import bits_to_float, float_to_bits, round_float, ulp_distance
from atlas_web.isa.opcodes import COOPERATIVE_OPERATION_TYPES, FLOATS, Access, OperandKind

from .tolerances import operation_key

__all__ = ["measure", "render_table", "main", "float_inputs", "ulp_distance"]

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


def _max_error(wasm, reference, program_for, ty: Type, arity: int, config, seeds: range) -> float:
    worst = 0.0
    for seed in seeds:
        inputs = [float_inputs(ty, LANES, seed * 7 + k) for k in range(arity)]
        want = _run(reference, program_for, ty, inputs, config)
        got = _run(wasm, program_for, ty, inputs, config)
        worst = max([worst] + [ulp_distance(w, g, ty) for w, g in zip(want, got)])
    return worst


def measure(seeds: range = range(3)) -> dict[tuple[str, str], float]:
    """Every float operation's largest error in ulps (non-zero ones only)."""
    from atlas_web.reference import CpuBackend

    from .backend import WasmBackend
    wasm, reference = WasmBackend(), CpuBackend()
    table: dict[tuple[str, str], float] = {}
    config = LaunchConfig.linear(LANES)
    for info in OPCODE_TABLE:
        if info.type_fields != ("ty",) or not (info.types & FLOATS) or info.name in _NOT_VALUE_OPS:
            continue
        if not all(o.kind in (OperandKind.REG,) for o in info.operands):
            continue
        for ty in _FLOAT_TYPES:
            if ty not in info.types or not wasm.supports(info.name, ty):
                continue
            def program_for(handles, info=info, ty=ty):
                return _lane_program(info, ty, handles)
            arity = sum(1 for o in info.operands if o.access is Access.READ)
            worst = _max_error(wasm, reference, program_for, ty, arity, config, seeds)
            if worst:
                table[(info.name, ty.name)] = worst
    for operation in (*MapOperation, *BinaryMapOperation):
        binary = isinstance(operation, BinaryMapOperation)
        for ty in _FLOAT_TYPES:
            if ty not in COOPERATIVE_OPERATION_TYPES[operation] or not wasm.supports_operation(operation, ty):
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
            worst = _max_error(wasm, reference, program_for, ty, 2 if binary else 1, LaunchConfig(), seeds)
            if worst:
                table[(operation_key(operation), ty.name)] = worst
    return table


#: typed float rows that are not value operations on registers (memory, comparisons, selection)
_NOT_VALUE_OPS = frozenset({"LDG", "STG", "LDS", "STS", "MOV", "MOV_IMM", "PoolLoad", "PoolStore", "SETcc", "SEL",
                            "ResAccum", "ReduceAdd", "ReduceMin", "ReduceMax", "ReduceMul"})


def render_table(table: dict[tuple[str, str], float]) -> str:
    """The text of ulp_table.py for ``table``."""
    lines = ['"""Measured ulp errors of the wasm backend against the reference (generated; do not edit by hand).',
             "",
             "Written by ``python -m wasm_backend.measure_ulp``: (operation key, type name) -> the largest error in",
             "units in the last place seen over its inputs. Operations absent here were measured bit-exact.",
             '"""', "", "MEASURED_ULPS: dict[tuple[str, str], float] = {"]
    for (op, ty), ulps in sorted(table.items()):
        value = "float('inf')" if math.isinf(ulps) else repr(ulps)
        lines.append(f"    ({op!r}, {ty!r}): {value},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure and write the table next to this module (``--print`` only prints it)."""
    args = sys.argv[1:] if argv is None else argv
    text = render_table(measure())
    if "--print" in args:
        print(text, end="")
    else:
        Path(__file__).with_name("ulp_table.py").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

