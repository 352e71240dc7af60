"""The Backend protocol every backend implements, and the helpers they share.

A backend owns device memory (buffers and pools in one handle space, handle
``BOUNDARY_HANDLE`` being the Atlas boundary memory) and runs verified
programs. Subclasses implement the abstract methods; the typed helpers,
``supports`` and the default ``execute_async`` are written once here.
"""

from __future__ import annotations

import abc
import sys
from typing import Any, Iterable

from .errors import (
    AllocationFailed, AtlasError, AtlasTrap, BackendUnavailable, ExecutionFailed, InvalidBuffer,
    ProgramError, TrapCode, UnsupportedOperation,
)
from .isa.addresses import BOUNDARY_HANDLE, BufferHandle, PoolHandle
from .isa.instructions import INSTRUCTION_CLASSES, Instruction
from .isa.opcodes import OpcodeInfo
from .isa.types import Type
from .launch import ExecutionParams, LaunchConfig

__all__ = [
    "Backend", "API_VERSION", "LaunchConfig", "ExecutionParams", "BufferHandle", "PoolHandle",
    "AtlasError", "ProgramError", "UnsupportedOperation", "AllocationFailed", "InvalidBuffer",
    "ExecutionFailed", "BackendUnavailable", "AtlasTrap", "TrapCode", "resolve_op", "typed_format",
]

#: version of the Backend protocol; plugins declaring another are refused by the registry
API_VERSION = 1

# struct / array.array format and NumPy dtype name for the types host helpers can view
_TYPED_FORMATS: dict[Type, tuple[str, str]] = {
    Type.F16: ("e", "float16"), Type.F32: ("f", "float32"), Type.F64: ("d", "float64"),
    Type.I8: ("b", "int8"), Type.I16: ("h", "int16"), Type.I32: ("i", "int32"), Type.I64: ("q", "int64"),
    Type.U8: ("B", "uint8"), Type.U16: ("H", "uint16"), Type.U32: ("I", "uint32"), Type.U64: ("Q", "uint64"),
}


def typed_format(ty: Type) -> tuple[str, str]:
    """``(array.array typecode, NumPy dtype name)`` of ``ty``; raises UnsupportedOperation for
    types with no host array form (BF16 and the extended integers: copy their bytes)."""
    try:
        return _TYPED_FORMATS[ty]
    except KeyError:
        raise UnsupportedOperation("typed copy", ty, "host", "copy raw bytes with copy_to_buffer instead") from None


def resolve_op(op: object) -> OpcodeInfo:
    """The opcode-table row named by ``op``: an instruction, its class, its seed name or a row.

    Raises KeyError listing nothing when the name is unknown.
    """
    if isinstance(op, OpcodeInfo):
        return op
    if isinstance(op, Instruction) or (isinstance(op, type) and issubclass(op, Instruction)):
        return op.INFO
    if isinstance(op, str):
        try:
            return INSTRUCTION_CLASSES[op].INFO
        except KeyError:
            raise KeyError(f"unknown instruction {op!r}") from None
    raise KeyError(f"not an instruction: {op!r}")


def _numpy():
    try:
        import numpy
        return numpy
    except ImportError:  # Pyodide without NumPy
        return None


class Backend(abc.ABC):
    """The protocol of an atlas-web backend.

    Handles returned by ``allocate_buffer`` and ``allocate_pool`` are ints in
    one space, numbered from 2 upward and never reused within a backend, so the
    same sequence of allocations gives the same handles on every backend.
    """

    #: registry name ("cpu", "wasm", "webgpu")
    name: str = ""
    api_version: int = API_VERSION

    # ---- memory -------------------------------------------------------------
    @abc.abstractmethod
    def allocate_buffer(self, size: int) -> BufferHandle:
        """A new zero-filled buffer of ``size`` bytes. Raises AllocationFailed."""

    @abc.abstractmethod
    def free_buffer(self, handle: int) -> None:
        """Release a buffer. Raises InvalidBuffer for a handle that names no live buffer."""

    @abc.abstractmethod
    def copy_to_buffer(self, handle: int, data: Any, offset: int = 0) -> None:
        """Copy the bytes of ``data`` (any buffer-protocol object) into the buffer at ``offset``.

        One copy. Raises InvalidBuffer for a bad handle or a range outside the buffer.
        """

    @abc.abstractmethod
    def copy_from_buffer(self, handle: int, out: Any = None, offset: int = 0) -> Any:
        """Copy bytes from the buffer at ``offset`` into ``out`` (a writable buffer) and return it.

        With ``out=None`` returns a new ``bytes`` of the rest of the buffer. One copy.
        Raises InvalidBuffer for a bad handle or a range outside the buffer.
        """

    @abc.abstractmethod
    def buffer_size(self, handle: int) -> int:
        """Size in bytes of a live buffer. Raises InvalidBuffer."""

    @abc.abstractmethod
    def allocate_pool(self, size: int) -> PoolHandle:
        """A new zero-filled pool of ``size`` bytes. Raises AllocationFailed."""

    @abc.abstractmethod
    def free_pool(self, handle: int) -> None:
        """Release a pool. Raises InvalidBuffer."""

    @abc.abstractmethod
    def copy_to_pool(self, handle: int, offset: int, data: Any) -> None:
        """Copy ``data`` into the pool at ``offset``. One copy. Raises InvalidBuffer."""

    @abc.abstractmethod
    def copy_from_pool(self, handle: int, offset: int, out: Any) -> Any:
        """Fill ``out`` (a writable buffer, or an int byte count for new bytes) from the pool at ``offset``."""

    @abc.abstractmethod
    def pool_size(self, handle: int) -> int:
        """Size in bytes of a live pool. Raises InvalidBuffer."""

    # ---- execution ----------------------------------------------------------
    @abc.abstractmethod
    def execute_program_with_params(self, program: Any, params: ExecutionParams) -> None:
        """Verify and run ``program`` with ``params``.

        Raises ProgramError (does not verify, or a static address outside its
        buffer), UnsupportedOperation (this backend cannot compile it),
        ExecutionFailed (bad launch) or AtlasTrap (a lane trapped).
        """

    def execute_program(self, program: Any, config: LaunchConfig) -> None:
        """Verify and run ``program`` over ``config``; raises as execute_program_with_params."""
        self.execute_program_with_params(program, ExecutionParams(config))

    async def execute_async(self, program: Any, config: LaunchConfig | ExecutionParams) -> None:
        """Run ``program`` without blocking the event loop where the backend can; raises as execute_program."""
        params = config if isinstance(config, ExecutionParams) else ExecutionParams(config)
        self.execute_program_with_params(program, params)

    @abc.abstractmethod
    def supports_op(self, info: OpcodeInfo, ty: Type | None) -> bool:
        """Whether this backend compiles instruction ``info`` for type ``ty`` (None when it has none)."""

    def supports(self, op: object, ty: Type | None = None) -> bool:
        """Whether this backend runs ``op`` (instruction, class, seed name) for ``ty``.

        ``ty=None`` asks about an instruction that carries no type, or about any
        of its types. Raises KeyError for an unknown instruction name.
        """
        info = resolve_op(op)
        if ty is None:
            if not info.types:
                return self.supports_op(info, None)
            return any(self.supports_op(info, t) for t in info.types)
        return ty in info.types and self.supports_op(info, ty)

    def ulp_tolerance(self, op: object, ty: Type) -> float:
        """The largest error, in units in the last place of ``ty``, this backend documents for
        ``op`` (instruction, class or seed name, or a cooperative operation enum member)
        against the reference. 0 means bit-exact; the reference itself is exact by definition."""
        return 0.0

    @abc.abstractmethod
    def device_info(self) -> dict:
        """What runs this backend: at least ``name``, ``device`` and ``engine``."""

    @abc.abstractmethod
    def resonance_accumulator(self) -> list[float]:
        """The 96 ResAccum sums of the last launch (zeros before any)."""

    @property
    def boundary_buffer(self) -> BufferHandle:
        """The handle of the Atlas boundary memory (96 x 12288 bytes) for host copies."""
        return BufferHandle(BOUNDARY_HANDLE)

    # ---- typed helpers --------------------------------------------------------
    def allocate_typed(self, data_or_count: Any, ty: Type | None = None) -> BufferHandle:
        """Allocate a buffer for typed data and copy it in (one copy).

        ``data_or_count`` is a NumPy array, an ``array.array``, a sequence of
        numbers with ``ty``, or an element count with ``ty`` (zero-filled).
        Raises AllocationFailed, or UnsupportedOperation for a type with no
        host array form.
        """
        if isinstance(data_or_count, int) and not isinstance(data_or_count, bool):
            if ty is None:
                raise ExecutionFailed("allocate_typed(count) needs the element type ty")
            return self.allocate_buffer(data_or_count * ty.size_bytes())
        raw = self._typed_bytes(data_or_count, ty)
        handle = self.allocate_buffer(max(len(raw), 1))
        self.copy_to_buffer(handle, raw)
        return handle

    def copy_typed_to(self, handle: int, data: Any, ty: Type | None = None, offset: int = 0) -> None:
        """Copy a NumPy array, ``array.array`` or sequence (with ``ty``) into a buffer (one copy)."""
        self.copy_to_buffer(handle, self._typed_bytes(data, ty), offset)

    def copy_typed_from(self, handle: int, ty: Type, count: int | None = None, offset: int = 0) -> Any:
        """``count`` values of ``ty`` from a buffer at byte ``offset``: a NumPy array where NumPy
        is present, else an ``array.array``. One copy (into the new array)."""
        code, dtype = typed_format(ty)
        if count is None:
            count = (self.buffer_size(handle) - offset) // ty.size_bytes()
        np = _numpy()
        if np is not None:
            out = np.empty(count, dtype=dtype)
            self.copy_from_buffer(handle, out.view(np.uint8), offset)
            return out
        import array
        out = array.array(code, bytes(count * ty.size_bytes()))
        self.copy_from_buffer(handle, memoryview(out).cast("B"), offset)
        if sys.byteorder != "little":  # pragma: no cover - every supported host is little-endian
            out.byteswap()
        return out

    @staticmethod
    def _typed_bytes(data: Any, ty: Type | None) -> Any:
        np = _numpy()
        if np is not None and isinstance(data, np.ndarray):
            if ty is not None:
                data = data.astype(typed_format(ty)[1], copy=False)
            return np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        import array
        if isinstance(data, array.array):
            return memoryview(data).cast("B")
        if ty is None:
            raise ExecutionFailed("a plain sequence needs the element type ty")
        code, _ = typed_format(ty)
        return memoryview(array.array(code, data)).cast("B")

    def close(self) -> None:
        """Release the backend's device resources (no-op where there are none)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def supported_matrix(backend: Backend, infos: Iterable[OpcodeInfo]) -> dict[tuple[str, Type | None], bool]:
    """``(instruction name, type) -> supported`` for every row and accepted type."""
    out: dict[tuple[str, Type | None], bool] = {}
    for info in infos:
        for ty in (sorted(info.types, key=lambda t: t.code) or [None]):
            out[(info.name, ty)] = backend.supports_op(info, ty)
    return out


__all__.append("supported_matrix")
