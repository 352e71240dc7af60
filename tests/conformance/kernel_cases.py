"""Cases for the kernel instructions (rows of category "kernel"), generated from each row: its types, its
shape (UINT) operands at odd sizes, one buffer per array operand sized from the operand's extent, the
addresses held in lane 0's registers; launches of one lane and of many lanes where lane 0 and others exit
before the step; traps (an unknown handle, a buffer one element short, a misaligned start) at each array
operand in turn. The expected outputs come from NumPy, written per kernel in ``NUMPY`` (not from the
reference), and are compared with each backend's and the reference's.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Callable

import numpy as np

from atlas_web import LaunchConfig, ProgramBuilder
from atlas_web.isa import BRA, EXIT, MOV_IMM, OPCODE_TABLE, REM, Condition, Predicate, Register, SETcc, Type
from atlas_web.isa.addresses import Address
from atlas_web.isa.extents import array_operands
from atlas_web.isa.instructions import INSTRUCTION_CLASSES
from atlas_web.isa.opcodes import OperandKind

from .values import decode, encode

__all__ = ["KERNEL_ROWS", "NUMPY", "KernelCase", "kernel_cases", "trap_cases", "run_kernel", "numpy_of"]

#: every kernel row of the opcode table
KERNEL_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "kernel")
SIZES = ((1, 1), (3, 1), (17, 3), (37, 5), (5, 0))
ONE_LANE = LaunchConfig()
MANY = LaunchConfig(grid=(3, 1, 1), block=(5, 1, 1))
FIRST_ADDRESS_REGISTER = 10


def _f32(ty: Type, values: np.ndarray) -> np.ndarray:
    return values.astype(np.float64 if ty is Type.F64 else np.float32)


def _round(ty: Type, values: np.ndarray) -> list[float]:
    """``values`` (f32 or f64) rounded once to ``ty`` (bf16: to nearest even on the f32 bits)."""
    if ty is Type.BF16:
        bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        nan = np.isnan(values)
        out = rounded.astype(np.uint32).view(np.float32).astype(np.float64)
        out[nan] = np.nan
        return list(out)
    target = {Type.F16: np.float16, Type.F32: np.float32, Type.F64: np.float64}[ty]
    return list(values.astype(target).astype(np.float64))


def _layer_scale(ty: Type, fields: dict, arrays: dict) -> dict:
    x = _f32(ty, np.array(arrays["input"], dtype=np.float64)).reshape(fields["rows"], fields["n"])
    s = _f32(ty, np.array(arrays["scale"], dtype=np.float64))
    return {"output": _round(ty, (x * s).reshape(-1))}


#: kernel name -> numpy(ty, shape fields, {array name: input values}) -> {written array: values}
NUMPY: dict[str, Callable] = {"LayerScale": _layer_scale}


@dataclass(frozen=True)
class KernelCase:
    name: str
    info: object
    ty: Type
    fields: dict
    config: LaunchConfig
    exit_lane_zero: bool = False
    #: (array operand name, "handle" | "short" | "misaligned") to make it trap, or None
    fault: tuple[str, str] | None = None

    def __str__(self) -> str:
        return self.name

    def instruction(self):
        """The kernel instruction, its array k's address in register FIRST_ADDRESS_REGISTER + k."""
        cls = INSTRUCTION_CLASSES[self.info.name]
        addresses = {op.name: Address.RegisterIndirect(Register(FIRST_ADDRESS_REGISTER + k), 0)
                     for k, op in enumerate(self.info.address_operands)}
        return cls(**addresses, **self.fields, ty=self.ty)


def _shape_fields(info, size: tuple[int, int]) -> dict:
    names = [op.name for op in info.operands if op.kind is OperandKind.UINT]
    return {name: size[min(k, len(size) - 1)] for k, name in enumerate(names)}


def kernel_cases() -> list[KernelCase]:
    out = []
    for info in KERNEL_ROWS:
        for ty in sorted(info.types, key=lambda t: t.code):
            for size in SIZES:
                fields = _shape_fields(info, size)
                tag = "x".join(str(v) for v in fields.values())
                out.append(KernelCase(f"{info.name}.{ty.name}.{tag}", info, ty, fields, ONE_LANE))
            fields = _shape_fields(info, SIZES[3])
            out.append(KernelCase(f"{info.name}.{ty.name}.many_lanes_lane0_exited", info, ty, fields, MANY, True))
    return out


def trap_cases() -> list[KernelCase]:
    out = []
    for info in KERNEL_ROWS:
        ty = min(info.types, key=lambda t: t.code)
        fields = _shape_fields(info, SIZES[2])
        for op, fault in itertools.product(info.address_operands, ("handle", "short", "misaligned")):
            out.append(KernelCase(f"{info.name}.{ty.name}.{op.name}_{fault}", info, ty, fields, MANY, True,
                                  (op.name, fault)))
    return out


def numpy_of(case: KernelCase, inputs: dict) -> dict:
    return NUMPY[case.info.name](case.ty, case.fields, inputs)


def run_kernel(backend, case: KernelCase, seed: int = 7):
    """Run ``case`` on ``backend``: (inputs by array name, outputs by written array name, trap or None)."""
    from atlas_web import AtlasTrap
    instr = case.instruction()
    rng = random.Random(seed)
    handles, inputs = {}, {}
    for array in array_operands(instr):
        values = [rng.uniform(-4, 4) for _ in range(array.elements)]
        inputs[array.name] = decode(array.ty, encode(array.ty, values))
        data = encode(array.ty, inputs[array.name])
        if case.fault == (array.name, "short"):
            data = data[:max(0, len(data) - array.ty.size_bytes())]
        handle = backend.allocate_buffer(max(len(data), 1))
        backend.copy_to_buffer(handle, data)
        handles[array.name] = int(handle)
    b = ProgramBuilder()
    for k, op in enumerate(case.info.address_operands):
        handle = 999 if case.fault == (op.name, "handle") else handles[op.name]
        offset = 1 if case.fault == (op.name, "misaligned") else 0
        b.add(MOV_IMM(dst=Register(FIRST_ADDRESS_REGISTER + k), value=(handle << 32) | offset, ty=Type.U64))
    if case.exit_lane_zero:
        # lane 0 (whose registers the step reads) and every third lane end before the step
        b.add(MOV_IMM(dst=Register(1), value=3, ty=Type.U32))
        b.add(MOV_IMM(dst=Register(2), value=0, ty=Type.U32))
        b.add(REM(dst=Register(3), lhs=Register(255), rhs=Register(1), ty=Type.U32))
        b.add(SETcc(pred=Predicate(1), lhs=Register(3), rhs=Register(2), cond=Condition.NE, ty=Type.U32))
        go = b.new_label("go")
        b.add(BRA(target=go, pred=Predicate(1)))
        b.add(EXIT())
        b.bind(go)
    b.add(instr)
    trap = None
    try:
        backend.execute_program(b.build(), case.config)
    except AtlasTrap as caught:
        trap = caught
    outputs = {}
    for array in array_operands(instr):
        if array.access.name != "READ":
            raw = bytes(backend.copy_from_buffer(handles[array.name]))[:array.elements * array.ty.size_bytes()]
            outputs[array.name] = decode(array.ty, raw)
    for handle in handles.values():
        backend.free_buffer(handle)
    return inputs, outputs, trap
