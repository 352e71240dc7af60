"""``jit_to_kernel``: a function over ``atlas_web.numpy`` arrays, traced as ``jit`` traces it, written as a
JSON kernel (docs/translate.md), so a kernel written as Python runs wherever JSON kernels go and comes
back through ``kernel_function`` / ``json_to_program`` (tests/translate/test_export.py round-trips them).

The trace records, next to each launch, the array operation that made it (elementwise, ``astype``, a
reduction: its arguments and result arrays). Each becomes one op over named values: the function's array
arguments are the inputs (named as its parameters, else ``x0``, ``x1``, ...), each result a new value
``v1``, ``v2``, ..., Python numbers stay numbers, and the returned arrays are the outputs. What a kernel
cannot say is refused with ProgramError naming it: a launch made by anything else (matmul, reshape copies,
slices, concatenate, the NN ops), an array read under another shape than it was made with (a reshape), an
array made from host data (a constant), an operation with no per-lane form (power), what the kernel reader
or translator refuses (a reduction that is not the last operation, as in ``mean(x) + 1``), and values the
reader types differently from the trace (a reduction with ``dtype=``). The kernel returned translates
with ``json_to_program``. Standard library only.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import ProgramError
from ..numpy.array import Array
from ..numpy.dtypes import dtype_name
from .graph import FORMAT, REDUCTIONS, VERSION, kernel_ops, read_kernel
from .kernel import graph_to_program

__all__ = ["jit_to_kernel"]


def _parameter_names(fn: Any, count: int) -> list[str]:
    """Names for ``count`` array arguments: the function's positional parameters where it has them."""
    try:
        parameters = [p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        parameters = []
    return parameters if len(parameters) == count and len(set(parameters)) == count \
        else [f"x{k}" for k in range(count)]


def _arrays(result: Any, where: str) -> list[Array]:
    if isinstance(result, Array):
        return [result]
    if isinstance(result, (tuple, list)):
        return [a for k, r in enumerate(result) for a in _arrays(r, f"{where}[{k}]")]
    raise ProgramError(f"{where}: the function returned {type(result).__name__}, not arrays")


def jit_to_kernel(fn: Any, *args: Any, **kwargs: Any) -> dict:
    """The JSON kernel (a dict) of ``fn`` (a function over arrays, or an ``anp.jit`` function) traced with
    ``args`` (arrays and constants, as a jit call takes them). Raises ProgramError for what a kernel cannot
    say (see the module docstring), and what tracing raises."""
    from ..numpy.jit import JitFunction
    jitted = fn if isinstance(fn, JitFunction) else JitFunction(fn)
    name = jitted.__name__
    trace, result, proxies = jitted.trace(*args, **kwargs)
    where = f"jit_to_kernel({name})"
    values: dict[int, tuple[str, tuple[int, ...]]] = {}   # buffer id -> (value name, shape it was made with)
    inputs = []
    for value_name, proxy in zip(_parameter_names(jitted.fn, len(proxies)), proxies):
        values[id(proxy.buffer)] = (value_name, proxy.shape)
        inputs.append({"name": value_name, "shape": list(proxy.shape), "dtype": proxy.dtype_name})

    def ref(a: Any, what: str) -> Any:
        if not isinstance(a, Array):
            return a
        found = values.get(id(a.buffer))
        if found is None:
            raise ProgramError(f"{where}: {what} reads {a.describe()}, an array made from host data or by an "
                               "operation a kernel cannot say (kernels take only their inputs and numbers)")
        if found[1] != a.shape:
            raise ProgramError(f"{where}: {what} reads {found[0]} of shape {found[1]} as {a.describe()} (a "
                               "reshape: not a kernel operation)")
        return found[0]

    claimed = set()
    ops, allowed = [], set(kernel_ops())
    for entry in trace.ops:
        kind, out = entry[0], entry[-1]
        if kind == "elementwise":
            _, op, operands, _ = entry
            what = f"ops[{len(ops)}] ({op})"
            if op not in allowed:
                raise ProgramError(f"{where}: {what} has no per-lane form a kernel can use (operations: "
                                   f"{', '.join(sorted(allowed))})")
            op_json = {"op": op, "in": [ref(a, what) for a in operands]}
        elif kind == "astype":
            _, source, _ = entry
            what = f"ops[{len(ops)}] (astype)"
            op_json = {"op": "astype", "in": [ref(source, what)], "dtype": out.dtype_name}
        else:
            _, op, source, axis, keepdims, _ = entry
            what = f"ops[{len(ops)}] ({op})"
            if op not in REDUCTIONS:
                raise ProgramError(f"{where}: {what} is not a kernel reduction (reductions: {', '.join(REDUCTIONS)})")
            op_json = {"op": op, "in": [ref(source, what)], "axis": list(axis) if isinstance(axis, tuple) else axis,
                       "keepdims": bool(keepdims)}
        value_name = f"v{len(ops) + 1}"
        op_json["out"] = value_name
        values[id(out.buffer)] = (value_name, out.shape)
        claimed.add(id(out.buffer))
        ops.append((op_json, out))
    for record in trace.records:
        if record.out is None or id(record.out[0]) not in claimed:
            raise ProgramError(f"{where}: the launch {record.what!r} is not a kernel operation (kernels hold "
                               "elementwise operations, astype and one final sum/prod/max/min)")
    outputs = [ref(a, f"output {k}") for k, a in enumerate(_arrays(result, where))]
    kernel = {"format": FORMAT, "version": VERSION, "name": name, "inputs": inputs,
              "ops": [op for op, _ in ops], "outputs": outputs}
    try:
        graph = read_kernel(kernel)
        graph_to_program(graph)   # it translates (a reduction last, few enough presets): it runs everywhere
    except ProgramError as error:
        raise ProgramError(f"{where}: the function is not a kernel: {error}") from None
    for (op_json, out), made in zip(ops, graph.ops):
        if made.result.shape != out.shape or dtype_name(made.result.dtype, made.result.is_bool) != out.dtype_name:
            raise ProgramError(f"{where}: {op_json['out']} ({op_json['op']}) is {out.describe()} in the function, "
                               f"{made.result.dtype_name}{list(made.result.shape)} as a kernel op")
    return kernel
