"""Cases for the softmax kernels (rows of category "softmax": Softmax, LogSoftmax), generated from each row: its
types, its shape (n, rows) at odd sizes (one row and many; n below, at and past the vector widths; an empty
input), and fills that reach the contract's corners: random logits, constant rows, huge logits (differences near
the type's range: a naive exp overflows), tiny ones, a row holding NaN, +inf, a -inf element, a row of -inf only,
and one-hot rows (one logit far above the rest: probabilities that underflow); traps (each array one element
short) against the reference.

The expected outputs come from NumPy written here (float64, ``exp(x - max) / sum``), not from the reference, and a
backend's output is compared with the contract's bound (docs/semantics.md, Softmax kernels; ``bound`` computes it
from the input): NaN exactly where NumPy has NaN, the same infinity, and otherwise ``|got - want| <= 2 * bound +
ulp`` (the contract's bound for the backend, the same again for NumPy's own float64 rounding, and the final
rounding to ty: one ulp of ty at the larger of the two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from atlas_web.isa import OPCODE_TABLE, Type

from .matrix_cases import MatrixCase, decode_array, encode_array, run_with_arrays
from .norm_cases import outside_bound, unit_roundoff

__all__ = ["SOFTMAX_ROWS", "NUMPY", "SoftmaxCase", "softmax_cases", "trap_cases", "run_softmax", "bound",
           "compare"]

#: every softmax row of the opcode table
SOFTMAX_ROWS = tuple(info for info in OPCODE_TABLE if info.category == "softmax")
#: (n, rows): one element, odd sizes, many rows, past the vector widths and a block of 1024, an empty input
SHAPES = ((1, 1), (7, 1), (37, 5), (130, 3), (1031, 2), (0, 2), (5, 0))
FILLS = ("random", "constant", "huge", "tiny", "specials", "neg_inf_row", "one_hot")
_MAX = {Type.F16: 65504.0, Type.BF16: 3.38e38, Type.F32: 3.4e38, Type.F64: 1.7e308}
#: the smallest normal number of the computing precision (f32 for F16, BF16, F32)
_SMALLEST_NORMAL = {Type.F64: 2.0 ** -1022}
#: the contract's exp and log accuracy, in units of u
_E_ULPS = 8


@dataclass(frozen=True)
class SoftmaxCase(MatrixCase):
    """A case of a softmax row: ``fields`` are n and rows; ``fill`` one of FILLS."""


def softmax_cases() -> list[SoftmaxCase]:
    out = []
    for info in SOFTMAX_ROWS:
        for ty in sorted(info.types, key=lambda t: t.code):
            for n, rows in SHAPES:
                out.append(SoftmaxCase(f"{info.name}.{ty.name}.{n}x{rows}.random", info, ty, dict(n=n, rows=rows)))
            out += [SoftmaxCase(f"{info.name}.{ty.name}.130x4.{fill}", info, ty, dict(n=130, rows=4), fill)
                    for fill in FILLS[1:]]
    return out


def trap_cases() -> list[SoftmaxCase]:
    return [SoftmaxCase(f"{info.name}.F32.{op.name}_short", info, Type.F32, dict(n=37, rows=5), short=op.name)
            for info in SOFTMAX_ROWS for op in info.address_operands]


def _fill(case: SoftmaxCase, rng) -> np.ndarray:
    """The input as a (rows, n) float64 array."""
    n, rows = case.fields["n"], case.fields["rows"]
    x = rng.uniform(-8, 8, (rows, n))
    if case.fill == "constant":
        x = np.repeat(rng.uniform(-4, 4, (rows, 1)), n, axis=1)
    elif case.fill == "huge":
        x = rng.uniform(-1, 1, (rows, n)) * _MAX[case.ty] / 2
    elif case.fill == "tiny":
        x = rng.uniform(-1, 1, (rows, n)) * (1e-30 if case.ty is not Type.F16 else 1e-4)
    elif case.fill == "specials":
        x[0, n // 2] = math.nan
        x[1, 0] = math.inf
        x[2, n - 1] = -math.inf
        x[2, 3] = -math.inf
    elif case.fill == "neg_inf_row":
        x[1, :] = -math.inf
    elif case.fill == "one_hot":   # exp of the others underflows (f16: past its range)
        x[:, 5] = 200.0 if case.ty is Type.F16 else 2000.0
    return x


def _inputs(case: SoftmaxCase, seed: int) -> dict:
    """Array name -> float64 values representable in the array's type (``output`` prefilled with 7s)."""
    rng = np.random.default_rng(seed)
    arrays = case.arrays()
    values = {"input": _fill(case, rng).reshape(-1), "output": np.full(arrays["output"].elements, 7.0)}
    return {name: decode_array(case.ty, encode_array(case.ty, v)) for name, v in values.items()}


# ---- NumPy, written the usual way (float64) -------------------------------------------------------------------

def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    d = x - x.max(axis=1, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=1, keepdims=True))


#: row name -> numpy(float64 (rows, n) input) -> the float64 output (not rounded)
NUMPY = {"Softmax": _softmax, "LogSoftmax": _log_softmax}


def bound(name: str, ty: Type, x: np.ndarray) -> np.ndarray:
    """The contract's bound (docs/semantics.md, Softmax kernels) per element of the (rows, n) input ``x``."""
    u = unit_roundoff(ty)
    lam = _SMALLEST_NORMAL.get(ty, 2.0 ** -126)
    big_e = _E_ULPS * u
    n = x.shape[1]
    gamma = (n + 2) * u / (1 - (n + 2) * u)
    d = np.abs(x - x.max(axis=1, keepdims=True))
    p = _softmax(x)
    weighted = np.where(p > 0, p * d, 0.0)   # a -inf logit: probability 0 at an infinite distance
    spread = np.sum(weighted, axis=1, keepdims=True)
    if name == "Softmax":
        return u * weighted + p * (u * spread + 2 * big_e + gamma) + 2 * lam
    y = _log_softmax(x)
    log_s = np.abs(np.log(np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)))
    return u * (d + spread + np.abs(y)) + big_e * (1 + np.maximum(1.0, log_s)) + gamma


def compare(case: SoftmaxCase, inputs: dict, got: np.ndarray) -> list:
    """The output elements where ``got`` (float64 values of ty) breaks the contract against NumPy: (index, numpy,
    got, allowed), empty when it keeps it."""
    n, rows = case.fields["n"], case.fields["rows"]
    if n * rows == 0:
        return [] if got.size == 0 else [(0, math.nan, float(got[0]), 0.0)]
    x = inputs["input"].reshape(rows, n)
    with np.errstate(all="ignore"):
        want = NUMPY[case.info.name](x).reshape(-1)
        allowed = bound(case.info.name, case.ty, x).reshape(-1)
    return outside_bound(case.ty, want, got, allowed)


def run_softmax(backend, case: SoftmaxCase, seed: int = 7):
    """Run ``case`` on ``backend``: (inputs by array name (float64), the output's values (float64), trap or
    None). The addresses are held in lane 0's registers (a short array traps at the launch, not at verify)."""
    arrays = case.arrays()
    inputs = _inputs(case, seed)
    raw, trap = run_with_arrays(backend, case, arrays, inputs, "output")
    return inputs, decode_array(arrays["output"].ty, raw), trap
