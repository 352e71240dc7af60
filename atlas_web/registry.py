"""The backend registry: registration, entry-point plugins, discovery and automatic selection.

Backends are registered by name with either a Backend subclass or an import
path ``"package.module:ClassName"``; paths are imported only when the backend
is first asked for, so ``import atlas_web`` never imports NumPy, wasmtime or
wgpu. The built-ins are ``cpu``, ``wasm`` and ``webgpu``; a missing package makes
its backend unavailable, with the import error as the reason.

Third-party backends register in the entry-point group ``atlas_web.backends``
(``name = "module:Class"``). A plugin whose class declares an ``api_version``
other than ``atlas_web.API_VERSION`` is refused with a message naming both.

Probing hook: a backend class may define a classmethod ``probe()`` that returns
the device descriptions (a list of strings) when the backend can start here and
raises BackendUnavailable with the reason when it cannot, without building a
backend. Backends without it are probed by constructing one, reading
``device_info()["device"]`` and closing it.
"""

from __future__ import annotations

import enum
import importlib
import sys
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

from .backend import API_VERSION, Backend
from .errors import AllocationFailed, AtlasError, BackendUnavailable, UnsupportedOperation
from .memory import MAX_ALLOCATION

__all__ = [
    "BackendPreference", "BackendStatus", "DeviceProbe", "ENTRY_POINT_GROUP", "AUTO_ORDER", "register_backend",
    "unregister_backend", "registered_backends", "load_backend_class", "discover_backends",
    "print_backend_summary", "get_backend", "init_backend", "init_backend_with_memory_check",
]

#: the entry-point group third-party backends register in
ENTRY_POINT_GROUP = "atlas_web.backends"
#: the order BackendPreference.AUTO tries the built-ins in (other registered backends follow)
AUTO_ORDER: tuple[str, ...] = ("webgpu", "wasm", "cpu")

_BUILTINS: dict[str, str] = {
    "cpu": "atlas_web.reference:CpuBackend",
    "wasm": "wasm_backend:WasmBackend",
    "webgpu": "webgpu_backend:WebGpuBackend",
}


class BackendPreference(enum.Enum):
    """Which backend ``init_backend`` starts: AUTO tries them in AUTO_ORDER, the others name one."""

    AUTO = "auto"
    CPU = "cpu"
    WASM = "wasm"
    WEBGPU = "webgpu"


@dataclass(frozen=True)
class BackendStatus:
    """Whether backend ``name`` can start here; ``reason`` says why not, ``devices`` what runs it,
    ``device_type`` what kind of device that is (see Backend.device_info; None where the probe does
    not say)."""

    name: str
    available: bool
    reason: str = ""
    devices: tuple[str, ...] = ()
    device_type: str | None = None

    @property
    def software_gpu(self) -> bool:
        """Whether the device is a GPU API implemented on the CPU (AUTO tries such a backend last)."""
        return self.device_type == "software-gpu"


@dataclass(frozen=True)
class DeviceProbe:
    """What a backend class's ``probe()`` may return instead of a list of device names, to say
    what kind of device they are (``device_type``, one of atlas_web.backend.DEVICE_TYPES)."""

    devices: tuple[str, ...]
    device_type: str | None = None


@dataclass
class _Entry:
    name: str
    #: a Backend subclass, an import path "module:attr", or an importlib.metadata EntryPoint
    target: Any
    source: str
    loaded: type | None = None
    status: BackendStatus | None = field(default=None, repr=False)


class _Registry:
    """The process-wide table of backends (names in registration order)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.entries: dict[str, _Entry] = {name: _Entry(name, path, "built-in") for name, path in _BUILTINS.items()}
        self.plugins_loaded = False

    def ensure_plugins(self) -> None:
        with self.lock:
            if self.plugins_loaded:
                return
            self.plugins_loaded = True
            for ep in _entry_points():
                if ep.name in self.entries:
                    warnings.warn(f"atlas_web: plugin backend {ep.name!r} ({ep.value}) ignored: the name is taken "
                                  f"by the {self.entries[ep.name].source} backend", RuntimeWarning, stacklevel=3)
                    continue
                self.entries[ep.name] = _Entry(ep.name, ep, "plugin")

    def entry(self, name: str) -> _Entry:
        self.ensure_plugins()
        with self.lock:
            try:
                return self.entries[name]
            except KeyError:
                known = ", ".join(self.entries) or "none"
                raise BackendUnavailable(f"unknown backend {name!r} (known: {known})") from None


def _entry_points() -> list:
    from importlib.metadata import entry_points
    return list(entry_points(group=ENTRY_POINT_GROUP))


_REGISTRY = _Registry()


def register_backend(name: str, backend: type[Backend] | str, *, replace: bool = False) -> None:
    """Register ``backend`` (a Backend subclass or ``"module:Class"``) under ``name``.

    Raises ValueError when ``name`` is taken and ``replace`` is false, or when
    ``backend`` is neither a Backend subclass nor an import path.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a backend name must be a non-empty str, got {name!r}")
    if isinstance(backend, str):
        if backend.count(":") != 1:
            raise ValueError(f"backend import path must look like 'module:Class', got {backend!r}")
    elif not (isinstance(backend, type) and issubclass(backend, Backend)):
        raise ValueError(f"register_backend needs a Backend subclass or 'module:Class', got {backend!r}")
    _REGISTRY.ensure_plugins()
    with _REGISTRY.lock:
        if name in _REGISTRY.entries and not replace:
            raise ValueError(f"backend {name!r} is already registered ({_REGISTRY.entries[name].source}); "
                             "pass replace=True to replace it")
        _REGISTRY.entries[name] = _Entry(name, backend, "registered")


def unregister_backend(name: str) -> None:
    """Remove backend ``name`` from the registry; raises BackendUnavailable for an unknown name."""
    _REGISTRY.entry(name)
    with _REGISTRY.lock:
        del _REGISTRY.entries[name]


def registered_backends() -> list[str]:
    """The names of every registered backend (built-ins, plugins, registered), in registration order."""
    _REGISTRY.ensure_plugins()
    with _REGISTRY.lock:
        return list(_REGISTRY.entries)


def _import_path(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportError(f"module {module_name!r} has no attribute {attr!r}") from None


def _resolve(entry: _Entry) -> type:
    target = entry.target
    if isinstance(target, type):
        return target
    if isinstance(target, str):
        return _import_path(target)
    return target.load()  # an EntryPoint


def load_backend_class(name: str) -> type[Backend]:
    """The Backend subclass registered as ``name``, imported on first use.

    Raises BackendUnavailable for an unknown name, a missing package (the
    import error is the reason), an object that is not a Backend subclass, or
    a plugin written for another Backend API version.
    """
    entry = _REGISTRY.entry(name)
    if entry.loaded is not None:
        return entry.loaded
    where = entry.target if isinstance(entry.target, str) else getattr(entry.target, "value", entry.target)
    try:
        cls = _resolve(entry)
    except ImportError as exc:
        raise BackendUnavailable(f"backend {name!r} cannot be imported ({where}): {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise BackendUnavailable(f"backend {name!r} ({where}) is not a Backend subclass: {cls!r}")
    version = getattr(cls, "api_version", None)
    if version != API_VERSION:
        raise BackendUnavailable(
            f"{entry.source} backend {name!r} ({where}) implements Backend API version {version!r}; "
            f"this atlas_web needs API version {API_VERSION}")
    entry.loaded = cls
    return cls


def _describe(exc: BaseException) -> str:
    if isinstance(exc, AtlasError):
        return str(exc)
    if isinstance(exc, ImportError):
        return f"missing package: {exc}"
    return f"{type(exc).__name__}: {exc}"


def _probe(name: str) -> BackendStatus:
    try:
        cls = load_backend_class(name)
        probe = getattr(cls, "probe", None)
        if callable(probe):
            found = probe()
            device_type = found.device_type if isinstance(found, DeviceProbe) else None
            devices = tuple(str(d) for d in (found.devices if isinstance(found, DeviceProbe) else found))
        else:
            backend = cls()
            try:
                info = backend.device_info()
                devices, device_type = (str(info.get("device", name)),), info.get("device_type")
            finally:
                backend.close()
    except Exception as exc:  # a probe reports every failure as the reason, never raises
        return BackendStatus(name, False, _describe(exc))
    return BackendStatus(name, True, "", devices, device_type)


def discover_backends(*, refresh: bool = False) -> list[BackendStatus]:
    """The status of every registered backend, in registration order.

    Each backend is probed once per process (``refresh=True`` probes again);
    probing never raises: a failure becomes the status's ``reason``.
    """
    out = []
    for name in registered_backends():
        entry = _REGISTRY.entry(name)
        if entry.status is None or refresh:
            entry.status = _probe(name)
        out.append(entry.status)
    return out


def print_backend_summary(file: TextIO | None = None, *, refresh: bool = False) -> list[BackendStatus]:
    """Print one line per registered backend (available, devices or the reason); returns the statuses."""
    statuses = discover_backends(refresh=refresh)
    stream = file if file is not None else sys.stdout
    width = max((len(s.name) for s in statuses), default=0)
    print(f"atlas-web backends (API version {API_VERSION}):", file=stream)
    for status in statuses:
        mark = "available  " if status.available else "unavailable"
        detail = ", ".join(status.devices) if status.available else status.reason
        print(f"  {status.name:<{width}}  {mark}  {detail}", file=stream)
    return statuses


def get_backend(name: str, **options: Any) -> Backend:
    """A new backend ``name`` built with ``options``.

    Raises BackendUnavailable for an unknown name (listing the known ones) or
    when the backend cannot start here (the reason is in the message).
    """
    cls = load_backend_class(name)
    try:
        return cls(**options)
    except BackendUnavailable:
        raise
    except Exception as exc:
        raise BackendUnavailable(f"backend {name!r} failed to start: {_describe(exc)}") from exc


def _candidates(preference: BackendPreference | str) -> list[str]:
    if isinstance(preference, BackendPreference):
        if preference is BackendPreference.AUTO:
            rest = [n for n in registered_backends() if n not in AUTO_ORDER]
            return [*AUTO_ORDER, *rest]
        return [preference.value]
    if isinstance(preference, str):
        return _candidates(BackendPreference.AUTO) if preference == BackendPreference.AUTO.value else [preference]
    raise BackendUnavailable(f"a backend preference is a BackendPreference or a backend name, got {preference!r}")


def _first_that_starts(preference: BackendPreference | str, reject: Callable[[Backend], str | None],
                       options: dict) -> tuple[str, Backend]:
    """``(name, backend)`` of the first candidate that starts and that ``reject`` accepts.

    ``reject`` returns None to accept a started backend, or the reason it does not fit.
    """
    failures: list[str] = []
    started = False
    deferred: tuple[str, Backend] | None = None  # AUTO's accepted software GPU, kept in case nothing else fits
    for name in _candidates(preference):
        try:
            backend = get_backend(name, **options)
        except BackendUnavailable as exc:
            failures.append(f"{name}: {exc}")
            continue
        started = True
        try:
            rejection = reject(backend)
            software = _is_auto(preference) and _device_type(backend) == "software-gpu"
        except BaseException:
            backend.close()
            if deferred is not None:
                deferred[1].close()
            raise
        if rejection is None and software and deferred is None:
            deferred = (name, backend)
            continue
        if rejection is None:
            if deferred is not None:
                deferred[1].close()
            return name, backend
        backend.close()
        failures.append(f"{name}: {rejection}")
    if deferred is not None:
        return deferred
    summary = "; ".join(failures)
    if started:
        raise AllocationFailed(f"no backend for preference {_label(preference)} can hold the request: {summary}")
    raise BackendUnavailable(f"no backend for preference {_label(preference)} could start: {summary}")


def _is_auto(preference: BackendPreference | str) -> bool:
    return preference is BackendPreference.AUTO or preference == BackendPreference.AUTO.value


def _device_type(backend: Backend) -> str | None:
    """``device_info()["device_type"]`` of a started backend (None where it does not say)."""
    return backend.device_info().get("device_type")


def _label(preference: BackendPreference | str) -> str:
    return preference.name if isinstance(preference, BackendPreference) else repr(preference)


def init_backend(preference: BackendPreference | str = BackendPreference.AUTO, *, program: Any = None,
                 **options: Any) -> Backend:
    """Start a backend: AUTO tries webgpu, wasm, cpu (then other registered ones) and falls back when
    one fails to start; CPU/WASM/WEBGPU, or a registered name, start exactly that one. AUTO takes a
    backend whose ``device_info()["device_type"]`` is "software-gpu" (WebGPU on lavapipe, llvmpipe or
    SwiftShader, slower than wasm on the same CPU) only when no other candidate fits.

    With ``program`` (a Program), only a backend that supports every (instruction, type) pair of it
    is returned (``Backend.supports``), so AUTO routes e.g. F64 programs past webgpu.

    Raises BackendUnavailable listing each backend tried and why it did not start, or
    UnsupportedOperation when backends started but none supports the program.
    """
    if program is None:
        return _first_that_starts(preference, lambda backend: None, options)[1]
    try:
        return _first_that_starts(preference, lambda backend: _unsupported_by(backend, program), options)[1]
    except AllocationFailed as refused:  # every backend that started lacks some pair of the program
        raise UnsupportedOperation("program", None, _label(preference), str(refused)) from None


def _unsupported_by(backend: Backend, program: Any) -> str | None:
    """None when ``backend`` supports every (instruction, type) of ``program``, else the first pair it lacks."""
    for instr in program.instructions:
        info = instr.INFO
        for field_name in info.type_fields or (None,):
            ty = getattr(instr, field_name) if field_name else None
            if not backend.supports(info, ty):
                return f"{info.name} on {getattr(ty, 'name', 'no type')} is not supported"
    return None


def _check_nbytes(nbytes: object) -> int:
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise AllocationFailed(f"init_backend_with_memory_check needs a non-negative int byte count, got {nbytes!r}")
    return nbytes


def _capacity_shortfall(backend: Backend, nbytes: int) -> str | None:
    """None when ``backend`` can hold ``nbytes``; otherwise why not.

    Uses ``device_info()["max_memory"]`` when the backend reports it, else
    allocates ``nbytes`` (in pieces of at most MAX_ALLOCATION) and frees it.
    """
    max_memory = backend.device_info().get("max_memory")
    if max_memory is not None:
        return None if nbytes <= max_memory else f"max_memory is {max_memory} bytes, {nbytes} asked"
    handles = []
    try:
        left = nbytes
        while left > 0:
            piece = min(left, MAX_ALLOCATION)
            handles.append(backend.allocate_buffer(piece))
            left -= piece
    except AllocationFailed as exc:
        return f"allocating {nbytes} bytes failed: {exc}"
    finally:
        for handle in handles:
            backend.free_buffer(handle)
    return None


def init_backend_with_memory_check(preference: BackendPreference | str, nbytes: int, **options: Any) -> Backend:
    """Like ``init_backend``, but only a backend that can hold ``nbytes`` bytes of buffers is returned.

    When the check had to allocate, the tested backend is closed and a fresh one
    is returned, so the caller's first buffer still gets handle 2. Raises
    AllocationFailed for a bad ``nbytes`` or when every backend that started is
    too small, BackendUnavailable when none started.
    """
    nbytes = _check_nbytes(nbytes)
    name, backend = _first_that_starts(preference, lambda b: _capacity_shortfall(b, nbytes), options)
    if nbytes > 0 and backend.device_info().get("max_memory") is None:
        backend.close()
        backend = get_backend(name, **options)
    return backend
