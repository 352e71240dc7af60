"""Cases for the normalization kernels (rows of category "normalization": LayerNorm, RMSNorm, BatchNorm,
GroupNorm), generated from each row: its types, its shape (UINT) operands at odd sizes (one row and many; n below,
at and past the vector widths; an empty input), one buffer per array operand sized from its extent, the
addresses in lane 0's registers, and fills that reach the contract's corners: random values, constant rows
(variance 0), rows whose mean dwarfs their spread, huge values (squares past f32's range), tiny ones (squares
below it), and rows holding a NaN or an infinity; traps (each array one element short) against the reference.

The expected outputs come from NumPy written here (``NUMPY``: float64, ``np.var``), not from the reference, and a
backend's output is compared with the contract's bound (docs/semantics.md, Normalization kernels; ``BOUNDS``
computes it from the inputs): NaN exactly where NumPy has NaN, the same infinity, and otherwise
``|got - want| <= 2 * bound + ulp`` (the contract's bound for the backend, the same again for NumPy's own float64
rounding (F64), and the final rounding to ty: one ulp of ty at the larger of the two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from atlas_web.isa import OPCODE_TABLE, Type
from atlas_web.isa.opcodes import OperandKind

from .matrix_cases import MatrixCase, decode_array, encode_array, run_with_arrays

__all__ = ["NORM_ROWS", "NUMPY", "BOUNDS", "NormCase", "norm_cases", "trap_cases", "run_norm", "compare",
           "unit_roundoff", "ulp_of", "outside_bound"]

#: every normalization row of the opcode table
NORM_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "normalization")
#: shape operand values, by name (each row takes its own): one row/item, odd sizes, many rows, past the vector
#: widths, an empty input
SHAPES = (dict(n=1, rows=1, batch=1, channels=1, groups=1, spatial=1),
          dict(n=7, rows=1, batch=1, channels=6, groups=3, spatial=5),
          dict(n=37, rows=5, batch=2, channels=6, groups=2, spatial=7),
          dict(n=130, rows=3, batch=3, channels=4, groups=4, spatial=33),
          dict(n=1031, rows=2, batch=2, channels=3, groups=1, spatial=343),
          dict(n=0, rows=2, batch=2, channels=2, groups=1, spatial=0))
FILLS = ("random", "constant", "offset", "huge", "tiny", "specials")
EPS = 1e-5
_MAX = {Type.F16: 65504.0, Type.BF16: 3.38e38, Type.F32: 3.4e38, Type.F64: 1.7e308}
_SMALLEST_SUBNORMAL = {Type.F32: 2.0 ** -149, Type.F64: 2.0 ** -1074}


def unit_roundoff(ty: Type) -> float:
    """u of the precision a row of ``ty`` computes in (f32 for F16, BF16, F32)."""
    return 2.0 ** -53 if ty is Type.F64 else 2.0 ** -24


def _compute(ty: Type) -> Type:
    return Type.F64 if ty is Type.F64 else Type.F32


@dataclass(frozen=True)
class NormCase(MatrixCase):
    """A case of a normalization row: ``fields`` are its shape operands and eps; ``fill`` one of FILLS."""

    @property
    def groups(self) -> tuple[int, int]:
        """(statistics groups, elements per group) of the input: LayerNorm/RMSNorm rows, GroupNorm's groups of
        each item, BatchNorm's (batch*channels, spatial) runs of one channel."""
        f = self.fields
        if "n" in f:
            return f["rows"], f["n"]
        if "groups" in f:
            return f["batch"] * f["groups"], f["channels"] // f["groups"] * f["spatial"]
        return f["batch"] * f["channels"], f["spatial"]


def _fields(info, shape: dict) -> dict:
    """The row's shape operands from ``shape``, and eps."""
    return {**{op.name: shape[op.name] for op in info.operands if op.kind is OperandKind.UINT}, "eps": EPS}


def _tag(fields: dict) -> str:
    return "x".join(str(v) for name, v in fields.items() if name != "eps")


def norm_cases() -> list[NormCase]:
    out = []
    for info in NORM_ROWS:
        for ty in sorted(info.types, key=lambda t: t.code):
            for shape in SHAPES:
                fields = _fields(info, shape)
                tag = _tag(fields)
                out.append(NormCase(f"{info.name}.{ty.name}.{tag}.random", info, ty, fields))
            fields = _fields(info, SHAPES[3])
            tag = _tag(fields)
            out += [NormCase(f"{info.name}.{ty.name}.{tag}.{fill}", info, ty, fields, fill) for fill in FILLS[1:]]
    return out


def trap_cases() -> list[NormCase]:
    out = []
    for info in NORM_ROWS:
        ty = Type.F32
        fields = _fields(info, SHAPES[2])
        out += [NormCase(f"{info.name}.{ty.name}.{op.name}_short", info, ty, fields, short=op.name)
                for op in info.address_operands]
    return out


def _representable(ty: Type, values: np.ndarray) -> np.ndarray:
    return decode_array(ty, encode_array(ty, values))


def _inputs(case: NormCase, seed: int) -> dict:
    """Array name -> float64 values representable in the array's type (``output`` prefilled with 7s)."""
    rng = np.random.default_rng(seed)
    groups, size = case.groups
    out = {}
    for name, array in case.arrays().items():
        count = array.elements
        if name == "input":
            values = _fill(case, rng, groups, size)
        elif name == "variance":
            values = np.zeros(count) if case.fill == "constant" else rng.uniform(0.05, 4.0, count)
        elif name == "mean" and case.fill in ("huge", "offset"):
            values = rng.uniform(-1, 1, count) * (_MAX[case.ty] / 4 if case.fill == "huge" else 1000.0)
        elif name == "output":
            values = np.full(count, 7.0)
        else:
            values = rng.uniform(-2, 2, count)
        out[name] = _representable(array.ty, values)
    return out


def _fill(case: NormCase, rng, groups: int, size: int) -> np.ndarray:
    """The input, laid out as ``groups`` statistics groups of ``size`` (reshaped to the row's layout)."""
    x = rng.uniform(-4, 4, (groups, size))
    top = _MAX[case.ty]
    if case.fill == "constant":
        x = np.repeat(rng.uniform(-4, 4, (groups, 1)), size, axis=1)
    elif case.fill == "offset":
        x = 1000.0 + rng.uniform(-0.01, 0.01, (groups, size))
    elif case.fill == "huge":
        x = rng.uniform(-1, 1, (groups, size)) * top / 2
    elif case.fill == "tiny":
        x = rng.uniform(-1, 1, (groups, size)) * (1e-30 if case.ty is not Type.F16 else 1e-4)
    elif case.fill == "specials" and size:
        x[0, size // 2] = math.nan
        if groups > 1:
            x[1, 0] = math.inf
        if groups > 2:
            x[2, size - 1] = -math.inf
    return x.reshape(-1)   # every row's statistics groups are consecutive runs of the input


# ---- NumPy, written the usual way (float64) -------------------------------------------------------------------

def _standardize(x: np.ndarray, axis: int) -> np.ndarray:
    return (x - x.mean(axis=axis, keepdims=True)) / np.sqrt(x.var(axis=axis, keepdims=True) + EPS)


def _layer_norm(f: dict, a: dict) -> np.ndarray:
    x = a["input"].reshape(f["rows"], f["n"])
    return (_standardize(x, 1) * a["gamma"] + a["beta"]).reshape(-1)


def _rms_norm(f: dict, a: dict) -> np.ndarray:
    x = a["input"].reshape(f["rows"], f["n"])
    return (x / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + EPS) * a["weight"]).reshape(-1)


def _batch_norm(f: dict, a: dict) -> np.ndarray:
    x = a["input"].reshape(f["batch"], f["channels"], f["spatial"])
    c = (slice(None), None)
    y = (x - a["mean"][c]) / np.sqrt(a["variance"][c] + EPS) * a["gamma"][c] + a["beta"][c]
    return y.reshape(-1)


def _group_norm(f: dict, a: dict) -> np.ndarray:
    batch, channels, groups, spatial = f["batch"], f["channels"], f["groups"], f["spatial"]
    x = _standardize(a["input"].reshape(batch, groups, -1), 2).reshape(batch, channels, spatial)
    return (x * a["gamma"][:, None] + a["beta"][:, None]).reshape(-1)


#: row name -> numpy(shape fields, float64 inputs by array name) -> the float64 output (not rounded)
NUMPY: dict[str, Callable] = {"LayerNorm": _layer_norm, "RMSNorm": _rms_norm, "BatchNorm": _batch_norm,
                              "GroupNorm": _group_norm}


# ---- the contract's bounds (docs/semantics.md, Normalization kernels) -------------------------------------------

def _gamma(k: float, u: float) -> float:
    return k * u / (1 - k * u)


def _statistics_bound(x: np.ndarray, g: np.ndarray, b: np.ndarray, u: float, eta: float) -> np.ndarray:
    """LayerNorm / GroupNorm: per element of groups ``x`` (groups, N), with its gamma ``g`` and beta ``b``."""
    n = x.shape[1]
    a = np.max(np.abs(x), axis=1, keepdims=True)
    s = 1.0 / np.sqrt(x.var(axis=1, keepdims=True) + EPS)
    d = np.abs(x - x.mean(axis=1, keepdims=True))
    spread = (_gamma(n + 2, u) * a * s) ** 2
    return np.abs(g) * s * (_gamma(n + 2, u) * a + d * (_gamma(n + 10, u) + spread)) + u * np.abs(b) \
        + 4 * eta * (np.abs(g) + 1)


def _layer_norm_bound(f: dict, a: dict, u: float, eta: float) -> np.ndarray:
    x = a["input"].reshape(f["rows"], f["n"])
    return _statistics_bound(x, a["gamma"][None, :], a["beta"][None, :], u, eta).reshape(-1)


def _rms_norm_bound(f: dict, a: dict, u: float, eta: float) -> np.ndarray:
    x = a["input"].reshape(f["rows"], f["n"])
    s = 1.0 / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + EPS)
    w = np.abs(a["weight"])[None, :]
    return (_gamma(f["n"] + 6, u) * np.abs(x) * s * w + 4 * eta * (w + 1)).reshape(-1)


def _batch_norm_bound(f: dict, a: dict, u: float, eta: float) -> np.ndarray:
    x = a["input"].reshape(f["batch"], f["channels"], f["spatial"])
    c = (slice(None), None)
    s = 1.0 / np.sqrt(a["variance"][c] + EPS)
    g = np.abs(a["gamma"][c])
    bound = _gamma(6, u) * (g * s * (np.abs(x) + np.abs(a["mean"][c])) + np.abs(a["beta"][c])) + 4 * eta * (g + 1)
    return bound.reshape(-1)


def _group_norm_bound(f: dict, a: dict, u: float, eta: float) -> np.ndarray:
    batch, channels, groups, spatial = f["batch"], f["channels"], f["groups"], f["spatial"]
    x = a["input"].reshape(batch * groups, -1)
    per = channels // groups * spatial
    g = np.tile(np.repeat(a["gamma"], spatial).reshape(groups, per), (batch, 1))
    b = np.tile(np.repeat(a["beta"], spatial).reshape(groups, per), (batch, 1))
    return _statistics_bound(x, g, b, u, eta).reshape(-1)


#: row name -> bound(shape fields, float64 inputs, u, eta) -> per output element, the contract's bound
BOUNDS: dict[str, Callable] = {"LayerNorm": _layer_norm_bound, "RMSNorm": _rms_norm_bound,
                               "BatchNorm": _batch_norm_bound, "GroupNorm": _group_norm_bound}


def ulp_of(ty: Type, values: np.ndarray) -> np.ndarray:
    """One ulp of ``ty`` at each (finite) magnitude of ``values``."""
    mantissa = {Type.F16: 10, Type.BF16: 7, Type.F32: 23, Type.F64: 52}[ty]
    smallest = {Type.F16: 2.0 ** -24, Type.BF16: 2.0 ** -133, Type.F32: 2.0 ** -149, Type.F64: 2.0 ** -1074}[ty]
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.maximum(np.abs(values), 1e-300)))
    return np.maximum(2.0 ** (exponent - mantissa), smallest)


def compare(case: NormCase, inputs: dict, got: np.ndarray) -> list:
    """The output elements where ``got`` (float64 values of ty) breaks the contract against NumPy: (index, numpy,
    got, allowed), empty when it keeps it."""
    if case.arrays()["output"].elements == 0:
        return [] if got.size == 0 else [(0, math.nan, float(got[0]), 0.0)]
    with np.errstate(all="ignore"):
        want = NUMPY[case.info.name](case.fields, inputs)
        bound = BOUNDS[case.info.name](case.fields, inputs, unit_roundoff(case.ty),
                                       _SMALLEST_SUBNORMAL[_compute(case.ty)])
    return outside_bound(case.ty, want, got, bound)


def outside_bound(ty: Type, want: np.ndarray, got: np.ndarray, bound: np.ndarray) -> list:
    """The elements where ``got`` (float64 values of ty) is not ``want`` (NumPy's float64 result) within twice
    the contract's ``bound`` plus one ulp of ty (NaN where NumPy's rounded result is NaN, the same infinity where
    it is infinite): (index, numpy rounded to ty, got, allowed)."""
    with np.errstate(all="ignore"):
        rounded = decode_array(ty, encode_array(ty, want))
        allowed = 2 * bound + ulp_of(ty, np.maximum(np.abs(rounded), np.abs(got)))
        special = np.isnan(rounded) | np.isinf(rounded)
        ok = np.where(special, (np.isnan(rounded) & np.isnan(got)) | (rounded == got),
                      np.abs(got - want) <= allowed)
    return [(int(i), float(rounded[i]), float(got[i]), float(allowed[i])) for i in np.flatnonzero(~ok)]


def run_norm(backend, case: NormCase, seed: int = 5):
    """Run ``case`` on ``backend``: (inputs by array name (float64), the output's values (float64), trap or
    None). The addresses are held in lane 0's registers (a short array traps at the launch, not at verify)."""
    arrays = case.arrays()
    inputs = _inputs(case, seed)
    raw, trap = run_with_arrays(backend, case, arrays, inputs, "output")
    return inputs, decode_array(arrays["output"].ty, raw), trap
