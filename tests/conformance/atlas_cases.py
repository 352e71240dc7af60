"""Cases for the Atlas instructions with lane state: ResAccum (the 96 per-launch sums), the phase
(PhaseAdv/PhaseWrite/PhaseGet, kept across barriers and stages), and the class lookups with class
operands of several integer types."""

from __future__ import annotations

import dataclasses
import struct

from atlas_web import LaunchConfig
from atlas_web.isa import Type

from .case_tools import needs_of, text_program
from .harness import Buffer, Case, run_case

__all__ = ["atlas_cases", "RESONANCE_CASES", "resonance_problems"]

CONFIG = LaunchConfig(grid=(3, 1, 1), block=(32, 1, 1))
LANES = 96

_POINTER = """
    cvt.u64.u32 r200, r255
    mov_imm.u64 r201, {stride}
    mul.u64 r202, r200, r201
    mov_imm.u64 r203, {{p{buffer}}}
    or.u64 {dst}, r202, r203
"""

RES_ACCUM = _POINTER.format(stride=4, buffer=0, dst="r5") + """
    ldg.f32 r6, [r5 + 0]
    mov_imm.u32 r7, 7
    mul.u32 r8, r255, r7
    mov_imm.u32 r9, 96
    rem.u32 r10, r8, r9
    res.accum.f32 r10, r6
"""

#: the F64 accumulation on its own: a backend without F64 (webgpu) raises UnsupportedOperation
#: here and still runs ResAccum on the other types
RES_ACCUM_F64 = _POINTER.format(stride=4, buffer=0, dst="r5") + """
    ldg.f32 r6, [r5 + 0]
    cvt.f64.f32 r11, r6
    mul.f64 r12, r11, r11
    cvt.u8.u32 r13, r255
    res.accum.f64 r13, r12
"""

#: lanes 4k .. 4k+3 add into class k (values 2^60, 1, -2^60, 1: the order of the additions decides
#: the binary64 sum, 1 or 2; the contract allows either)
RES_ACCUM_CANCELLING = _POINTER.format(stride=4, buffer=0, dst="r5") + """
    ldg.f32 r6, [r5 + 0]
    mov_imm.u32 r7, 4
    div.u32 r10, r255, r7
    res.accum.f32 r10, r6
"""

PHASE = _POINTER.format(stride=16, buffer=0, dst="r5") + """
    phase.adv 5
    phase.get r1
    stg.u32 [r5 + 0], r1
    phase.write r255
    phase.adv 1000
    bar.sync 0
    phase.get r2
    stg.u32 [r5 + 4], r2
    mov_imm.i16 r3, -1
    phase.write r3
    preduce.sum.u32 r4, [buf{h1} + 0], 4
    phase.adv 4294967295
    phase.get r6
    stg.u32 [r5 + 8], r6
    stg.u32 [r5 + 12], r4
"""

CLASS_TYPES = _POINTER.format(stride=8, buffer=0, dst="r5") + """
    cvt.i8.u32 r1, r255
    mirror r2, r1
    stg.u8 [r5 + 0], r2
    cvt.u16.u32 r3, r255
    nbr.count r4, r3
    stg.u32 [r5 + 4], r4
    cvt.i64.u32 r6, r255
    mov_imm.u64 r7, 5
    nbr.get r8, r6, r7
    stg.u8 [r5 + 1], r8
    mov_imm.i32 r9, -200
    add.i32 r10, r9, r255
    cls.get r11, r10
    stg.u8 [r5 + 2], r11
    unity.test p1, r6
    mov_imm.u8 r12, 1
    mov_imm.u8 r13, 0
    sel.u8 r14, p1, r12, r13
    stg.u8 [r5 + 3], r14
"""


def atlas_cases() -> list[Case]:
    floats = struct.pack(f"<{LANES}f", *[(i * 37 % 101) / 7.0 - 3.5 for i in range(LANES)])
    specs = [
        ("res_accum", RES_ACCUM, (Buffer(Type.F32, floats),)),
        ("res_accum_f64", RES_ACCUM_F64, (Buffer(Type.F32, floats),)),
        ("res_accum_cancelling", RES_ACCUM_CANCELLING,
         (Buffer(Type.F32, struct.pack(f"<{LANES}f", *[2.0 ** 60, 1.0, -2.0 ** 60, 1.0] * (LANES // 4))),)),
        ("phase", PHASE, (Buffer(Type.U8, bytes(16 * LANES), output=True), Buffer(Type.U8, bytes(16)))),
        ("class_operand_types", CLASS_TYPES, (Buffer(Type.U8, bytes(8 * LANES), output=True),)),
    ]
    out = []
    for name, text, buffers in specs:
        build = text_program(text)
        out.append(Case(f"atlas.{name}", "atlas", None, buffers, build, CONFIG, needs_of(build, len(buffers))))
    return out


#: the cases whose resonance sums are compared
RESONANCE_CASES = frozenset({"atlas.res_accum", "atlas.res_accum_f64", "atlas.res_accum_cancelling"})


def _magnitudes(case: Case) -> Case:
    """``case`` with the magnitudes of its f32 input values (its sums are then the sums of |x|)."""
    values = struct.unpack(f"<{len(case.buffers[0].data) // 4}f", case.buffers[0].data)
    data = struct.pack(f"<{len(values)}f", *map(abs, values))
    return dataclasses.replace(case, buffers=(dataclasses.replace(case.buffers[0], data=data), *case.buffers[1:]))


def resonance_problems(case: Case, want: list[float], got: list[float]) -> list[str]:
    """The classes whose sums break the contract (docs/semantics.md): each sum of n values lies within
    n * 2^-52 * sum(|x|) of their exact sum, in any order, so the reference's ``want`` and a backend's
    ``got`` differ by at most twice that (n: at most one ResAccum per lane; the sums of |x| from the
    reference on the magnitudes)."""
    from atlas_web.reference import CpuBackend
    magnitudes = run_case(CpuBackend(), _magnitudes(case)).resonance
    bound = 2 * case.config.total_threads * 2.0 ** -52
    return [f"resonance class {k}: reference {w}, backend {g}"
            for k, (w, g, m) in enumerate(zip(want, got, magnitudes)) if not abs(w - g) <= bound * m]
