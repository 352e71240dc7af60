"""A JSON kernel read and checked: named inputs with shapes and dtypes, elementwise operations over named
values and Python numbers (NumPy broadcasting and NEP 50 promotion, as ``atlas_web.numpy`` computes
them), named outputs. See docs/translate.md for the schema.

Every error is a ProgramError naming where it is (``ops[2] (multiply)``, ``inputs[0].shape``, the value
or wire) and what does not fit. Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import ArrayError, ProgramError
from ..isa.types import Type
from ..numpy.array import Array
from ..numpy.dtypes import as_dtype, dtype_name, sum_type
from ..numpy.elementwise import operation_types
from ..numpy.ops_table import OPS
from ..numpy.shapes import broadcast_shapes, normalize_axes

__all__ = ["FORMAT", "VERSION", "ALIASES", "REDUCTIONS", "Value", "Op", "Graph", "read_kernel", "kernel_ops"]

FORMAT = "atlas-web-kernel"
VERSION = 1
#: short spellings accepted for the OPS rows (the circuit gates' names)
ALIASES = {"sub": "subtract", "mul": "multiply", "div": "divide", "max": "maximum", "min": "minimum",
           "neg": "negative", "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
           "gt": "greater", "ge": "greater_equal", "select": "where", "swish": "silu"}
#: the reductions a kernel may end with (attributes ``axis``: an int, a list or null for all; ``keepdims``)
REDUCTIONS = ("sum", "prod", "max", "min")


def canonical(name: Any, arguments: Any) -> Any:
    """The kernel spelling of operation ``name`` given its ``in`` list: ``max``/``min`` of one argument
    are the reductions, of two ``maximum``/``minimum`` (as NumPy's max and maximum); other short
    spellings their ALIASES entry. Anything else is returned as it is (checked later)."""
    if name in ("max", "min") and isinstance(arguments, list) and len(arguments) == 1:
        return name
    return ALIASES.get(name, name) if isinstance(name, str) else name


def kernel_ops() -> list[str]:
    """The operation names a kernel may use: the per-lane rows of atlas_web.numpy's table, and astype."""
    return sorted([name for name, row in OPS.items() if row.body is not None and name != "copy"] + ["astype"]
                  + list(REDUCTIONS))


@dataclass(frozen=True)
class Value:
    """A named array of the graph: its shape and element type (``is_bool``: a boolean array, stored U8)."""

    name: str
    shape: tuple[int, ...]
    dtype: Type
    is_bool: bool = False

    @property
    def dtype_name(self) -> str:
        return dtype_name(self.dtype, self.is_bool)


@dataclass(frozen=True)
class Op:
    """One operation: the OPS row ``op`` ("copy" for astype) over ``args`` (value names or Python
    numbers), computed in ``compute`` and stored as ``result``'s type; or a reduction (REDUCTIONS) of its
    one argument over ``axes``, accumulated in ``compute``."""

    op: str
    args: tuple[str | int | float | bool, ...]
    result: Value
    compute: Type
    axes: tuple[int, ...] | None = None
    keepdims: bool = False


@dataclass(frozen=True)
class Graph:
    inputs: tuple[Value, ...]
    ops: tuple[Op, ...]
    outputs: tuple[Value, ...]


def _fail(where: str, reason: str) -> ProgramError:
    return ProgramError(f"{where}: {reason}")


def _object(obj: Any, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    if not isinstance(obj, dict):
        raise _fail(where, f"expected an object, got {type(obj).__name__}")
    missing = [k for k in required if k not in obj]
    extra = [k for k in obj if k not in required and k not in optional]
    if missing:
        raise _fail(where, f"missing {', '.join(map(repr, missing))}")
    if extra:
        raise _fail(where, f"unknown field(s) {', '.join(map(repr, extra))} (fields: "
                           f"{', '.join(required + optional)})")
    return obj


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(where, f"expected a non-empty name, got {value!r}")
    return value


def _shape(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in value):
        raise _fail(where, f"expected a list of sizes >= 0, got {value!r}")
    return tuple(value)


def _dtype(value: Any, where: str) -> tuple[Type, bool]:
    try:
        return as_dtype(value, where)
    except ArrayError as error:
        raise ProgramError(str(error)) from None


def _placeholder(v: Value) -> Array:
    """A type-only stand-in of ``v`` for atlas_web.numpy's promotion rules (no buffer)."""
    return Array(None, v.shape, v.dtype, v.is_bool)  # type: ignore[arg-type]


def _op_row(name: Any, where: str) -> str:
    name = _name(name, f"{where}.op")
    if name == "astype" or name in REDUCTIONS:
        return name
    row = OPS.get(name)
    if row is None or row.body is None or name == "copy":
        why = "has no per-lane form" if row is not None and name != "copy" else "is not an operation"
        raise _fail(where, f"{name!r} {why} (operations: {', '.join(kernel_ops())})")
    return name


def read_kernel(kernel: Any, words: tuple[str, str, str] = ("ops", "value", "defined")) -> Graph:
    """The Graph of ``kernel`` (a dict, or its JSON text), checked: unknown fields and operations, a value
    used before it is defined or defined twice, arities, shapes that do not broadcast, dtypes without an
    array form, outputs that are not values. Raises ProgramError naming the place; ``words`` name the
    operations, the values and their definition in the messages (a circuit's: gates, wire, driven)."""
    if isinstance(kernel, (str, bytes)):
        try:
            kernel = json.loads(kernel)
        except ValueError as error:
            raise ProgramError(f"kernel: not JSON ({error})") from None
    _object(kernel, "kernel", ("inputs", "ops", "outputs"), ("format", "version", "name"))
    if kernel.get("format", FORMAT) != FORMAT or kernel.get("version", VERSION) != VERSION:
        raise _fail("kernel", f"format must be {FORMAT!r} version {VERSION}, got {kernel.get('format')!r} "
                              f"version {kernel.get('version')!r}")
    values: dict[str, Value] = {}
    inputs = []
    for k, entry in enumerate(_list(kernel["inputs"], "inputs")):
        where = f"inputs[{k}]"
        _object(entry, where, ("name", "shape", "dtype"))
        name = _name(entry["name"], f"{where}.name")
        if name in values:
            raise _fail(where, f"input {name!r} is declared twice")
        ty, is_bool = _dtype(entry["dtype"], f"{where}.dtype")
        values[name] = Value(name, _shape(entry["shape"], f"{where}.shape"), ty, is_bool)
        inputs.append(values[name])
    ops = [_read_op(k, entry, values, words) for k, entry in enumerate(_list(kernel["ops"], words[0]))]
    outputs = []
    for k, name in enumerate(_list(kernel["outputs"], "outputs")):
        name = _name(name, f"outputs[{k}]")
        if name not in values:
            raise _fail(f"outputs[{k}]", f"{words[1]} {name!r} is not an input or the result of an operation")
        outputs.append(values[name])
    if not outputs:
        raise _fail("outputs", "a kernel needs at least one output")
    return Graph(tuple(inputs), tuple(ops), tuple(outputs))


def _list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise _fail(where, f"expected a list, got {type(value).__name__}")
    return value


def _read_op(k: int, entry: Any, values: dict[str, Value], words: tuple[str, str, str]) -> Op:
    section, noun, defined = words
    where = f"{section}[{k}]"
    _object(entry, where, ("op", "in", "out"), ("dtype", "axis", "keepdims"))
    op = _op_row(canonical(entry["op"], entry["in"]), where)
    if op not in REDUCTIONS and ("axis" in entry or "keepdims" in entry):
        raise _fail(f"{where} ({op})", "axis and keepdims are the reductions' attributes")
    where = f"{section}[{k}] ({op})"
    args = []
    for j, arg in enumerate(_list(entry["in"], f"{where}.in")):
        if isinstance(arg, str):
            if arg not in values:
                raise _fail(where, f"in[{j}]: {noun} {arg!r} is used before it is {defined} (inputs and earlier "
                                   f"outputs: {', '.join(values) or 'none'})")
            args.append(arg)
        elif isinstance(arg, (int, float)):
            args.append(arg)
        else:
            raise _fail(where, f"in[{j}] must be a {noun} name or a number, got {arg!r}")
    arity = 1 if op == "astype" or op in REDUCTIONS else OPS[op].arity
    if len(args) != arity:
        raise _fail(where, f"takes {arity} input(s), got {len(args)}")
    if not any(isinstance(a, str) for a in args):
        raise _fail(where, "needs at least one array input (numbers alone have no shape)")
    if ("dtype" in entry) != (op == "astype"):
        raise _fail(where, "dtype is astype's attribute (and astype needs it)")
    out = _name(entry["out"], f"{where}.out")
    if out in values:
        raise _fail(where, f"out: {noun} {out!r} is already {defined} (each {noun} is {defined} once)")
    arrays = [values[a] for a in args if isinstance(a, str)]
    if op in REDUCTIONS:
        return _reduction(where, op, entry, arrays[0], out, values)
    try:
        shape = broadcast_shapes(where, *(v.shape for v in arrays))
    except ArrayError as error:
        raise ProgramError(str(error)) from None
    if op == "astype":
        ty, is_bool = _dtype(entry["dtype"], f"{where}.dtype")
        if is_bool:  # as atlas_web.numpy: a != 0
            return _typed(where, "not_equal", (args[0], 0), out, shape, values)
        result = values[out] = Value(out, shape, ty)
        return Op("copy", tuple(args), result, ty)
    return _typed(where, op, tuple(args), out, shape, values)


def _typed(where: str, op: str, args: tuple, out: str, shape: tuple[int, ...], values: dict[str, Value]) -> Op:
    typed = tuple(_placeholder(values[a]) if isinstance(a, str) else a for a in args)
    try:
        compute, stored, is_bool = operation_types(OPS[op], typed)
    except ArrayError as error:
        raise _fail(where, str(error)) from None
    if OPS[op].floats_only and not compute.is_float():
        raise _fail(where, f"needs a float input, got {', '.join(getattr(a, 'dtype_name', repr(a)) for a in typed)}")
    result = values[out] = Value(out, shape, stored, is_bool)
    return Op(op, args, result, compute)


def _reduction(where: str, op: str, entry: dict, x: Value, out: str, values: dict[str, Value]) -> Op:
    keepdims = entry.get("keepdims", False)
    if not isinstance(keepdims, bool):
        raise _fail(where, f"keepdims must be true or false, got {keepdims!r}")
    try:
        axes = normalize_axes(entry.get("axis"), len(x.shape), where)
    except ArrayError as error:
        raise ProgramError(str(error)) from None
    if op in ("max", "min") and any(x.shape[a] == 0 for a in axes):
        raise _fail(where, f"a zero-size reduction of {x.name!r} {x.shape} has no identity")
    acc = sum_type(x.dtype, x.is_bool) if op in ("sum", "prod") else x.dtype
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes)
    result = values[out] = Value(out, shape, acc, x.is_bool and op in ("max", "min"))
    return Op(op, (x.name,), result, acc, axes, keepdims)
