"""Where arrays live and how their operations run: the default device, device buffers owned by arrays,
and the launch of a node's generated program (cached per node, so a warm operation only launches).

The default device is the one ``set_default_device`` chose, else ``atlas_web.registry.init_backend()``'s
best available backend, made on first use. Standard library only.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..backend import Backend
from ..cache import ProgramCache
from ..errors import ArrayError, UnsupportedOperation
from ..isa.addresses import make_pointer
from ..isa.registers import Register
from ..launch import ExecutionParams
from .codegen import Kernel, generate

__all__ = ["default_device", "set_default_device", "as_device", "DeviceBuffer", "launch", "kernel_for",
           "cached_kernels"]

_default: Backend | None = None


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
    return backend


def _free(device: Backend, handle: int) -> None:
    if not device._closed:
        device.free_buffer(handle)


class DeviceBuffer:
    """A device buffer of ``nbytes`` (at least 1) that arrays share (reshape shares, it does not copy);
    freed when the last array holding it is collected. Raises AllocationFailed."""

    __slots__ = ("device", "handle", "nbytes", "__weakref__")

    def __init__(self, device: Backend, nbytes: int) -> None:
        self.device = device
        self.nbytes = nbytes
        self.handle = device.allocate_buffer(max(nbytes, 1))
        weakref.finalize(self, _free, device, self.handle)


#: generated kernels per node (the nodes hold shapes and types, never buffers)
_kernels = ProgramCache(capacity=512)
#: nodes whose cooperative form a backend refused, by backend class: they run per lane there
_refused: set[tuple[type, object]] = set()


def cached_kernels() -> int:
    """How many generated kernels are cached (for tests and benchmarks)."""
    return len(_kernels)


def kernel_for(node: object) -> Kernel:
    """The generated kernel of ``node``, cached."""
    return _kernels.get_or_build(node, lambda: generate(node))


def launch(what: str, node: object, device: Backend, operands: list[Any], out: Any,
           fallback: object = None) -> None:
    """Run ``node`` on ``device``: ``operands[k]`` is a ``(DeviceBuffer, base element offset)`` or a
    Python scalar for input k, ``out`` the output's. When the device cannot compile ``node`` and a
    ``fallback`` node is given, that runs instead (and from then on). Raises UnsupportedOperation
    naming ``what`` where neither compiles, AtlasTrap or ExecutionFailed from the launch."""
    if fallback is not None and (type(device), node) in _refused:
        node, fallback = fallback, None
    kernel = kernel_for(node)
    registers = {}
    for i, (kind, k, ty) in enumerate(kernel.presets):
        value = out if k < 0 else operands[k]
        if kind == "handle":
            value = value[0].handle
        elif kind == "base":
            value = value[1]
        elif kind == "pointer":
            value = make_pointer(value[0].handle, 0)
        registers[Register(i + 1)] = (ty, value)
    params = ExecutionParams(kernel.config, registers, kernel.budget)
    try:
        device.execute_program_with_params(kernel.program, params)
    except UnsupportedOperation as error:
        if fallback is None:
            raise UnsupportedOperation(what, getattr(error, "ty", None), device.name, str(error)) from None
        _refused.add((type(device), node))
        launch(what, fallback, device, operands, out)
