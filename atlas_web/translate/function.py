"""``kernel_function``: a JSON kernel as a Python function over ``atlas_web.numpy`` arrays, so a kernel
runs eagerly or under ``jit`` (which traces it like any function and fuses its chain). Standard library
only."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .. import numpy as anp
from ..errors import ProgramError
from .graph import read_kernel

__all__ = ["kernel_function"]


def kernel_function(kernel: Any) -> Callable[..., Any]:
    """A function of the kernel's inputs (positional in declaration order, or by name) returning its
    output array, or a tuple of them for several outputs. Raises ProgramError as ``json_to_program`` for
    a malformed kernel, and for missing or extra arguments when called."""
    graph = read_kernel(kernel)
    names = [v.name for v in graph.inputs]

    def fn(*args: Any, **kwargs: Any) -> Any:
        if len(args) > len(names) or set(kwargs) - set(names[len(args):]):
            raise ProgramError(f"kernel function: takes inputs {', '.join(names)}")
        values = dict(zip(names, args), **kwargs)
        missing = [n for n in names if n not in values]
        if missing:
            raise ProgramError(f"kernel function: missing input(s) {', '.join(missing)}")
        for v in graph.inputs:
            values[v.name] = anp.asarray(values[v.name], dtype="bool" if v.is_bool else v.dtype)
        for op in graph.ops:
            args_ = [values[a] if isinstance(a, str) else a for a in op.args]
            if op.axes is not None:
                values[op.result.name] = getattr(anp, op.op)(args_[0], axis=op.axes, keepdims=op.keepdims)
            elif op.op == "copy":
                values[op.result.name] = anp.astype(args_[0], op.result.dtype)
            else:
                values[op.result.name] = getattr(anp, op.op)(*args_)
        out = tuple(values[v.name] for v in graph.outputs)
        return out[0] if len(out) == 1 else out

    fn.__name__ = fn.__qualname__ = str(kernel.get("name", "kernel") if isinstance(kernel, dict) else "kernel")
    # the inputs' names as parameters: jit_to_kernel names a traced function's inputs by them
    fn.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                          for n in names])  # type: ignore[attr-defined]
    return fn
