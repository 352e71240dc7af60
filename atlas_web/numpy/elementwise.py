"""Elementwise operations with NumPy broadcasting and Python scalars (the rows of ops_table.OPS).

Same-shape arrays of the computing type run as one cooperative map (ParallelMap / ParallelMapBinary);
anything else (broadcasting, scalars, conversions, comparisons, ``where``) runs as a per-lane program
that reads each operand at its broadcast strides, with Python scalars as preset registers (so a new
scalar value does not make a new program). Standard library only.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArrayError
from ..isa.types import Type
from .array import Array
from .dtypes import BOOL, float_for, promote, promote_scalar
from .nodes import CoopMapNode, MapNode, Operand
from .ops_table import OPS
from .runtime import launch
from .shapes import broadcast_shapes, broadcast_strides, coalesce, row_major

__all__ = ["apply", "common_device", "result_type"]


def common_device(what: str, arrays: list[Array]):
    """The one device of ``arrays``; raises ArrayError naming ``what`` when they live on several."""
    device = arrays[0].device
    for a in arrays[1:]:
        if a.device is not device:
            raise ArrayError(f"{what}: the arrays live on different devices ({device.name} and {a.device.name}); "
                             "move one with atlas_web.numpy.array(x, device=...)")
    return device


def result_type(what: str, args: tuple[Any, ...]) -> tuple[Type, bool]:
    """NumPy's result type of the arrays and Python scalars ``args`` (NEP 50)."""
    arrays = [a for a in args if isinstance(a, Array)]
    dtype = (arrays[0].dtype, arrays[0].is_bool)
    for a in arrays[1:]:
        dtype = promote(dtype, (a.dtype, a.is_bool))
    for value in args:
        if not isinstance(value, Array):
            try:
                dtype = promote_scalar(dtype, value)
            except ArrayError as error:
                raise ArrayError(f"{what}: {error}") from None
    return dtype


def _types(row, args: tuple[Any, ...]) -> tuple[Type, Type, bool]:
    """``(computing type, stored type, is_bool)`` of ``row`` over ``args``."""
    operands = args[1:] if row.result == "select" else args
    ty, is_bool = result_type(row.name, operands)
    if row.result == "bool":
        return ty, BOOL, True
    if row.result == "float" or (row.result == "div" and not ty.is_float()):
        ty = float_for(ty) if row.result == "float" else Type.F64
        return ty, ty, False
    if is_bool and row.result == "select":
        return BOOL, BOOL, True
    return ty, ty, is_bool and row.name in ("copy", "maximum", "minimum")


def _describe(args: tuple[Any, ...]) -> str:
    return ", ".join(a.describe() if isinstance(a, Array) else repr(a) for a in args)


def apply(name: str, *args: Any) -> Array:
    """``name`` (a row of ops_table.OPS) over ``args`` (Arrays and Python scalars, at least one Array; a
    lone scalar is made an array on the default device). Raises ArrayError for shapes that do not
    broadcast, non-numbers or arrays on different devices; UnsupportedOperation where the device has no
    instruction for the types."""
    row = OPS[name]
    if len(args) != row.arity:
        raise ArrayError(f"{name} takes {row.arity} arguments, got {len(args)}")
    if not any(isinstance(a, Array) for a in args):
        from .creation import asarray
        args = (asarray(args[0]), *args[1:])
    if row.result == "select" and not isinstance(args[0], Array):
        from .creation import full
        args = (full((), bool(args[0]), bool, next(a for a in args if isinstance(a, Array)).device), *args[1:])
    if row.result == "select" and not args[0].is_bool:
        args = (apply("not_equal", args[0], 0), *args[1:])
    arrays = [a for a in args if isinstance(a, Array)]
    device = common_device(name, arrays)
    compute, stored, is_bool = _types(row, args)
    what = f"{name}({_describe(args)})"
    shape = broadcast_shapes(what, *(a.shape for a in arrays))
    out = Array.empty(device, shape, stored, is_bool)
    if out.size == 0:
        return out
    node, fallback = _nodes(row, args, shape, compute, stored)
    if row.body is None and not isinstance(node, CoopMapNode):
        # no per-lane form: materialize the broadcast operands in the computing type, then map
        args = tuple(_materialized(a, shape, compute, device) for a in args)
        node, fallback = _nodes(row, args, shape, compute, stored)
    operands = [(a.buffer, 0) if isinstance(a, Array) else a for a in args]
    launch(what, node, device, operands, (out.buffer, 0), fallback)
    return out


def _materialized(value: Any, shape: tuple[int, ...], ty: Type, device) -> Array:
    from .creation import full
    from .manipulation import broadcast_to
    if not isinstance(value, Array):
        return full(shape, value, ty, device)
    return broadcast_to(value.astype(ty) if value.dtype != ty or value.is_bool else value, shape)


def _nodes(row, args: tuple[Any, ...], shape: tuple[int, ...], compute: Type, stored: Type):
    """The node computing ``row`` over ``args``: a cooperative map (with the per-lane node as fallback)
    where every operand is a same-shape array of the computing type, else the per-lane node."""
    arrays = [a for a in args if isinstance(a, Array)]
    same = (row.cooperative is not None and len(arrays) == len(args) and compute == stored
            and all(a.shape == shape and a.dtype == compute and not a.is_bool for a in arrays))
    count = 1
    for d in shape:
        count *= d
    per_lane = _map_node(row.name, args, shape, compute, stored) if row.body is not None else None
    if same:
        return CoopMapNode(row.name, count, row.arity, compute), per_lane
    return per_lane, None


def _map_node(name: str, args: tuple[Any, ...], shape: tuple[int, ...], compute: Type, stored: Type) -> MapNode:
    strides = [broadcast_strides(a.shape, shape) for a in args if isinstance(a, Array)]
    dims, merged = coalesce(shape, [*strides, row_major(shape)])
    it = iter(merged)
    inputs = tuple(Operand(a.dtype, next(it)) if isinstance(a, Array) else Operand(compute, None) for a in args)
    return MapNode(name, dims, inputs, compute, stored, next(it))
