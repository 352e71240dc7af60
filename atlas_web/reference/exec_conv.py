"""Executor rule of Conv2D (row of category "convolution"): NCHW 2-D cross-correlation as PyTorch's conv2d.

The executable form of docs/semantics.md, "Convolution and FFT kernels". Every value is taken to float64 (exact for
F16, BF16 and F32); the input is padded with zeros (``padding_h`` rows above and below, ``padding_w`` columns left
and right), its windows gathered (im2col: for each output position, the ``in_channels/groups x kernel_h x
kernel_w`` values under the dilated kernel) and multiplied with the kernel by ``np.einsum`` (no BLAS: every pair
is multiplied, so a padded zero times an infinite kernel element is NaN, as the contract says), the bias added
last, and each output rounded once to ``ty``. The arrays are checked (handle, bounds, alignment) over their whole
extents, in operand order, before anything is written, by ``exec_cooperative.checked_arrays``; every input is
read (copied) before the output is written.
"""

from __future__ import annotations

import numpy as np

from . import numeric
from .exec_cooperative import CooperativeStep, checked_arrays

__all__ = ["CONV_RULES", "conv2d_values", "output_size"]


def output_size(size: int, padding: int, dilation: int, kernel: int, stride: int) -> int:
    """The output length along one axis, as PyTorch's (the row's requires makes it at least 1)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv2d_values(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, *, stride: tuple[int, int],
                  padding: tuple[int, int], dilation: tuple[int, int], groups: int) -> np.ndarray:
    """Conv2D of a float64 (batch, in_channels, height, width) ``x`` with a float64 (out_channels,
    in_channels/groups, kernel_h, kernel_w) ``w`` (``bias``: float64 (out_channels,) or None), in float64 (not
    rounded): (batch, out_channels, out_h, out_w)."""
    batch, cin, height, width = x.shape
    cout, cin_g, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    oh, ow = output_size(height, ph, dh, kh, sh), output_size(width, pw, dw, kw, sw)
    padded = np.zeros((batch, cin, height + 2 * ph, width + 2 * pw))
    padded[:, :, ph:ph + height, pw:pw + width] = x
    rows = (np.arange(oh) * sh)[None, :] + (np.arange(kh) * dh)[:, None]      # (kh, oh)
    cols = (np.arange(ow) * sw)[None, :] + (np.arange(kw) * dw)[:, None]      # (kw, ow)
    windows = padded[:, :, rows[:, None, :, None], cols[None, :, None, :]]   # (b, cin, kh, kw, oh, ow)
    windows = windows.reshape(batch, groups, cin_g * kh * kw, oh * ow)
    weights = w.reshape(groups, cout // groups, cin_g * kh * kw)
    out = np.einsum("gok,bgkn->bgon", weights, windows).reshape(batch, cout, oh, ow)
    if bias is not None:
        out = out + bias[None, :, None, None]
    return out


def _conv2d(step: CooperativeStep) -> None:
    instr = step.instr
    checked = checked_arrays(step)
    output = checked["output"]
    if output.array.elements == 0:
        return
    x = checked["input"].read().astype(np.float64).reshape(instr.batch, instr.in_channels, instr.height, instr.width)
    w = checked["kernel"].read().astype(np.float64).reshape(
        instr.out_channels, instr.in_channels // instr.groups, instr.kernel_h, instr.kernel_w)
    bias = checked["bias"].read().astype(np.float64) if instr.has_bias else None
    with np.errstate(all="ignore"):
        result = conv2d_values(x, w, bias, stride=(instr.stride_h, instr.stride_w),
                               padding=(instr.padding_h, instr.padding_w),
                               dilation=(instr.dilation_h, instr.dilation_w), groups=instr.groups)
    output.write(numeric.round_once(instr.ty, result.reshape(-1)))


CONV_RULES = {"Conv2D": _conv2d}
