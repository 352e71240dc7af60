"""Helpers shared by the hand-written case generators (memory, control, traps, cooperative, Atlas):
per-lane pointers, typed input bytes and one test body that compares a backend with the reference."""

from __future__ import annotations

import pytest

from atlas_web import AtlasTrap, LaunchConfig, UnsupportedOperation
from atlas_web.isa import CVT, EXIT, MOV_IMM, MUL, OR, ADD, Register, Type
from atlas_web.program import ProgramBuilder

from .harness import Case, compare_with_reference, run_case
from .values import encode, float_values, int_values

__all__ = ["lane_pointer", "values_of", "bytes_of", "check_case", "launch_alone", "SCRATCH"]

#: registers the helpers write (cases keep their own values elsewhere)
SCRATCH = (Register(230), Register(231), Register(232), Register(233))


def lane_pointer(b, handle: int, stride: int, dst: Register, extra: int = 0) -> None:
    """dst:u64 = (handle << 32) | (GLOBAL_LANE_ID * stride + extra)."""
    t0, t1, t2, t3 = SCRATCH
    b.add(CVT(dst=t0, src=Register(255), src_ty=Type.U32, dst_ty=Type.U64))
    b.add(MOV_IMM(dst=t1, value=stride, ty=Type.U64))
    b.add(MUL(dst=t2, lhs=t0, rhs=t1, ty=Type.U64))
    if extra:
        b.add(MOV_IMM(dst=t1, value=extra, ty=Type.U64))
        b.add(ADD(dst=t2, lhs=t2, rhs=t1, ty=Type.U64))
    b.add(MOV_IMM(dst=t3, value=handle << 32, ty=Type.U64))
    b.add(OR(dst=dst, lhs=t2, rhs=t3, ty=Type.U64))


def launch_alone(backend, instruction) -> AtlasTrap | None:
    """Run ``instruction`` then EXIT on ``backend`` (one lane): the AtlasTrap it raised, or None."""
    builder = ProgramBuilder()
    builder.add(instruction)
    builder.add(EXIT())
    try:
        backend.execute_program(builder.build(), LaunchConfig())
    except AtlasTrap as caught:
        return caught
    return None


def values_of(ty: Type, n: int, seed: int) -> list:
    """``n`` deterministic values of ``ty`` (edge values included)."""
    return float_values(ty, n, seed) if ty.is_float() else int_values(ty, n, seed)


def bytes_of(ty: Type, n: int, seed: int) -> bytes:
    return encode(ty, values_of(ty, n, seed))


def check_case(reference, backend_name: str, backend, case: Case, runner=run_case, supported=None,
               tolerance_of=None) -> None:
    """The body of every conformance test: unsupported -> UnsupportedOperation, else the reference's result.

    ``supported(backend, case)`` replaces the check of ``case.needs``; ``tolerance_of(case, ulps)`` adjusts
    the backend's documented tolerance (for results the contract lets differ more, like float sums).
    """
    if not (supported(backend, case) if supported else all(backend.supports(n, t) for n, t in case.needs)):
        with pytest.raises(UnsupportedOperation):
            runner(backend, case)
        return
    tolerance = backend.ulp_tolerance(case.op, case.ty) if case.ty is not None and case.ty.is_float() else 0.0
    if tolerance_of is not None:
        tolerance = tolerance_of(case, tolerance)
    problems = compare_with_reference(reference, backend, case, tolerance, runner)
    assert not problems, f"{backend_name} {case}: " + "; ".join(problems)


def needs_of(build, buffers: int) -> tuple[tuple[str, Type | None], ...]:
    """The (instruction name, type) pairs of the program ``build`` makes (with handles 2, 3, ...)."""
    program = build([2 + k for k in range(buffers)])
    return tuple(sorted({(ins.INFO.name, ins.type) for ins in program.instructions},
                        key=lambda item: (item[0], item[1].code if item[1] else -1)))


def text_program(template: str):
    """A case program from text assembly: ``{h0}``, ``{h1}`` … are replaced by the buffer handles
    (and ``{p0}`` … by ``(handle << 32)`` pointers to the start of each buffer)."""
    from atlas_web import Program

    def build(handles):
        names = {f"h{k}": h for k, h in enumerate(handles)}
        names.update({f"p{k}": h << 32 for k, h in enumerate(handles)})
        return Program.from_text(template.format(**names))
    return build


__all__ += ["needs_of", "text_program"]
