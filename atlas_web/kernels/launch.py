"""Launching one kernel instruction (GEMM, RMSNorm, Softmax, RoPE, Attention, KVCacheUpdate) over parts
of arrays, and copying an array's elements into part of another: the in-place steps of the
``KernelBackend`` (atlas_web/kernels/backend.py).

An operand is ``(Array, element offset)``; its address is the pointer ``(handle << 32) | byte offset``
preset in a register (docs/semantics.md, Memory). Programs are cached by their text, so a warm call
builds nothing. Standard library only.
"""

from __future__ import annotations

from ..cache import ProgramCache
from ..errors import ArrayError
from ..isa.registers import Register
from ..isa.types import Type
from ..launch import ExecutionParams, LaunchConfig
from ..numpy.array import Array
from ..numpy.runtime import TRACES
from ..program import Program

__all__ = ["run_instruction", "copy_into"]

_programs = ProgramCache(capacity=256)

#: a per-lane copy of r4 elements of 4 bytes: element i of buffer r1 to element r3 + i of buffer r2
_COPY32 = """
set.ge.u32 p0, r255, r4
bra.p0 @done
mov_imm.u32 r11, 4
mul.u32 r12, r255, r11
add.u32 r13, r255, r3
mul.u32 r13, r13, r11
ldg.u32 r14, [r1 + r12]
stg.u32 [r2 + r13], r14
done:
exit
"""


def _eager(what: str) -> None:
    if TRACES:
        raise ArrayError(f"{what}: KernelBackend operations write arrays in place and run eagerly; "
                         "call them outside jit")


def _program(text: str) -> Program:
    return _programs.get_or_build(text, lambda: Program.from_text(text))


def run_instruction(what: str, text: str, operands: list[tuple[Array, int]]) -> None:
    """Run ``text`` (one instruction, ``{p0}``, ``{p1}``, ... where operand k's address goes) once on the
    first operand's device. Raises ArrayError under jit, UnsupportedOperation, AtlasTrap (nothing
    written: the instruction checks every array first) or ExecutionFailed from the launch."""
    _eager(what)
    device = operands[0][0].device
    names = {f"p{k}": f"r{k + 1} + 0" for k in range(len(operands))}
    program = _program(text.format(**names) + "\nexit")
    registers = {Register(k + 1): (Type.U64, (a.buffer.handle << 32) | (offset * a.itemsize))
                 for k, (a, offset) in enumerate(operands)}
    device.execute_program_with_params(program, ExecutionParams(LaunchConfig(), registers))


def copy_into(what: str, out: Array, offset: int, src: Array) -> None:
    """Copy ``src``'s elements (4-byte types) bit for bit into ``out`` from element ``offset`` on.
    Raises ArrayError where they do not fit or under jit."""
    _eager(what)
    if src.itemsize != 4 or out.itemsize != 4 or offset + src.size > out.size:
        raise ArrayError(f"{what}: cannot copy {src.describe()} into {out.describe()} at element {offset}")
    if not src.size:
        return
    registers = {Register(1): (Type.U32, src.buffer.handle), Register(2): (Type.U32, out.buffer.handle),
                 Register(3): (Type.U32, offset), Register(4): (Type.U32, src.size)}
    out.device.execute_program_with_params(_program(_COPY32), ExecutionParams(LaunchConfig.linear(src.size), registers))
