"""Where arrays live and how their operations run: the default device, device buffers owned by arrays,
and the launch of a node's generated program (cached per node, so a warm operation only launches).

The default device is the one ``set_default_device`` chose, else ``atlas_web.registry.init_backend()``'s
best available backend, made on first use. Standard library only.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Any, Callable

from ..backend import Backend
from ..cache import ProgramCache
from ..errors import ArrayError, UnsupportedOperation
from ..isa.registers import Register
from ..launch import ExecutionParams
from .codegen import Kernel, generate

__all__ = ["default_device", "set_default_device", "as_device", "DeviceBuffer", "launch", "kernel_for",
           "cached_kernels", "kernel_refused", "TRACES"]

class _ThreadTraces(threading.local):
    """The traces a thread is recording, innermost last, used as a list (``if TRACES``, ``TRACES[-1]``,
    ``append``, ``pop``): one stack per thread, so that a thread's eager operations are never recorded into
    another thread's trace (two threads tracing at once gave programs computing nothing)."""

    def __init__(self) -> None:
        self.stack: list = []

    def __bool__(self) -> bool:
        return bool(self.stack)

    def __len__(self) -> int:
        return len(self.stack)

    def __getitem__(self, index: int):
        return self.stack[index]

    def append(self, trace) -> None:
        self.stack.append(trace)

    def pop(self):
        return self.stack.pop()


#: the traces being recorded on this thread, innermost last (atlas_web/numpy/jit.py): while one is,
#: ``launch`` records its launch there instead of running it
TRACES = _ThreadTraces()

_default: Backend | None = None
#: backends this module started (the default and those named by string): closed at exit
_started: list[Backend] = []
#: caches of arrays to drop at exit (elementwise's constant arrays), before the backends close
EXIT_HOOKS: list = []


@atexit.register
def _release() -> None:
    """Drop cached arrays and close the backends started here while the interpreter is whole (a wasmtime
    store collected during its teardown reports errors)."""
    global _default
    for hook in EXIT_HOOKS:
        hook()
    _pools.clear()
    for backend in _started:
        backend.close()
    _started.clear()
    _by_name.clear()
    _default = None


def set_default_device(device: Backend | str | None) -> None:
    """Make ``device`` (a backend, or a registry name such as "wasm") where new arrays go; None goes back to
    the registry's best available backend. Raises BackendUnavailable for a name that cannot start."""
    global _default
    _default = None if device is None else as_device(device)


def default_device() -> Backend:
    """The backend new arrays go to (see ``set_default_device``)."""
    global _default
    if _default is None:
        from ..registry import init_backend
        _default = init_backend()
        _started.append(_default)
    return _default


def as_device(device: Backend | str | None) -> Backend:
    """``device`` as a backend: itself, the registry's backend of that name, or the default for None."""
    if device is None:
        return default_device()
    if isinstance(device, Backend):
        return device
    if isinstance(device, str):
        from ..registry import get_backend
        return _named(device, get_backend)
    raise ArrayError(f"device must be a Backend or a backend name, got {device!r}")


_by_name: dict[str, Backend] = {}


def _named(name: str, get_backend) -> Backend:
    backend = _by_name.get(name)
    if backend is None or backend._closed:
        backend = _by_name[name] = get_backend(name)
        _started.append(backend)
    return backend


#: device -> {bytes: handles} of buffers whose arrays were collected, kept for the next array of that size
#: (allocating and freeing cost more than a small operation's launch); at most POOL_BYTES per device
_pools: "weakref.WeakKeyDictionary[Backend, dict[int, list[int]]]" = weakref.WeakKeyDictionary()
_pooled: "weakref.WeakKeyDictionary[Backend, int]" = weakref.WeakKeyDictionary()
POOL_BYTES = 64 << 20


def _recycle(device: Backend, handle: int, nbytes: int) -> None:
    if device._closed:
        return
    held = _pooled.get(device, 0)
    if held + nbytes > POOL_BYTES:
        device.free_buffer(handle)
        return
    _pools.setdefault(device, {}).setdefault(nbytes, []).append(handle)
    _pooled[device] = held + nbytes


class DeviceBuffer:
    """A device buffer of ``nbytes`` (at least 1 allocated) that arrays share (reshape shares, it does
    not copy); when the last array holding it is collected it goes back to a pool for the next buffer of
    that size on that device. Its contents are unspecified (a recycled buffer) unless ``zeroed``.
    Raises AllocationFailed."""

    __slots__ = ("device", "handle", "nbytes", "__weakref__")

    def __init__(self, device: Backend, nbytes: int, zeroed: bool = False) -> None:
        self.device = device
        self.nbytes = nbytes
        size = max(nbytes, 1)
        free = None if zeroed else _pools.get(device, {}).get(size)
        if free:
            self.handle = free.pop()
            _pooled[device] -= size
        else:
            self.handle = device.allocate_buffer(size)

    def __del__(self) -> None:
        # cheaper than weakref.finalize on every array; at interpreter exit the modules may be gone
        try:
            _recycle(self.device, self.handle, max(self.nbytes, 1))
        except Exception:  # noqa: BLE001 - a destructor must not raise (closed device, shutdown)
            pass


#: generated kernels per node (the nodes hold shapes and types, never buffers)
_kernels = ProgramCache(capacity=512)
#: nodes whose cooperative form a backend refused, by backend class: they run per lane there
_refused: set[tuple[type, object]] = set()


def kernel_refused(device: Any, node: object) -> bool:
    """Whether ``device``'s backend class refused ``node``'s cooperative kernel (it then runs per lane there)."""
    return (type(device), node) in _refused


def cached_kernels() -> int:
    """How many generated kernels are cached (for tests and benchmarks)."""
    return len(_kernels)


def kernel_for(node: object) -> Kernel:
    """The generated kernel of ``node``, cached."""
    return _kernels.get_or_build(node, lambda: generate(node))


def _params(kernel: Kernel, values: tuple) -> ExecutionParams:
    """The launch parameters of ``kernel`` with preset ``values``, kept per kernel for the last few value
    tuples: a loop over recycled buffers launches with the parameters it made before (the scalars' types
    are part of the key: 1 and 1.0 and True are equal in a tuple)."""
    memo = kernel.params
    key = (values, tuple(map(type, values)))
    params = memo.get(key)
    if params is None:
        if len(memo) >= 8:
            memo.pop(next(iter(memo)))
        registers = {_REGISTERS[i + 1]: (ty, value)
                     for i, ((_, _, ty), value) in enumerate(zip(kernel.presets, values))}
        params = memo[key] = ExecutionParams(kernel.config, registers, kernel.budget)
    return params

#: r0 ... r255, made once (a launch names its presets by these)
_REGISTERS = tuple(Register(i) for i in range(256))


def launch(what: Callable[[], str] | str, node: object, device: Backend, operands: list[Any], out: Any,
           fallback: object = None) -> None:
    """Run ``node`` on ``device``: ``operands[k]`` is a ``(DeviceBuffer, base element offset)`` or a
    Python scalar for input k, ``out`` the output's. When the device cannot compile ``node`` and a
    ``fallback`` node is given, that runs instead (and from then on on that kind of backend). ``what``
    (or ``what()``, made only on an error) names the operation. Raises UnsupportedOperation naming it
    where neither compiles, AtlasTrap or ExecutionFailed from the launch."""
    if TRACES:
        TRACES[-1].record(what, node, fallback, operands, out)
        return
    if fallback is not None and (type(device), node) in _refused:
        node, fallback = fallback, None
    kernel = kernel_for(node)
    values = []
    for kind, k, _ty in kernel.presets:
        value = out if k < 0 else operands[k]
        if kind == "handle":
            value = value[0].handle
        elif kind == "base":
            value = value[1]
        elif kind == "pointer":
            value = value[0].handle << 32
        values.append(value)
    params = _params(kernel, tuple(values))
    try:
        device.execute_program_with_params(kernel.program, params)
    except UnsupportedOperation as error:
        if fallback is None:
            name = what() if callable(what) else what
            raise UnsupportedOperation(name, getattr(error, "ty", None), device.name, str(error)) from None
        _refused.add((type(device), node))
        launch(what, fallback, device, operands, out)
