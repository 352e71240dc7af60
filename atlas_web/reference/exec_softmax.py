"""Executor rules of the softmax kernels (rows of category "softmax"): Softmax and LogSoftmax.

The executable form of docs/semantics.md, "Softmax kernels". Every value is taken to float64 (exact for F16, BF16
and F32); for each row x of n elements, with m = max(x) (``np.max``: NaN if the row holds one) and
s = sum_j exp(x[j] - m) (``np.sum``: pairwise summation),

    Softmax:     y[i] = exp(x[i] - m) / s
    LogSoftmax:  y[i] = (x[i] - m) - log(s)

in float64, and each result is rounded once to ``ty`` (F32, F16, BF16: from float64; F64 is float64 arithmetic
throughout). NaN and infinities go through these formulas as IEEE arithmetic says: a row holding a NaN or +inf
(inf - inf is NaN), or a row of -inf only (m = -inf), gives NaN everywhere; a -inf element of a row with a finite
maximum gives 0 (LogSoftmax: -inf). The arrays are checked (handle, bounds, alignment) over their whole extents,
in operand order, before anything is written, by ``exec_cooperative.checked_arrays``; the input is read whole
before the output is written (in place is allowed).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import numeric
from .exec_cooperative import CooperativeStep, checked_arrays

__all__ = ["SOFTMAX_RULES", "softmax_values", "log_softmax_values"]


def _shifted(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x - m, s) of the rows of a float64 (rows, n) ``x``: m the row's maximum, s = sum exp(x - m) (keeps its
    axis)."""
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted, np.sum(np.exp(shifted), axis=-1, keepdims=True)


def softmax_values(x: np.ndarray) -> np.ndarray:
    """Softmax of the rows of a float64 (rows, n) ``x`` in float64 (not rounded)."""
    shifted, s = _shifted(x)
    return np.exp(shifted) / s


def log_softmax_values(x: np.ndarray) -> np.ndarray:
    """LogSoftmax of the rows of a float64 (rows, n) ``x`` in float64 (not rounded)."""
    shifted, s = _shifted(x)
    return shifted - np.log(s)


def _rule(values: Callable[[np.ndarray], np.ndarray]) -> Callable[[CooperativeStep], None]:
    """The executor rule of a softmax row whose float64 outputs ``values(rows)`` computes."""
    def run(step: CooperativeStep) -> None:
        instr = step.instr
        checked = checked_arrays(step)
        output = checked["output"]
        if output.array.elements == 0:
            return
        x = checked["input"].read().astype(np.float64).reshape(instr.rows, instr.n)
        with np.errstate(all="ignore"):
            result = values(x)
        output.write(numeric.round_once(instr.ty, result.reshape(-1)))
    return run


SOFTMAX_RULES = {"Softmax": _rule(softmax_values), "LogSoftmax": _rule(log_softmax_values)}
