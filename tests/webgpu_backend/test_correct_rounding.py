"""DIV, RCP, SQRT and RSQRT on F32 are correctly rounded on webgpu whatever the device's ``/`` and ``sqrt`` do
(WGSL allows 2.5 ulp; an NVIDIA H200 under Vulkan was 1 ulp off): every result's bits equal NumPy's IEEE
result over random bit patterns, subnormal operands and results, and the special values (any NaN for a NaN)."""

from __future__ import annotations

import numpy as np
import pytest

from atlas_web import LaunchConfig, Program
from atlas_web.isa import Type

N = 65536

BINARY = """
    mov_imm.u32 r1, 4
    mul.u32 r2, r255, r1
    mov_imm.u32 r3, {a}
    mov_imm.u32 r4, {b}
    mov_imm.u32 r5, {out}
    ldg.f32 r6, [r3 + r2]
    ldg.f32 r7, [r4 + r2]
    {op}.f32 r8, r6, r7
    stg.f32 [r5 + r2], r8
"""

UNARY = """
    mov_imm.u32 r1, 4
    mul.u32 r2, r255, r1
    mov_imm.u32 r3, {a}
    mov_imm.u32 r5, {out}
    ldg.f32 r6, [r3 + r2]
    {op}.f32 r8, r6
    stg.f32 [r5 + r2], r8
"""

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, 3.0, 0.5,
                     np.finfo(np.float32).max, np.finfo(np.float32).tiny, np.float32(1e-45), np.float32(-1e-45),
                     np.float32(2.9e-39), np.float32(1.1754942e-38)], dtype=np.float32)


def _operands(seed: int) -> np.ndarray:
    """N f32 values: random bit patterns (a quarter subnormal, a quarter near 1), then the specials."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)
    bits[: N // 4] &= np.uint32(0x807fffff)                          # subnormals and zeros
    bits[N // 4: N // 2] = (bits[N // 4: N // 2] & np.uint32(0x80ffffff)) | np.uint32(0x3f000000)
    values = bits.view(np.float32)
    values[-len(SPECIALS):] = SPECIALS
    return values


def _launch(backend, text: str, inputs: list[np.ndarray]) -> np.ndarray:
    handles = [backend.allocate_typed(N, Type.F32) for _ in range(len(inputs) + 1)]
    try:
        for handle, values in zip(handles, inputs):
            backend.copy_to_buffer(handle, values.tobytes())
        names = {"a": int(handles[0]), "out": int(handles[-1])}
        if len(inputs) == 2:
            names["b"] = int(handles[1])
        backend.execute_program(Program.from_text(text.format(**names)), LaunchConfig(grid=(N // 256, 1, 1),
                                                                                     block=(256, 1, 1)))
        return np.frombuffer(bytes(backend.copy_from_buffer(handles[-1])), dtype=np.float32)[:N].copy()
    finally:
        for handle in handles:
            backend.free_buffer(handle)


def _assert_same_bits(got: np.ndarray, want: np.ndarray, *operands: np.ndarray) -> None:
    both_nan = np.isnan(got) & np.isnan(want)
    wrong = np.flatnonzero((got.view(np.uint32) != want.view(np.uint32)) & ~both_nan)
    if len(wrong):
        i = wrong[0]
        args = ", ".join(f"{float(o[i])!r} ({int(o.view(np.uint32)[i]):#010x})" for o in operands)
        raise AssertionError(f"{len(wrong)} results differ; first: f({args}) = {float(got[i])!r} "
                             f"({int(got.view(np.uint32)[i]):#010x}), IEEE {float(want[i])!r} "
                             f"({int(want.view(np.uint32)[i]):#010x})")


@pytest.mark.parametrize("op", ["div"])
def test_binary_division_is_correctly_rounded(webgpu, op):
    a, b = _operands(1), _operands(2)
    b = np.roll(b, 7)   # specials meet other values
    with np.errstate(all="ignore"):
        want = (a / b).astype(np.float32)
    _assert_same_bits(_launch(webgpu, BINARY.format(op=op, a="{a}", b="{b}", out="{out}"), [a, b]), want, a, b)


@pytest.mark.parametrize("op, exact", [
    ("sqrt", lambda x: np.sqrt(x)),
    ("rcp", lambda x: np.float32(1.0) / x),
    ("rsqrt", lambda x: np.float32(1.0) / np.sqrt(x)),
])
def test_unary_roots_and_reciprocals_are_correctly_rounded(webgpu, op, exact):
    a = _operands(3)
    with np.errstate(all="ignore"):
        want = exact(a).astype(np.float32)
    _assert_same_bits(_launch(webgpu, UNARY.format(op=op, a="{a}", out="{out}"), [a]), want, a)
