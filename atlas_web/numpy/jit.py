"""``jit``: a function over arrays traced once per signature, fused, and then only launched.

    @anp.jit
    def f(x):
        y = anp.relu(2 * x - 0.5)
        return y, anp.dot(y, x)

Calling ``f`` with arrays of shapes/dtypes (and a device) it has not seen runs the function once over
placeholder arrays: every operation plans as eager evaluation does, but its launch is recorded instead
of run (a *trace*). atlas_web/numpy/fusion.py rewrites the trace into fewer launches (elementwise chains
as one pass, reductions computing what feeds them) and the result is cached under the signature: a
later call with the same signature allocates the results and launches the fused programs, nothing else.

The signature: each array argument's shape, dtype and device; each other argument's type and value (a
Python scalar or anything hashable is a constant of the trace: a new value traces again). The function
must return an Array or a (nested) tuple/list of Arrays, and must not look at values while tracing
(``item()``, ``if x > 0:``, ``to_host()`` raise ArrayError saying so). Arrays it makes from host data
(``anp.array(...)``, ``full``) are constants, captured once. Standard library only.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..errors import ArrayError
from . import codegen_fused  # noqa: F401  (registers the fused nodes' programs)
from .array import Array
from .epilogue import fuse_epilogues, written_buffers
from .fusion import Record, Step, fuse
from .runtime import TRACES, DeviceBuffer, as_device, launch

__all__ = ["jit", "JitFunction"]


class _Placeholder:
    """The buffer of an argument while tracing: it has a device and a size, no memory."""

    __slots__ = ("device", "nbytes", "handle", "__weakref__")

    def __init__(self, device: Any, nbytes: int) -> None:
        self.device, self.nbytes, self.handle = device, nbytes, None


class _Trace:
    """The launches of one traced call on ``device``, in order, and which buffers hold traced values."""

    def __init__(self, name: str, device: Any, placeholders: list[_Placeholder]) -> None:
        self.name, self.device = name, device
        self.records: list[Record] = []
        #: the array operations that made the launches (elementwise, astype, reduce entries: the Arrays
        #: themselves), for atlas_web.translate.jit_to_kernel
        self.ops: list[tuple] = []
        self.traced = {id(p) for p in placeholders}
        self.keep: list = list(placeholders)  # ids stay valid while the trace lives

    def record(self, what: Any, node: object, fallback: object, operands: list, out: Any) -> None:
        text = what() if callable(what) else what
        self.records.append(Record(text, node, fallback, list(operands), out))
        if out is not None:
            self.traced.add(id(out[0]))
            self.keep.append(out[0])

    def note(self, entry: tuple) -> None:
        """Record the array operation ``entry`` (its kind, operation, arguments and result Array)."""
        self.ops.append(entry)

    def check_read(self, array: Array) -> None:
        if id(array.buffer) in self.traced:
            raise ArrayError(f"jit({self.name}): the values of {array.describe()} are not known while tracing "
                             "(item(), to_host(), tolist(), bool() or a Python if on a traced array); compute "
                             "with array operations, or call the function without jit")


class _Plan:
    """A traced, fused function: its launches over slots (0 .. inputs-1 the arguments' buffers, then the
    buffers each call allocates) and constants, and how to build its result."""

    def __init__(self, device: Any, steps: list[Step], placeholders: list[_Placeholder], result: Any) -> None:
        self.device = device
        slots: dict[int, int] = {id(p): i for i, p in enumerate(placeholders)}
        self.sizes: list[int] = []   # bytes of each allocated slot
        self.inputs = len(placeholders)

        def ref(value: Any) -> tuple:
            if not isinstance(value, tuple):
                return ("scalar", value)
            buffer, base = value
            if id(buffer) not in slots and not isinstance(buffer, DeviceBuffer):
                raise ArrayError("jit: a launch reads a buffer that is neither an argument nor made in the trace")
            slot = slots.get(id(buffer))
            if slot is None:
                if id(buffer) not in written:
                    return ("constant", buffer, base)   # made from host data while tracing: kept
                slot = slots[id(buffer)] = self.inputs + len(self.sizes)
                self.sizes.append(buffer.nbytes)
            return ("slot", slot, base)

        written = set().union(*map(written_buffers, steps))
        self.steps = [(s.what, s.node, s.fallback, [ref(v) for v in s.operands],
                       None if s.out is None else ref(s.out)) for s in steps]
        self.result = _template(result, ref)
        self.launches = len(steps)

    def run(self, arrays: list[Array]) -> Any:
        buffers: list[Any] = [a.buffer for a in arrays]
        buffers.extend(DeviceBuffer(self.device, n) for n in self.sizes)

        def value(r: tuple) -> Any:
            kind = r[0]
            if kind == "slot":
                return (buffers[r[1]], r[2])
            if kind == "constant":
                return (r[1], r[2])
            return r[1]
        for what, node, fallback, operands, out in self.steps:
            launch(what, node, self.device, [value(r) for r in operands], None if out is None else value(out),
                   fallback)
        return _build(self.result, value)


def _template(result: Any, ref: Callable) -> Any:
    """The result's structure with each Array as ("array", buffer reference, shape, dtype, is_bool)."""
    if isinstance(result, Array):
        return ("array", ref((result.buffer, 0)), result.shape, result.dtype, result.is_bool)
    if isinstance(result, (tuple, list)):
        return (type(result), [_template(r, ref) for r in result])
    raise ArrayError(f"jit: the function returned {type(result).__name__}; return an Array or a tuple/list "
                     "of Arrays")


def _build(template: Any, value: Callable) -> Any:
    if template[0] == "array":
        _, r, shape, dtype, is_bool = template
        return Array(value(r)[0], shape, dtype, is_bool)
    kind, items = template
    return kind(_build(t, value) for t in items)


def _outputs(template: Any, found: list) -> list:
    if template[0] == "array":
        found.append(template[1])
    else:
        for t in template[1]:
            _outputs(t, found)
    return found


class JitFunction:
    """``fn`` compiled per signature (see the module's docstring); call it as ``fn``. ``device``: where
    a call with no array arguments runs (default: the default device). ``epilogues``: a matmul's elementwise
    consumers run in its GEMM's launch where they can (atlas_web/numpy/epilogue.py); False keeps the GEMM's
    launch and the fused pass's apart (same bits; benchmarks/jit_epilogue.py compares the two)."""

    def __init__(self, fn: Callable, device: Any = None, *, epilogues: bool = True) -> None:
        self.fn = fn
        self.device = device
        self.epilogues = bool(epilogues)
        self.plans: dict[tuple, _Plan] = {}
        functools.update_wrapper(self, fn)

    def _signature(self, args: tuple) -> tuple:
        key = []
        for a in args:
            if isinstance(a, Array):
                key.append((Array, a.shape, a.dtype, a.is_bool, a.device))  # the device by identity
            else:
                try:
                    hash(a)
                except TypeError:
                    raise ArrayError(f"jit({self.__name__}): argument {a!r} is neither an Array nor hashable "
                                     "(non-array arguments are constants of the trace)") from None
                key.append((type(a), a))
        return tuple(key)

    def _plan(self, args: tuple, kwargs: dict) -> tuple["_Plan", list[Array]]:
        key = self._signature(args + tuple(kwargs.values())) + tuple(kwargs)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = self._trace(args, kwargs)
        return plan, [a for a in args if isinstance(a, Array)]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``: traced and fused on a new signature, launched (keyword arguments are
        constants of the trace, as non-array positional ones). Raises what ``fn`` raises while tracing,
        ArrayError for arrays on different devices, an array keyword argument or a result that is not
        arrays, and UnsupportedOperation or AtlasTrap from the launches."""
        plan, arrays = self._plan(args, kwargs)
        return plan.run(arrays)

    async def async_call(self, *args: Any, **kwargs: Any) -> Any:
        """As calling: the launches are queued as eager ones are (read results with ``to_host_async``)."""
        return self(*args, **kwargs)

    def trace_steps(self, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
        """``(node class, description)`` of each launch a call with these arguments makes (tracing if
        needed)."""
        plan, _ = self._plan(args, kwargs)
        return [(type(node).__name__, what) for what, node, *_ in plan.steps]

    def trace(self, *args: Any, **kwargs: Any) -> tuple["_Trace", Any, list[Array]]:
        """Run the function once over placeholders of ``args``' arrays, recording its launches: (the trace,
        the function's result over placeholders, the placeholder arrays in argument order). Raises as a
        call does while tracing."""
        if any(isinstance(v, Array) for v in kwargs.values()):
            raise ArrayError(f"jit({self.__name__}): pass arrays as positional arguments, not by keyword")
        arrays = [a for a in args if isinstance(a, Array)]
        device = arrays[0].device if arrays else as_device(self.device)
        for a in arrays:
            if a.device is not device:
                raise ArrayError(f"jit({self.__name__}): the arrays live on different devices "
                                 f"({device.name} and {a.device.name})")
        placeholders = [_Placeholder(device, a.nbytes) for a in arrays]
        proxies = [Array(p, a.shape, a.dtype, a.is_bool)  # type: ignore[arg-type]
                   for p, a in zip(placeholders, arrays)]
        it = iter(proxies)
        traced_args = [next(it) if isinstance(a, Array) else a for a in args]
        trace = _Trace(self.__name__, device, placeholders)
        TRACES.append(trace)
        try:
            result = self.fn(*traced_args, **kwargs)
        finally:
            TRACES.pop()
        trace.keep.append(result)
        return trace, result, proxies

    def _trace(self, args: tuple, kwargs: dict) -> _Plan:
        trace, result, proxies = self.trace(*args, **kwargs)
        device = trace.device
        outputs = [r[1] for r in _outputs(_template(result, lambda v: ("buffer", v[0])), [])]
        steps = fuse(trace.records, outputs)
        if self.epilogues:
            steps = fuse_epilogues(steps, device.supports)
        return _Plan(device, steps, [p.buffer for p in proxies], result)

    def to_kernel(self, *args: Any, **kwargs: Any) -> dict:
        """The function traced with ``args`` as a JSON kernel (atlas_web.translate.jit_to_kernel)."""
        from ..translate.export import jit_to_kernel
        return jit_to_kernel(self, *args, **kwargs)


def jit(fn: Callable | None = None, *, device: Any = None, epilogues: bool = True) -> Any:
    """``fn`` traced and fused once per signature (see atlas_web/numpy/jit.py); usable as ``@jit`` or
    ``@jit(device=..., epilogues=...)`` (see JitFunction)."""
    if fn is None:
        return lambda f: JitFunction(f, device, epilogues=epilogues)
    return JitFunction(fn, device, epilogues=epilogues)
