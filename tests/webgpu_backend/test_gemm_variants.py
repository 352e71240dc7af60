"""The WGSL kernels of MixedPrecisionGEMM and QuantizedGEMM on what the conformance suite's cases do not reach:
f16 subnormals and infinities and bf16 values unpacked from either half of a word at an odd element offset;
QuantizedGEMM sums past 2**24 whose conversion to f32 is a tie (rounded to even, as the reference), the
requantization's ties, saturation and NaN (c_scale 0), an I8 C at an odd byte offset with row padding whose
neighbouring bytes keep their values (bytes written with atomics). Each against the reference, bit for bit where
the result is exact; and the host's f32 scale rounding against NumPy's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import Address, LaunchConfig, ProgramBuilder
from atlas_web.isa import EXIT, Type
from atlas_web.isa.instructions import MixedPrecisionGEMM, QuantizedGEMM
from atlas_web.reference import CpuBackend
from webgpu_backend.wgsl.kernels.gemm import quantized_scale


def _run(backend, cls, arrays: dict, **fields) -> bytes:
    """C's bytes after one instruction over buffers holding ``arrays`` (name -> (bytes, byte offset))."""
    handles = {}
    for name, (data, offset) in arrays.items():
        handles[name] = int(backend.allocate_buffer(offset + len(data)))
        backend.copy_to_buffer(handles[name], b"\x5a" * offset + data)
    instr = cls(**{name: Address.BufferOffset(handles[name], arrays[name][1]) for name in arrays}, **fields)
    backend.execute_program(ProgramBuilder().add(instr).add(EXIT()).build(), LaunchConfig())
    out = bytes(backend.copy_from_buffer(handles["c"]))
    for handle in handles.values():
        backend.free_buffer(handle)
    return out


@pytest.mark.parametrize("ty", [Type.F16, Type.BF16])
def test_mixed_precision_halves_from_either_half_of_a_word(webgpu, ty):
    rng = np.random.default_rng(2)
    m, n, k = 5, 67, 19
    if ty is Type.F16:
        a = rng.uniform(-2, 2, m * k).astype("<f2")
        a[3], a[8] = np.float16(6e-8), np.float16(-3e-6)          # subnormal f16
        b = rng.uniform(-2, 2, k * n).astype("<f2")
        b[4] = np.inf
        a_bytes, b_bytes = a.tobytes(), b.tobytes()
    else:
        a32 = rng.uniform(-2, 2, m * k).astype("<f4")
        b32 = rng.uniform(-2, 2, k * n).astype("<f4")
        a_bytes = (a32.view("<u4") >> 16).astype("<u2").tobytes()
        b_bytes = (b32.view("<u4") >> 16).astype("<u2").tobytes()
    c = rng.uniform(-1, 1, m * n).astype("<f4").tobytes()
    arrays = {"c": (c, 4), "a": (a_bytes, 2), "b": (b_bytes, 6)}    # A and B start in a word's high half
    fields = dict(m=m, n=n, k=k, alpha=0.5, beta=-1.0, ty=ty)
    got = np.frombuffer(_run(webgpu, MixedPrecisionGEMM, arrays, **fields)[4:], "<f4")
    want = np.frombuffer(_run(CpuBackend(), MixedPrecisionGEMM, arrays, **fields)[4:], "<f4")
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~finite & ~np.isnan(want)],
                                                                             want[~finite & ~np.isnan(want)])
    assert np.allclose(got[finite], want[finite], rtol=0, atol=(k + 3) * 2.0 ** -24 * 4 * k)


def _i8(values) -> bytes:
    return np.asarray(values, dtype=np.int8).tobytes()


@pytest.mark.parametrize("ty, scales", [
    (Type.F32, dict(a_scale=1.0, b_scale=1.0, c_scale=1.0)),
    (Type.I8, dict(a_scale=0.5, b_scale=0.25, c_scale=1.0)),       # ties of the rounding: x.5 exactly
    (Type.I8, dict(a_scale=1.0, b_scale=1.0, c_scale=0.0)),        # inf saturates, 0 * inf = NaN gives 0
])
def test_quantized_gemm_matches_the_reference_bit_for_bit(webgpu, ty, scales):
    rng = np.random.default_rng(4)
    m, n, k = 3, 7, 1040          # past 2**24 and ties: 16 columns of A = -128 against B = -128 sum to 2**24-ish
    a = rng.integers(-128, 128, (m, k))
    b = rng.integers(-128, 128, (k, n))
    a[0, :] = -128
    b[:, 0] = -128                 # C[0, 0] = 1040 * 16384 = 17039360: past 2**24
    b[:, 1] = np.where(np.arange(k) < 1, 1, -128)
    a[1, :] = 0                    # a zero row: 0 * inf is NaN when c_scale is 0
    ldc = n + 2
    c_size = 1 if ty is Type.I8 else 4
    c = np.full((m - 1) * ldc + n, 0x33, np.uint8 if c_size == 1 else np.uint32).tobytes()
    arrays = {"c": (c, 3 if c_size == 1 else 4), "a": (_i8(a.reshape(-1)), 1), "b": (_i8(b.reshape(-1)), 2)}
    fields = dict(m=m, n=n, k=k, ldc=ldc, ty=ty, **scales)
    got = _run(webgpu, QuantizedGEMM, arrays, **fields)
    want = _run(CpuBackend(), QuantizedGEMM, arrays, **fields)
    assert got == want


def test_an_f32_sum_conversion_tie_rounds_to_even(webgpu):
    """acc = 2**24 + 1 and 2**24 + 3 (ties of the conversion to f32) give 2**24 and 2**24 + 4."""
    for extra, want in ((1, 2.0 ** 24), (3, 2.0 ** 24 + 4)):
        q, r = divmod(2 ** 24 + extra, 127 * 127)
        s, t = divmod(r, 127)
        a = np.array([127] * (q + s) + [t], np.int8)
        b = np.array([127] * q + [1] * (s + 1), np.int8)
        assert int(a.astype(np.int64) @ b.astype(np.int64)) == 2 ** 24 + extra
        arrays = {"c": (b"\0" * 4, 0), "a": (a.tobytes(), 0), "b": (b.tobytes(), 0)}
        got = _run(webgpu, QuantizedGEMM, arrays, m=1, n=1, k=len(a), ty=Type.F32, a_scale=1.0, b_scale=1.0,
                   c_scale=1.0)
        assert np.frombuffer(got, "<f4")[0] == want


@pytest.mark.parametrize("scales", [(0.02, 0.03, 0.05), (1e30, 1e30, 1.0), (3.0, 7.0, 0.0), (0.0, 1.0, 0.0),
                                    (-1.0, 3.0, 1e-45)])
def test_the_host_scale_is_rounded_as_numpy_rounds_it(scales):
    a_scale, b_scale, c_scale = scales
    instr = QuantizedGEMM(c=Address.BufferOffset(1), a=Address.BufferOffset(2), b=Address.BufferOffset(3),
                          a_scale=a_scale, b_scale=b_scale, c_scale=c_scale, m=1, n=1, k=1, ty=Type.I8)
    with np.errstate(all="ignore"):
        want = np.float32(a_scale) * np.float32(b_scale) / np.float32(c_scale)
    got = quantized_scale(instr)
    assert (math.isnan(got) and np.isnan(want)) or np.float32(got) == want
