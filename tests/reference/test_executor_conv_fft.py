"""The reference's Conv2D and FFT (rows of category "convolution"): Conv2D against a direct NumPy loop over the
output positions and taps (float64, rounded once) for every type, with stride, padding, dilation, groups and
bias; a padded zero times an infinite kernel element is NaN; FFT against a direct DFT sum and np.fft for F32 and
F64, forward and inverse (1/n), batches, in place; the array checks (before any write, lane -1) and the rows'
requirements refused by the verifier."""

from __future__ import annotations

import math

import numpy as np
import pytest

from atlas_web import ProgramError, TrapCode
from atlas_web.isa import FFT, MOV_IMM, Address, Conv2D, Register, Type
from atlas_web.reference import CpuBackend
from atlas_web.verify import verify

from .executor_helpers import decode, load_arrays, prog, run, trap_of, typed_bytes

CONV_TYPES = [Type.F16, Type.BF16, Type.F32, Type.F64]
FFT_TYPES = [Type.F32, Type.F64]
COVERS = [("Conv2D", ty) for ty in CONV_TYPES] + [("FFT", ty) for ty in FFT_TYPES]


def _rounded(ty: Type, values) -> list:
    return decode(ty, typed_bytes(ty, list(np.asarray(values, dtype=np.float64).ravel())))


def direct_conv2d(x, w, bias, stride, padding, dilation, groups):
    """The definition, written as loops over the output positions and the taps (float64)."""
    batch, cin, height, width = x.shape
    cout, cin_g, kh, kw = w.shape
    oh = (height + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (width + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((batch, cout, oh, ow))
    per_group = cout // groups
    for b in range(batch):
        for o in range(cout):
            g = o // per_group
            for i in range(oh):
                for j in range(ow):
                    total = 0.0
                    for c in range(cin_g):
                        for p in range(kh):
                            for q in range(kw):
                                r = i * stride[0] - padding[0] + p * dilation[0]
                                s = j * stride[1] - padding[1] + q * dilation[1]
                                if 0 <= r < height and 0 <= s < width:
                                    total += x[b, g * cin_g + c, r, s] * w[o, c, p, q]
                    out[b, o, i, j] = total + (0.0 if bias is None else bias[o])
    return out


CONV_SHAPES = [
    # batch, cin, cout, h, w, kh, kw, stride, padding, dilation, groups, bias
    (1, 1, 1, 1, 1, 1, 1, (1, 1), (0, 0), (1, 1), 1, False),
    (2, 3, 4, 7, 5, 3, 3, (1, 1), (1, 1), (1, 1), 1, True),
    (1, 2, 3, 9, 8, 2, 3, (2, 1), (0, 2), (2, 1), 1, True),
    (2, 4, 6, 5, 6, 3, 1, (1, 2), (1, 0), (1, 1), 2, False),
    (1, 3, 3, 6, 6, 3, 3, (2, 2), (1, 1), (1, 1), 3, True),
]


def _conv(ty, shape, rng, *, x=None, w=None):
    batch, cin, cout, h, wd, kh, kw, stride, padding, dilation, groups, has_bias = shape
    x = np.array(_rounded(ty, rng.uniform(-2, 2, batch * cin * h * wd))) if x is None else x
    w = np.array(_rounded(ty, rng.uniform(-2, 2, cout * cin // groups * kh * kw))) if w is None else w
    bias = np.array(_rounded(ty, rng.uniform(-2, 2, cout))) if has_bias else None
    want = direct_conv2d(x.reshape(batch, cin, h, wd), w.reshape(cout, cin // groups, kh, kw), bias, stride,
                         padding, dilation, groups)
    backend = CpuBackend()
    arrays = dict(input=x, kernel=w, output=[7.0] * want.size)
    if has_bias:
        arrays["bias"] = bias
    handles = load_arrays(backend, ty, arrays)
    addresses = {k: Address.BufferOffset(v) for k, v in handles.items()}
    instr = Conv2D(**addresses, batch=batch, in_channels=cin, out_channels=cout, height=h, width=wd, kernel_h=kh,
                   kernel_w=kw, stride_h=stride[0], stride_w=stride[1], padding_h=padding[0], padding_w=padding[1],
                   dilation_h=dilation[0], dilation_w=dilation[1], groups=groups, has_bias=has_bias, ty=ty)
    run(backend, prog(instr), 1)
    return decode(ty, backend.copy_from_buffer(handles["output"])), want


@pytest.mark.parametrize("ty", CONV_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("shape", CONV_SHAPES, ids=lambda s: "x".join(map(str, s[:7])))
def test_conv2d_matches_the_direct_loop_rounded_once(ty, shape):
    got, want = _conv(ty, shape, np.random.default_rng(3))
    expected = _rounded(ty, want)
    if ty is Type.F64:   # both binary64, summed in different orders
        assert np.allclose(got, expected, rtol=1e-13, atol=1e-13)
    else:
        assert got == expected


def test_conv2d_padding_zero_times_an_infinite_tap_is_nan():
    shape = (1, 1, 1, 3, 3, 3, 3, (1, 1), (1, 1), (1, 1), 1, False)
    w = np.zeros(9)
    w[0] = math.inf   # the top-left tap: it meets the padding at output row 0 and column 0
    got, _ = _conv(Type.F32, shape, None, x=np.ones(9), w=w)
    got = np.array(got).reshape(3, 3)
    assert np.isnan(got[0, :]).all() and np.isnan(got[:, 0]).all()
    assert (got[1:, 1:] == math.inf).all()


def test_conv2d_checks_every_array_before_writing():
    backend, ty = CpuBackend(), Type.F32
    handles = load_arrays(backend, ty, dict(input=[1.0] * 16, output=[0.0] * 4))
    short = int(backend.allocate_buffer(8 * 4))   # kernel needs 9
    instr = Conv2D(output=Address.BufferOffset(handles["output"]), input=Address.BufferOffset(handles["input"]),
                   kernel=Address.RegisterIndirect(Register(1), 0), batch=1, in_channels=1, out_channels=1,
                   height=4, width=4, kernel_h=3, kernel_w=3, stride_h=1, stride_w=1, padding_h=0, padding_w=0)
    program = prog(MOV_IMM(dst=Register(1), value=short << 32, ty=Type.U64), instr)
    assert trap_of(backend, program, 1) == (TrapCode.OUT_OF_BOUNDS, 1, -1)
    assert decode(ty, backend.copy_from_buffer(handles["output"])) == [0.0] * 4


@pytest.mark.parametrize("change, operand", [
    (dict(kernel_w=0), "kernel_h"), (dict(stride_h=0), "stride_h"), (dict(dilation_w=0), "dilation_h"),
    (dict(groups=2), "groups"), (dict(groups=0), "groups"), (dict(padding_h=0, height=2), "padding_h"),
])
def test_conv2d_requirements_are_refused_by_the_verifier(change, operand):
    a = Address.BufferOffset(2)
    fields = dict(output=a, input=a, kernel=a, batch=1, in_channels=3, out_channels=4, height=5, width=5,
                  kernel_h=3, kernel_w=3, stride_h=1, stride_w=1, padding_h=0, padding_w=0)
    verify(prog(Conv2D(**fields)))
    with pytest.raises(ProgramError, match=operand):
        verify(prog(Conv2D(**{**fields, **change})))


def _dft(z: np.ndarray, inverse: bool) -> np.ndarray:
    n = z.shape[-1]
    sign = 1.0 if inverse else -1.0
    jk = np.outer(np.arange(n), np.arange(n)) % n
    matrix = np.exp(sign * 2j * np.pi * jk / n)
    out = z @ matrix.T
    return out / n if inverse else out


def _fft(ty, n, batch, inverse, rng, in_place=False):
    x = np.array(_rounded(ty, rng.uniform(-1, 1, 2 * n * batch)))
    backend = CpuBackend()
    handles = load_arrays(backend, ty, dict(input=x, output=[7.0] * x.size))
    if in_place:
        handles["output"] = handles["input"]
    instr = FFT(output=Address.BufferOffset(handles["output"]), input=Address.BufferOffset(handles["input"]), n=n,
                inverse=inverse, batch=batch, ty=ty)
    run(backend, prog(instr), 1)
    z = x.reshape(batch, n, 2)
    return np.array(decode(ty, backend.copy_from_buffer(handles["output"]))), z[..., 0] + 1j * z[..., 1]


@pytest.mark.parametrize("ty", FFT_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("n, batch", [(1, 1), (2, 3), (8, 1), (64, 2), (3, 2), (12, 1), (97, 2)])
@pytest.mark.parametrize("inverse", [False, True])
def test_fft_matches_np_fft_rounded_once_and_the_dft(ty, n, batch, inverse):
    got, z = _fft(ty, n, batch, inverse, np.random.default_rng(n + batch))
    y = np.fft.ifft(z, axis=-1) if inverse else np.fft.fft(z, axis=-1)
    assert list(got) == _rounded(ty, np.stack([y.real, y.imag], -1))
    direct = _dft(z, inverse)
    scale = np.linalg.norm(direct) + 1e-300
    assert np.linalg.norm(got.reshape(batch, n, 2)[..., 0] + 1j * got.reshape(batch, n, 2)[..., 1] - direct) \
        <= 1e-5 * scale


def test_fft_in_place_and_inverse_undoes_forward():
    got, z = _fft(Type.F64, 16, 2, False, np.random.default_rng(1), in_place=True)
    y = np.fft.fft(z, axis=-1)
    assert np.allclose(got, np.stack([y.real, y.imag], -1).ravel(), rtol=0, atol=1e-12)
    back = np.fft.ifft(y, axis=-1)
    assert np.allclose(back, z, atol=1e-14)


def test_fft_of_an_infinity_is_non_finite_everywhere():
    backend, ty = CpuBackend(), Type.F32
    x = np.zeros(16)
    x[6] = math.inf   # the real part of element 3
    handles = load_arrays(backend, ty, dict(input=x, output=[0.0] * 16))
    run(backend, prog(FFT(output=Address.BufferOffset(handles["output"]),
                          input=Address.BufferOffset(handles["input"]), n=8, inverse=False)), 1)
    got = np.array(decode(ty, backend.copy_from_buffer(handles["output"]))).reshape(8, 2)
    assert (~np.isfinite(got)).any(axis=1).all()


def test_fft_takes_any_n_from_1_to_2_to_the_24():
    a = Address.BufferOffset(2)
    for n in (1, 3, 12, 1000, 1024, 1 << 24, (1 << 24) - 1):
        verify(prog(FFT(output=a, input=a, n=n, inverse=False)))
    with pytest.raises(ProgramError, match="n is 0"):
        verify(prog(FFT(output=a, input=a, n=0, inverse=True)))
    for n in ((1 << 24) + 1, 3 << 23):
        with pytest.raises(ProgramError, match="16,777,216"):
            verify(prog(FFT(output=a, input=a, n=n, inverse=True)))


def test_fft_checks_its_arrays_before_writing():
    backend, ty = CpuBackend(), Type.F32
    handles = load_arrays(backend, ty, dict(output=[0.0] * 16))
    short = int(backend.allocate_buffer(15 * 4))
    instr = FFT(output=Address.BufferOffset(handles["output"]), input=Address.RegisterIndirect(Register(1), 0), n=8,
                inverse=False)
    program = prog(MOV_IMM(dst=Register(1), value=short << 32, ty=Type.U64), instr)
    assert trap_of(backend, program, 1) == (TrapCode.OUT_OF_BOUNDS, 1, -1)
    assert decode(ty, backend.copy_from_buffer(handles["output"])) == [0.0] * 16
