"""Reductions with ``axis`` and ``keepdims``: ``sum, prod, max, min, mean, var, argmax, argmin``.

A reduction over every element runs as a cooperative ParallelReduce (after a conversion where NumPy
widens: integers sum in 64 bits); one over some axes runs per lane, each lane folding one output element
in index order. ``argmax``/``argmin`` return the first best index (the first NaN, as NumPy). Result types
follow NumPy; an empty ``max``/``min``/``arg*`` is an ArrayError, as in NumPy. Standard library only.
"""

from __future__ import annotations

import builtins
from typing import Any

from ..errors import ArrayError
from ..isa.types import Type
from .array import Array
from .dtypes import as_dtype, sum_type
from .elementwise import MAX_PLANS, apply
from .nodes import CoopReduceNode, ReduceNode
from .runtime import TRACES, launch
from .shapes import coalesce, normalize_axes, row_major, size_of

__all__ = ["sum", "prod", "max", "min", "mean", "var", "argmax", "argmin"]

#: reductions with no identity: an empty one is an error
_NEEDS_ONE = ("max", "min", "argmax", "argmin")


#: (op, shape, dtype, is_bool, axis, keepdims, acc, out type) -> (out shape, node, fallback): a warm
#: reduction looks its nodes up
_plans: dict[tuple, tuple] = {}


def _reduce(op: str, a: Array, axis: Any, keepdims: bool, acc: Type, out_type: Type, is_bool: bool) -> Array:
    if not isinstance(a, Array):
        raise ArrayError(f"{op} needs an Array, got {type(a).__name__}")

    def what() -> str:
        return f"{op}({a.describe()}, axis={axis!r})"
    key = (op, a.shape, a.dtype, a.is_bool, tuple(axis) if isinstance(axis, list) else axis, keepdims, acc,
           out_type)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= MAX_PLANS:
            _plans.clear()
        plan = _plans[key] = _plan(op, a, axis, keepdims, acc, out_type, what)
    shape, node, fallback = plan
    out = Array.empty(a.device, shape, out_type, is_bool)
    if out.size == 0:
        return out
    source = a
    if isinstance(node, CoopReduceNode) and a.dtype != acc:
        source = a.astype(acc)
    if TRACES:
        TRACES[-1].note(("reduce", op, source, axis, keepdims, out))
    launch(what, node, a.device, [(source.buffer, 0)], (out.buffer, 0), fallback)
    return out


def _plan(op: str, a: Array, axis: Any, keepdims: bool, acc: Type, out_type: Type, what) -> tuple:
    """``(out shape, node, fallback)`` of a reduction; raises ArrayError for a bad axis or an empty
    reduction without identity."""
    try:
        axes = normalize_axes(axis, a.ndim, "")
    except ArrayError as error:
        raise ArrayError(what() + str(error)) from None
    if op in ("argmax", "argmin") and axis is not None and len(axes) != 1:
        raise ArrayError(f"{what()}: takes one axis or None")
    kept = [i for i in range(a.ndim) if i not in axes]
    count = size_of([a.shape[i] for i in axes])
    if count == 0 and op in _NEEDS_ONE:
        raise ArrayError(f"{what()}: a zero-size reduction has no identity")
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
    else:
        shape = tuple(a.shape[i] for i in kept)
    if op in ("argmax", "argmin") and axis is None and keepdims:
        shape = (1,) * a.ndim
    own = row_major(a.shape)
    dims, (strides,) = coalesce(tuple(a.shape[i] for i in kept), [tuple(own[i] for i in kept)])
    red_dims, (red_strides,) = coalesce(tuple(a.shape[i] for i in axes), [tuple(own[i] for i in axes)])
    if not kept and op not in ("argmax", "argmin") and count > 0:
        # one cooperative reduction (of the array converted to the accumulating type), per lane where refused
        return shape, CoopReduceNode(op, count, acc), ReduceNode(op, dims, strides, red_dims, red_strides, acc,
                                                                  acc, out_type)
    return shape, ReduceNode(op, dims, strides, red_dims, red_strides, a.dtype, acc, out_type), None


def _acc_type(a: Array, dtype: Any, op: str) -> Type:
    if dtype is not None:
        return as_dtype(dtype, op)[0]
    return sum_type(a.dtype, a.is_bool)


def sum(a: Array, axis: Any = None, *, keepdims: bool = False, dtype: Any = None) -> Array:
    """The sum over ``axis`` (None: all), in NumPy's type (integers in 64 bits) or ``dtype``."""
    acc = _acc_type(a, dtype, "sum")
    return _reduce("sum", a, axis, keepdims, acc, acc, False)


def prod(a: Array, axis: Any = None, *, keepdims: bool = False, dtype: Any = None) -> Array:
    """The product over ``axis`` (None: all), in NumPy's type (integers in 64 bits) or ``dtype``."""
    acc = _acc_type(a, dtype, "prod")
    return _reduce("prod", a, axis, keepdims, acc, acc, False)


def max(a: Array, axis: Any = None, *, keepdims: bool = False) -> Array:
    """The maximum over ``axis`` (NaN propagates). Raises ArrayError for an empty reduction."""
    return _reduce("max", a, axis, keepdims, a.dtype, a.dtype, a.is_bool)


def min(a: Array, axis: Any = None, *, keepdims: bool = False) -> Array:
    """The minimum over ``axis`` (NaN propagates). Raises ArrayError for an empty reduction."""
    return _reduce("min", a, axis, keepdims, a.dtype, a.dtype, a.is_bool)


#: elements one lane folds in a flattened arg reduction: longer ones go in chunks (more lanes in
#: parallel, and under the loop limit some WebGPU devices have: llvmpipe ends a dispatch's loops at 60000)
ARG_CHUNK = 256


def _arg(op: str, a: Array, axis: Any, keepdims: bool) -> Array:
    if axis is not None or a.size <= ARG_CHUNK:
        return _reduce(op, a, axis, keepdims, a.dtype, Type.I64, False)
    # the first best of the chunks' bests (NaN: the first NaN), then the first best inside that chunk, all
    # on the device (no value comes to the host, so jit traces it): the chunk's start plus its inner index
    # is picked by comparing the chunk numbers with the best chunk
    from .creation import arange
    from .manipulation import concatenate
    flat = a.reshape(-1)
    whole = a.size - a.size % ARG_CHUNK
    rows = flat[:whole].reshape(-1, ARG_CHUNK)
    best = (max if op == "argmax" else min)(rows, 1)
    inner = _reduce(op, rows, 1, False, a.dtype, Type.I64, False)
    if whole < a.size:
        tail = flat[whole:]
        best = concatenate([best, (max if op == "argmax" else min)(tail, None, keepdims=True)])
        inner = concatenate([inner, _reduce(op, tail, None, True, a.dtype, Type.I64, False)])
    chunk = _arg(op, best, None, False)
    numbers = arange(best.size, dtype=Type.I64, device=a.device)
    picked = apply("where", apply("equal", numbers, chunk), apply("add", apply("multiply", numbers, ARG_CHUNK),
                                                                     inner), -1)
    index = max(picked, None)
    return index.reshape((1,) * a.ndim) if keepdims else index


def argmax(a: Array, axis: Any = None, *, keepdims: bool = False) -> Array:
    """The int64 index of the first maximum along ``axis`` (None: of the flattened array)."""
    return _arg("argmax", a, axis, keepdims)


def argmin(a: Array, axis: Any = None, *, keepdims: bool = False) -> Array:
    """The int64 index of the first minimum along ``axis`` (None: of the flattened array)."""
    return _arg("argmin", a, axis, keepdims)


def _mean_type(a: Array, dtype: Any) -> Type:
    if dtype is not None:
        return as_dtype(dtype, "mean")[0]
    return a.dtype if a.dtype.is_float() and not a.is_bool else Type.F64


def _count(a: Array, axis: Any) -> int:
    return size_of([a.shape[i] for i in normalize_axes(axis, a.ndim, "mean")])


def mean(a: Array, axis: Any = None, *, keepdims: bool = False, dtype: Any = None) -> Array:
    """The mean over ``axis`` (integers in float64, as NumPy); NaN for an empty reduction."""
    ty = _mean_type(a, dtype)
    total = sum(a, axis, keepdims=keepdims, dtype=ty)
    return apply("divide", total, float(_count(a, axis)) if _count(a, axis) else float("nan"))


def var(a: Array, axis: Any = None, *, keepdims: bool = False, ddof: int = 0) -> Array:
    """The variance ``mean(|a - mean(a)|**2)`` over ``axis`` with ``ddof`` degrees of freedom removed."""
    ty = a.dtype if a.dtype.is_float() else Type.F64
    centered = apply("subtract", a, mean(a, axis, keepdims=True, dtype=ty))
    total = sum(apply("multiply", centered, centered), axis, keepdims=keepdims, dtype=ty)
    return apply("divide", total, float(builtins.max(_count(a, axis) - ddof, 0)))
