"""Cases for Conv2D and FFT (rows of category "convolution"), generated from each row: its types, its shape
operands (Conv2D: one pixel, odd sizes, strides, padding past the kernel, dilation, groups up to depthwise, bias
or none, a size past the kernels' tiles, an empty batch; FFT: n from 1 past the vector widths to 1024, batches,
forward and inverse, an empty batch, n not a power of two: primes up to 1009 and composites), one buffer per array
operand sized from its extent, the addresses in lane 0's registers, fills "random", "specials" (NaN and
infinities), "huge" (products near the type's top, sums still finite) and "tiny" (products below the smallest
normal: the bound's eta terms); traps (each array one element short) against the reference.

The expected outputs come from NumPy written here (``NUMPY``: Conv2D a direct loop over the kernel's taps in
float64 on the zero-padded input; FFT ``np.fft``), not from the reference, and a backend's output is compared with
the contract's bound (docs/semantics.md, Convolution and FFT kernels): Conv2D per element, NaN exactly where
NumPy has NaN, the same infinity, otherwise ``|got - want| <= 2 * bound + ulp``; FFT per item, normwise
``||got - want|| <= 2 * bound`` (every element non-finite in some component where NumPy's item is not finite).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from atlas_web.isa import OPCODE_TABLE, Type
from atlas_web.isa.extents import conv_out

from .matrix_cases import MatrixCase, decode_array, encode_array, run_with_arrays
from .norm_cases import ulp_of, unit_roundoff

__all__ = ["CONV_ROWS", "ConvCase", "conv_cases", "conv_fields", "trap_cases", "run_case", "compare", "conv2d_numpy"]

#: every row of category "convolution"
CONV_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "convolution")
_PAIRS = ("stride", "padding", "dilation")


def conv_fields(batch, cin, cout, h, w, kh, kw, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, bias=False):
    fields = dict(batch=batch, in_channels=cin, out_channels=cout, height=h, width=w, kernel_h=kh, kernel_w=kw,
                  groups=groups, has_bias=bias)
    for name, pair in zip(_PAIRS, (stride, padding, dilation)):
        fields[f"{name}_h"], fields[f"{name}_w"] = pair
    return fields


CONV_SHAPES = (
    conv_fields(1, 1, 1, 1, 1, 1, 1),
    conv_fields(2, 3, 5, 7, 6, 3, 3, padding=(1, 1), bias=True),
    conv_fields(1, 2, 3, 9, 11, 2, 3, stride=(2, 1), padding=(0, 2), dilation=(2, 1), bias=True),
    conv_fields(1, 3, 2, 4, 5, 2, 2, padding=(3, 2)),                       # positions reading only padding
    conv_fields(2, 4, 6, 5, 7, 3, 1, stride=(1, 2), padding=(1, 0), groups=2),
    conv_fields(1, 6, 6, 8, 9, 3, 3, stride=(2, 2), padding=(1, 1), groups=6, bias=True),   # depthwise
    conv_fields(1, 8, 16, 12, 13, 3, 3, padding=(1, 1), bias=True),          # past the kernels' tiles
    conv_fields(1, 5, 7, 10, 10, 1, 1, stride=(2, 3)),
    conv_fields(0, 2, 2, 3, 3, 3, 3, padding=(1, 1)),                        # an empty batch
)
FFT_SHAPES = tuple(dict(n=n, batch=batch, inverse=inverse) for n, batch, inverse in (
    (1, 1, False), (2, 2, False), (4, 1, True), (8, 3, False), (16, 3, True), (64, 1, False), (128, 2, True),
    (1024, 1, False), (1024, 2, True), (8, 0, False),
    # n not a power of two (Bluestein's algorithm): primes, a composite, one past 1024 (a padded length of 2048)
    (3, 1, False), (7, 2, True), (12, 3, False), (97, 2, True), (1000, 1, False), (1009, 1, True)))
#: the FFT shapes the fills other than "random" run on: a power of two and a prime
FFT_FILL_SHAPES = (FFT_SHAPES[2], FFT_SHAPES[-3])


FILLS = ("random", "specials", "huge", "tiny")
#: "huge" and "tiny": the inputs' magnitude by type (Conv2D's products and FFT's sums stay finite)
_SCALES = {"huge": {Type.F16: 60.0, Type.BF16: 1e18, Type.F32: 1e18, Type.F64: 1e150},
           "tiny": {Type.F16: 1e-3, Type.BF16: 1e-20, Type.F32: 1e-20, Type.F64: 1e-160}}


@dataclass(frozen=True)
class ConvCase(MatrixCase):
    """A case of a convolution row: ``fields`` its shape operands (and flags); ``fill`` one of FILLS."""


def _tag(fields: dict) -> str:
    return "x".join(str(int(v)) for v in fields.values())


def conv_cases() -> list[ConvCase]:
    out = []
    for info in CONV_ROWS:
        shapes = CONV_SHAPES if info.name == "Conv2D" else FFT_SHAPES
        for ty in sorted(info.types, key=lambda t: t.code):
            out += [ConvCase(f"{info.name}.{ty.name}.{_tag(f)}.random", info, ty, f) for f in shapes]
            fill_shapes = (shapes[2],) if info.name == "Conv2D" else FFT_FILL_SHAPES
            out += [ConvCase(f"{info.name}.{ty.name}.{_tag(f)}.{fill}", info, ty, f, fill)
                    for f in fill_shapes for fill in FILLS[1:]]
    return out


def trap_cases() -> list[ConvCase]:
    out = []
    for info in CONV_ROWS:
        fields = CONV_SHAPES[2] if info.name == "Conv2D" else FFT_SHAPES[4]
        out += [ConvCase(f"{info.name}.F32.{op.name}_short", info, Type.F32, fields, short=op.name)
                for op in info.address_operands]
    return out


def _inputs(case: ConvCase, seed: int) -> dict:
    """Array name -> float64 values representable in the array's type (``output`` prefilled with 7s)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, array in case.arrays().items():
        values = np.full(array.elements, 7.0) if name == "output" else rng.uniform(-2, 2, array.elements)
        if name != "output" and case.fill in _SCALES:
            values = values * _SCALES[case.fill][case.ty]
        out[name] = decode_array(array.ty, encode_array(array.ty, values))
    if case.fill == "specials":
        x = out["input"]
        if case.info.name == "Conv2D":
            x[:: max(1, len(x) // 3)][:2] = (math.nan, -math.inf)
            out["kernel"][0] = math.inf
        elif len(x):
            x[0], x[len(x) // 2 + 1] = math.inf, math.nan   # items 0 and (a later one, when there are several)
    return out


# ---- NumPy, written here (float64) ------------------------------------------------------------------------

def conv2d_numpy(f: dict, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """Conv2D as a direct loop over the kernel's taps (p, q), each a product over the zero-padded input's
    strided window, in float64: (batch, out_channels, out_h, out_w)."""
    batch, cin, cout, groups = f["batch"], f["in_channels"], f["out_channels"], f["groups"]
    (sh, sw), (ph, pw), (dh, dw) = ((f[f"{n}_h"], f[f"{n}_w"]) for n in _PAIRS)
    kh, kw, height, width = f["kernel_h"], f["kernel_w"], f["height"], f["width"]
    oh, ow = conv_out(height, ph, dh, kh, sh), conv_out(width, pw, dw, kw, sw)
    x = np.pad(x.reshape(batch, cin, height, width), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    w = w.reshape(cout, cin // groups, kh, kw)
    cg, og = cin // groups, cout // groups
    out = np.zeros((batch, cout, oh, ow))
    for g in range(groups):
        for p in range(kh):
            for q in range(kw):
                window = x[:, g * cg:(g + 1) * cg, p * dh:p * dh + (oh - 1) * sh + 1:sh,
                           q * dw:q * dw + (ow - 1) * sw + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("bchw,oc->bohw", window, w[g * og:(g + 1) * og, :, p, q])
    return out if bias is None else out + bias[None, :, None, None]


def _conv_expected(case: ConvCase, a: dict) -> tuple[np.ndarray, np.ndarray]:
    """(NumPy's outputs, the contract's bound per output)."""
    f = case.fields
    bias = a["bias"] if f["has_bias"] else None
    want = conv2d_numpy(f, a["input"], a["kernel"], bias).reshape(-1)
    magnitude = conv2d_numpy(f, np.abs(a["input"]), np.abs(a["kernel"]),
                             None if bias is None else np.abs(bias)).reshape(-1)
    k = f["in_channels"] // f["groups"] * f["kernel_h"] * f["kernel_w"]
    u = unit_roundoff(case.ty)
    gamma = (k + 2) * u / (1 - (k + 2) * u)
    eta = 2.0 ** -1074 if case.ty is Type.F64 else 2.0 ** -149
    return want, gamma * magnitude + (k + 2) * eta


def _complex(values: np.ndarray, n: int) -> np.ndarray:
    z = values.reshape(-1, n, 2)
    return z[..., 0] + 1j * z[..., 1]


def fft_bound(ty: Type, n: int, y: np.ndarray) -> np.ndarray:
    """The contract's normwise bound for each item of ``y`` (items x n complex): n a power of two
    ``(8*log2(n) + 2)*u*||y|| + 2n*eta``; another n ``(24*log2(m) + 8)*u*||y|| + 4m*eta``, m the power of two at
    least 2n - 1 (Bluestein's padded length)."""
    eta = 2.0 ** -1074 if ty is Type.F64 else 2.0 ** -149
    norm = np.linalg.norm(y, axis=-1)
    if n & (n - 1) == 0:
        return (8 * math.log2(n) + 2) * unit_roundoff(ty) * norm + 2 * n * eta
    m = 1 << (2 * n - 2).bit_length()
    return (24 * math.log2(m) + 8) * unit_roundoff(ty) * norm + 4 * m * eta


def compare(case: ConvCase, inputs: dict, got: np.ndarray) -> list:
    """Where ``got`` (float64 values of ty) breaks the contract against NumPy: (index, numpy, got, allowed) per
    element (Conv2D) or per item (FFT: normwise), empty when it keeps it."""
    if case.arrays()["output"].elements == 0:
        return [] if got.size == 0 else [(0, math.nan, float(got[0]), 0.0)]
    with np.errstate(all="ignore"):
        if case.info.name == "FFT":
            return _compare_fft(case, inputs, got)
        want, bound = _conv_expected(case, inputs)
        rounded = decode_array(case.ty, encode_array(case.ty, want))
        allowed = 2 * bound + ulp_of(case.ty, np.maximum(np.abs(rounded), np.abs(got)))
        special = np.isnan(rounded) | np.isinf(rounded)
        ok = np.where(special, (np.isnan(rounded) & np.isnan(got)) | (rounded == got), np.abs(got - want) <= allowed)
    return [(int(i), float(rounded[i]), float(got[i]), float(allowed[i])) for i in np.flatnonzero(~ok)]


def _compare_fft(case: ConvCase, inputs: dict, got: np.ndarray) -> list:
    n, inverse = case.fields["n"], case.fields["inverse"]
    x = _complex(inputs["input"], n)
    want = np.fft.ifft(x, axis=-1) if inverse else np.fft.fft(x, axis=-1)
    mine = _complex(got, n)
    bad = []
    for item in range(want.shape[0]):
        if not np.isfinite(want[item]).all():
            finite = np.isfinite(mine[item].real) & np.isfinite(mine[item].imag)
            if finite.any():
                bad.append((item, math.nan, float(np.flatnonzero(finite)[0]), 0.0))
            continue
        error = float(np.linalg.norm(mine[item] - want[item]))
        allowed = 2 * float(fft_bound(case.ty, n, want[item]))
        if not error <= allowed:
            bad.append((item, float(np.linalg.norm(want[item])), error, allowed))
    return bad


def run_case(backend, case: ConvCase, seed: int = 7):
    """Run ``case`` on ``backend``: (inputs by array name (float64), the output's values (float64), trap or
    None). The addresses are held in lane 0's registers (a short array traps at the launch, not at verify)."""
    arrays = case.arrays()
    inputs = _inputs(case, seed)
    raw, trap = run_with_arrays(backend, case, arrays, inputs, "output")
    return inputs, decode_array(arrays["output"].ty, raw), trap
