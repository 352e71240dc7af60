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
in operand order, before anything is written, and the input is read whole before the output is written (in place
is allowed): ``exec_norm.rounded_rule``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .exec_norm import rounded_rule

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


def _rows(values: Callable[[np.ndarray], np.ndarray]) -> Callable[[object, dict], np.ndarray]:
    """``values`` of the instruction's input as a (rows, n) float64 array."""
    return lambda instr, inputs: values(inputs["input"].reshape(instr.rows, instr.n))


SOFTMAX_RULES = {"Softmax": rounded_rule(_rows(softmax_values)), "LogSoftmax": rounded_rule(_rows(log_softmax_values))}
