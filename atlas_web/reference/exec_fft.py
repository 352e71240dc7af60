"""Executor rule of FFT (row of category "convolution"): the discrete Fourier transform of ``batch`` complex
vectors of ``n`` interleaved (re, im) values, NumPy's convention (forward unscaled with exp(-2*pi*i*j*k/n),
inverse exp(+2*pi*i*j*k/n) scaled by 1/n).

The executable form of docs/semantics.md, "Convolution and FFT kernels". Every value is taken to float64 (exact for
F32), the transform computed by ``np.fft.fft`` / ``np.fft.ifft`` in complex128 and each component rounded once to
``ty`` (F64: complex128 throughout). The arrays are checked over their whole extents, in operand order, before
anything is written (``exec_cooperative.checked_arrays``); the input is read (copied) before the output is
written, so in place is allowed.
"""

from __future__ import annotations

import numpy as np

from . import numeric
from .exec_cooperative import CooperativeStep, checked_arrays

__all__ = ["FFT_RULES", "fft_values"]


def fft_values(interleaved: np.ndarray, n: int, inverse: bool) -> np.ndarray:
    """The transform of each run of ``n`` complex values of float64 ``interleaved`` (re, im, re, im, ...), as
    interleaved float64 (not rounded)."""
    z = interleaved.reshape(-1, n, 2)
    z = z[..., 0] + 1j * z[..., 1]
    y = np.fft.ifft(z, axis=-1) if inverse else np.fft.fft(z, axis=-1)
    return np.stack([y.real, y.imag], axis=-1).reshape(-1)


def _fft(step: CooperativeStep) -> None:
    instr = step.instr
    checked = checked_arrays(step)
    output = checked["output"]
    if output.array.elements == 0:
        return
    values = checked["input"].read().astype(np.float64)
    with np.errstate(all="ignore"):
        result = fft_values(values, instr.n, instr.inverse)
    output.write(numeric.round_once(instr.ty, result))


FFT_RULES = {"FFT": _fft}
