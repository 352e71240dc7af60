"""Launching one kernel instruction (GEMM, RMSNorm, Softmax, RoPE, Attention) over parts of arrays, and
copying rows of an array's elements into part of another (one per-lane program whose offsets and strides
are launch registers): the in-place steps of the ``KernelBackend`` (atlas_web/kernels/backend.py).

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

__all__ = ["run_instruction", "copy_into", "copy_rows"]

_programs = ProgramCache(capacity=256)

#: a per-lane copy of rows of 4-byte elements, every number a launch register (one program serves every
#: position of a decoding loop): lane g < r8 copies element g % r5 of row g / r5 from element
#: r3 + row * r6 of buffer r1 to element r4 + row * r7 of buffer r2
_ROWS32 = """
set.ge.u32 p0, r255, r8
bra.p0 @done
div.u32 r10, r255, r5
rem.u32 r11, r255, r5
mul.u32 r12, r10, r6
add.u32 r12, r12, r3
add.u32 r12, r12, r11
mul.u32 r13, r10, r7
add.u32 r13, r13, r4
add.u32 r13, r13, r11
mov_imm.u32 r14, 4
mul.u32 r12, r12, r14
mul.u32 r13, r13, r14
ldg.u32 r15, [r1 + r12]
stg.u32 [r2 + r13], r15
done:
exit
"""


def _eager(what: str) -> None:
    if TRACES:
        raise ArrayError(f"{what}: KernelBackend operations write arrays in place and run eagerly; "
                         "call them outside jit")


#: one launch of one lane: a kernel instruction runs once per launch
_ONCE = LaunchConfig()


class _Compiled:
    """A program and the launch parameters made for its recent operand pointers (a decoding loop launches
    with the same buffers again: the parameters are not checked again)."""

    __slots__ = ("program", "params")

    def __init__(self, program: Program) -> None:
        self.program = program
        self.params: dict[tuple, ExecutionParams] = {}

    def params_for(self, values: tuple[int, ...], config: LaunchConfig, ty: Type) -> ExecutionParams:
        params = self.params.get(values)
        if params is None:
            if len(self.params) >= 16:
                self.params.pop(next(iter(self.params)))
            registers = {Register(k + 1): (ty, v) for k, v in enumerate(values)}
            params = self.params[values] = ExecutionParams(config, registers)
        return params


def _compiled(text: str) -> _Compiled:
    return _programs.get_or_build(text, lambda: _Compiled(Program.from_text(text)))


def run_instruction(what: str, text: str, operands: list[tuple[Array, int]]) -> None:
    """Run ``text`` (one instruction, ``{p0}``, ``{p1}``, ... where operand k's address goes) once on the
    first operand's device. Raises ArrayError under jit, UnsupportedOperation, AtlasTrap (nothing
    written: the instruction checks every array first) or ExecutionFailed from the launch."""
    _eager(what)
    device = operands[0][0].device
    names = {f"p{k}": f"r{k + 1} + 0" for k in range(len(operands))}
    compiled = _compiled(text.format(**names) + "\nexit")
    pointers = tuple((a.buffer.handle << 32) | (offset * a.itemsize) for a, offset in operands)
    device.execute_program_with_params(compiled.program, compiled.params_for(pointers, _ONCE, Type.U64))


def copy_into(what: str, out: Array, offset: int, src: Array) -> None:
    """Copy ``src``'s elements (4-byte types) bit for bit into ``out`` from element ``offset`` on (one row of
    ``copy_rows``). Raises ArrayError where they do not fit or under jit."""
    _eager(what)
    if src.itemsize != 4 or out.itemsize != 4 or offset + src.size > out.size:
        raise ArrayError(f"{what}: cannot copy {src.describe()} into {out.describe()} at element {offset}")
    copy_rows(what, out, offset, 0, src, 0, 0, 1, src.size)


def copy_rows(what: str, out: Array, out_offset: int, out_stride: int, src: Array, src_offset: int,
              src_stride: int, rows: int, length: int) -> None:
    """Copy ``rows`` rows of ``length`` elements (4-byte types) bit for bit: row r of ``src`` from element
    ``src_offset + r * src_stride`` to ``out`` from element ``out_offset + r * out_stride``. Every offset and
    stride is a launch register, so the program is compiled once for all of them (a decoding loop's
    positions). Raises ArrayError where a row falls outside an array or under jit."""
    _eager(what)
    if not (rows and length):
        return
    last = rows - 1
    if (src.itemsize != 4 or out.itemsize != 4 or min(out_offset, src_offset, out_stride, src_stride) < 0
            or out_offset + last * out_stride + length > out.size
            or src_offset + last * src_stride + length > src.size):
        raise ArrayError(f"{what}: cannot copy {rows} rows of {length} from {src.describe()} (element "
                         f"{src_offset}, stride {src_stride}) into {out.describe()} (element {out_offset}, "
                         f"stride {out_stride})")
    compiled = _compiled(_ROWS32)
    total = rows * length
    params = compiled.params_for((src.buffer.handle, out.buffer.handle, src_offset, out_offset, length,
                                  src_stride, out_stride, total), LaunchConfig.linear(total), Type.U32)
    out.device.execute_program_with_params(compiled.program, params)
