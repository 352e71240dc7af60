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
from .runtime import EXIT_HOOKS, TRACES, launch
from .shapes import broadcast_shapes, broadcast_strides, coalesce, row_major

__all__ = ["apply", "common_device", "result_type", "operation_types"]


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


def operation_types(row, args: tuple[Any, ...]) -> tuple[Type, Type, bool]:
    """``(computing type, stored type, is_bool)`` of the ops_table row ``row`` over ``args`` (arrays, or
    anything with their ``dtype``/``is_bool``, and Python scalars); raises ArrayError for operands that do not
    promote."""
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


#: (operation, operand signature) -> the plan of a call (see ``_plan``).
#: A warm call looks its plan up instead of promoting, broadcasting and building nodes again.
_plans: dict[tuple, tuple] = {}
#: the most plans kept (each is a few small tuples)
MAX_PLANS = 4096


def _signature(args: tuple[Any, ...]) -> tuple | None:
    """What a plan depends on: each array's shape and dtype, each scalar's Python type (NEP 50: not its
    value). None where an argument is neither (the slow path raises the error)."""
    out = []
    for a in args:
        if isinstance(a, Array):
            out.append((a.shape, a.dtype, a.is_bool))
        elif type(a) in (bool, int, float):
            out.append(type(a))
        else:
            return None
    return tuple(out)


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
    key = (name, _signature(args), bool(TRACES))
    plan = _plans.get(key)
    if plan is None:
        plan = _plan(row, args, device, splat=not TRACES)
        if key[1] is not None:
            if len(_plans) >= MAX_PLANS:  # many shapes seen: start again rather than grow without end
                _plans.clear()
            _plans[key] = plan
    shape, stored, is_bool, node, fallback, scalar = plan
    out = Array.empty(device, shape, stored, is_bool)
    if TRACES:
        TRACES[-1].note(("elementwise", name, args, out))
    if out.size == 0:
        return out
    if isinstance(node, CoopMapNode) and len(arrays) < len(args):  # a scalar as a constant array
        args = tuple(a if isinstance(a, Array) else _splat(device, scalar(a), node.ty, shape) for a in args)
    if node is None:  # no per-lane form and broadcast operands: materialize them, then map
        args = tuple(_materialized(a, shape, fallback, device) for a in args)
        node, fallback = _nodes(row, args, shape, fallback, stored)
    operands = [(a.buffer, 0) if isinstance(a, Array) else scalar(a) for a in args]
    launch(lambda: f"{name}({_describe(args)})", node, device, operands, (out.buffer, 0), fallback)
    return out


def _plan(row, args: tuple[Any, ...], device, splat: bool = True) -> tuple:
    """``(shape, stored type, is_bool, node, fallback, scalar conversion)`` of ``row`` over ``args``; node
    None (and the computing type in the fallback's place) where the operands must be materialized first.
    ``splat`` False (while jit traces): scalars stay preset registers, never constant arrays."""
    compute, stored, is_bool = operation_types(row, args)
    what = f"{row.name}({_describe(args)})"
    shape = broadcast_shapes(what, *(a.shape for a in args if isinstance(a, Array)))
    count = 1
    for d in shape:
        count *= d
    if splat and count >= SPLAT_MIN and row.cooperative is not None and row.arity == 2:
        # plan as if the scalar were an array of the shape (apply puts a cached constant array there)
        args = tuple(a if isinstance(a, Array) else Array(None, shape, compute) for a in args)  # type: ignore[arg-type]
    node, fallback = _nodes(row, args, shape, compute, stored)
    scalar = float if compute.is_float() else int  # a scalar preset of the computing type (True -> 1)
    if row.body is None and not isinstance(node, CoopMapNode):
        return shape, stored, is_bool, None, compute, scalar
    return shape, stored, is_bool, node, fallback, scalar


#: elements from which a Python scalar with a same-shape array goes to the cooperative map as a constant
#: array (cached) rather than as a preset of a per-lane program: per-lane programs with presets run the
#: wasm backend's scalar lane loop (~20 ns a lane here), the cooperative map its SIMD kernel
SPLAT_MIN = 1 << 16
#: the most bytes of constant arrays kept
SPLAT_BYTES = 32 << 20
_splats: dict[tuple, Array] = {}
EXIT_HOOKS.append(_splats.clear)


def _splat(device, value: Any, ty: Type, shape: tuple[int, ...]) -> Array:
    """An array of ``shape`` filled with ``value`` as ``ty`` on ``device``, from a small cache (arrays are
    never written after they are made, so sharing one is safe)."""
    from .creation import full
    from .host import element_bytes
    key = (device, ty, element_bytes(value, ty), shape)  # bytes: -0.0 and 0.0 differ, NaN finds itself
    found = _splats.pop(key, None)
    if found is None or device._closed:
        found = full(shape, value, ty, device)
    _splats[key] = found  # most recently used last
    while sum(a.nbytes for a in _splats.values()) > SPLAT_BYTES and len(_splats) > 1:
        _splats.pop(next(iter(_splats)))
    return found


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
