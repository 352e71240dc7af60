"""Executor rules of the normalization kernels (rows of category "normalization"): LayerNorm, RMSNorm,
BatchNorm (inference form) and GroupNorm.

The executable form of docs/semantics.md, "Normalization kernels". Every value is taken to float64 (exact for
F16, BF16 and F32) and the statistics are computed there in two passes, as NumPy computes them: the mean
(``np.mean``: pairwise summation), then the variance as the mean of the squared deviations from it (never
``E[x**2] - E[x]**2``); RMSNorm's mean square likewise. Then, elementwise in float64,

    LayerNorm, GroupNorm:  y = (x - mean) * s * gamma + beta      s = 1 / sqrt(var + eps)
    RMSNorm:               y = x * s * weight                     s = 1 / sqrt(mean(x**2) + eps)
    BatchNorm:             y = (x - mean[c]) * s[c] * gamma[c] + beta[c]   s[c] = 1 / sqrt(variance[c] + eps)

left to right, and each result is rounded once to ``ty`` (F32, F16, BF16: from float64; F64 is float64
arithmetic throughout). NaN and infinities go through these formulas as IEEE arithmetic says: a LayerNorm row
(GroupNorm group) holding a NaN or an infinity has a NaN or infinite mean, so every output of it is NaN; an
RMSNorm row holding an infinity has s = 0 (finite elements give a signed zero, infinite ones NaN). eps is used
as the instruction holds it (f64). The arrays are checked (handle, bounds, alignment) over their whole extents,
in operand order, before anything is written, by ``exec_cooperative.checked_arrays``; every input is read
before the output is written (in place is allowed).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import numeric
from .exec_cooperative import CooperativeStep, checked_arrays

__all__ = ["NORM_RULES", "rounded_rule", "layer_norm_values", "rms_norm_values", "batch_norm_values",
           "group_norm_values"]


def _wide(values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(np.float64)


def _inverse_deviation(var: np.ndarray, eps: float) -> np.ndarray:
    """1 / sqrt(var + eps), in float64 (NaN for a negative argument, inf for zero)."""
    return 1.0 / np.sqrt(var + np.float64(eps))


def _centered(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """(x - mean, 1 / sqrt(var + eps)) along the last axis of a float64 ``x`` (two passes; s keeps its axis)."""
    mean = np.mean(x, axis=-1, keepdims=True)
    deviations = x - mean
    var = np.mean(deviations * deviations, axis=-1, keepdims=True)
    return deviations, _inverse_deviation(var, eps)


def layer_norm_values(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm of the rows of a float64 (rows, n) ``x`` in float64 (not rounded)."""
    deviations, s = _centered(x, eps)
    return deviations * s * gamma + beta


def rms_norm_values(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm of the rows of a float64 (rows, n) ``x`` in float64 (not rounded)."""
    s = _inverse_deviation(np.mean(x * x, axis=-1, keepdims=True), eps)
    return x * s * weight


def batch_norm_values(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, variance: np.ndarray,
                      eps: float) -> np.ndarray:
    """BatchNorm (inference) of a float64 (batch, channels, spatial) ``x`` in float64 (not rounded)."""
    s = _inverse_deviation(variance, eps)[:, None]
    return (x - mean[:, None]) * s * gamma[:, None] + beta[:, None]


def group_norm_values(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, groups: int, eps: float) -> np.ndarray:
    """GroupNorm of a float64 (batch, channels, spatial) ``x`` in float64 (not rounded)."""
    batch, channels, spatial = x.shape
    deviations, s = _centered(x.reshape(batch, groups, -1), eps)
    normalized = (deviations * s).reshape(batch, channels, spatial)
    return normalized * gamma[:, None] + beta[:, None]


def _layer_norm(instr, arrays: dict) -> np.ndarray:
    x = arrays["input"].reshape(instr.rows, instr.n)
    return layer_norm_values(x, arrays["gamma"], arrays["beta"], instr.eps)


def _rms_norm(instr, arrays: dict) -> np.ndarray:
    return rms_norm_values(arrays["input"].reshape(instr.rows, instr.n), arrays["weight"], instr.eps)


def _batch_norm(instr, arrays: dict) -> np.ndarray:
    x = arrays["input"].reshape(instr.batch, instr.channels, instr.spatial)
    return batch_norm_values(x, arrays["gamma"], arrays["beta"], arrays["mean"], arrays["variance"], instr.eps)


def _group_norm(instr, arrays: dict) -> np.ndarray:
    x = arrays["input"].reshape(instr.batch, instr.channels, instr.spatial)
    return group_norm_values(x, arrays["gamma"], arrays["beta"], instr.groups, instr.eps)


def rounded_rule(values: Callable[[object, dict], np.ndarray]) -> Callable[[CooperativeStep], None]:
    """The executor rule of a kernel row (output first) whose float64 outputs ``values(instr, inputs)`` computes from
    its other arrays, read whole in float64 (``inputs``: name -> values) and rounded once to ``instr.ty``; an empty
    output reads nothing."""
    def run(step: CooperativeStep) -> None:
        instr = step.instr
        checked = checked_arrays(step)
        output = checked["output"]
        if output.array.elements == 0:
            return
        inputs = {name: _wide(array.read()) for name, array in checked.items() if name != "output"}
        with np.errstate(all="ignore"):
            result = values(instr, inputs)
        output.write(numeric.round_once(instr.ty, result.reshape(-1)))
    return run


NORM_RULES = {"LayerNorm": rounded_rule(_layer_norm), "RMSNorm": rounded_rule(_rms_norm),
              "BatchNorm": rounded_rule(_batch_norm), "GroupNorm": rounded_rule(_group_norm)}
