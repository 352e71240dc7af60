"""The Backend protocol every backend implements, and the helpers they share.

A backend owns device memory (buffers and pools in one handle space, handle
``BOUNDARY_HANDLE`` being the Atlas boundary memory) and runs verified
programs. Subclasses implement the abstract methods; the typed helpers,
``supports`` and the default ``execute_async`` are written once here.
"""

from __future__ import annotations

import abc
import array
import struct
import sys
from collections.abc import Mapping, Set as AbstractSet
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import (
    AllocationFailed, AtlasError, AtlasTrap, BackendUnavailable, ExecutionFailed, InvalidBuffer,
    ProgramError, TrapCode, UnsupportedOperation,
)
from .isa.addresses import BOUNDARY_HANDLE, BufferHandle, PoolHandle
from .isa.instructions import INSTRUCTION_CLASSES, Instruction
from .isa.opcodes import OpcodeInfo
from .isa.types import Type
from .exclusive import one_thread_at_a_time
from .launch import ExecutionParams, LaunchConfig, as_int, plain_params
from .program import Program

if TYPE_CHECKING:
    from .docs_backends import BackendDocumentation
    from .pipeline import CompilePipeline, PipelineProgram

__all__ = [
    "Backend", "API_VERSION", "LaunchConfig", "ExecutionParams", "BufferHandle", "PoolHandle",
    "AtlasError", "ProgramError", "UnsupportedOperation", "AllocationFailed", "InvalidBuffer",
    "ExecutionFailed", "BackendUnavailable", "AtlasTrap", "TrapCode", "DEVICE_TYPES", "resolve_op", "typed_format",
    "typed_bytes",
]

#: version of the Backend protocol; plugins declaring another are refused by the registry
API_VERSION = 1

#: the preset register types of a launch without presets (one read-only empty mapping)
_NO_PRESETS: Mapping = MappingProxyType({})

#: what ``device_info()["device_type"]`` may say (see ``Backend.device_info``)
DEVICE_TYPES = ("cpu", "gpu", "software-gpu")

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


#: array.array typecodes by kind: an array of one kind and size holds the same bytes as another's
_ARRAY_KINDS = {**dict.fromkeys("bhilq", "signed"), **dict.fromkeys("BHILQ", "unsigned"),
                **dict.fromkeys("fd", "float")}


def _checked_type(ty: object, what: str) -> Type:
    if not isinstance(ty, Type):
        raise InvalidBuffer(f"{what} needs the element type ty (a Type), got {ty!r}")
    return ty


def _packed(values: Any, ty: Type, what: str) -> memoryview:
    """``values`` (an iterable of numbers) stored as ``ty``, little-endian, element by element. A mapping
    or a set is refused (InvalidBuffer): it is not a sequence of values (a dict would give its keys)."""
    if isinstance(values, (Mapping, AbstractSet)):
        raise InvalidBuffer(f"{what}: a {type(values).__name__} is not a sequence of values; pass a list, "
                            "an array.array or a NumPy array")
    code, _ = typed_format(ty)
    try:
        items = list(values)
        if code == "e":  # array.array has no half floats; struct does
            return memoryview(struct.pack(f"<{len(items)}e", *items))
        packed = array.array(code, items)
    except (TypeError, ValueError, OverflowError, struct.error) as exc:
        raise InvalidBuffer(f"{what}: the data cannot be stored as {ty.name}: {exc}") from None
    if sys.byteorder != "little":  # pragma: no cover - every supported host is little-endian
        packed.byteswap()
    return memoryview(packed).cast("B")


def _unpacked(raw: bytearray, code: str) -> array.array:
    """The little-endian values in ``raw`` as an ``array.array`` (F16 widened to ``"f"``)."""
    if code == "e":
        return array.array("f", struct.unpack(f"<{len(raw) // 2}e", raw))
    out = array.array(code, raw)
    if sys.byteorder != "little":  # pragma: no cover - every supported host is little-endian
        out.byteswap()
    return out


def typed_bytes(data: Any, ty: Type | None, what: str = "typed copy") -> Any:
    """The bytes of ``data`` stored as ``ty`` (see ``Backend.copy_typed_to``): a view where the data
    already is, else one converted copy. Raises InvalidBuffer or UnsupportedOperation."""
    if ty is not None:
        _checked_type(ty, what)
    np = _numpy()
    if np is not None and isinstance(data, np.ndarray):
        if ty is not None:
            try:
                data = data.astype(typed_format(ty)[1], copy=False)
            except (TypeError, ValueError) as exc:
                raise InvalidBuffer(f"{what}: the {data.dtype} array cannot be stored as {ty.name}: {exc}") from None
        elif data.dtype.hasobject:
            raise InvalidBuffer(f"{what}: an array of Python objects has no bytes to copy; pass ty")
        elif data.dtype.byteorder == ">" or (data.dtype.byteorder == "=" and sys.byteorder != "little"):
            data = data.astype(data.dtype.newbyteorder("<"))
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if isinstance(data, array.array):
        if ty is None:
            return memoryview(data).cast("B")
        code, _ = typed_format(ty)
        kind = _ARRAY_KINDS.get(data.typecode)
        if kind is not None and kind == _ARRAY_KINDS.get(code) and data.itemsize == struct.calcsize(code):
            return memoryview(data).cast("B")
        return _packed(data, ty, what)
    if ty is None:
        raise InvalidBuffer(f"{what}: a plain sequence needs the element type ty")
    return _packed(data, ty, what)


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


def _run_expanded(program: Any, has_kernel: Any) -> tuple[Any, Any]:
    """``atlas_web.lowering.expansions.run_expanded``, imported on the first launch (importing the core does
    not import the lowering package); it then replaces this function, so later launches call it directly."""
    global _run_expanded
    from .lowering.expansions import run_expanded
    _run_expanded = run_expanded
    return run_expanded(program, has_kernel)


class _TypedRead:
    """The new array a typed read fills, and the byte view and offset to copy into it.

    Checks ``ty``, ``count`` and ``offset`` (InvalidBuffer, UnsupportedOperation) before any copy.
    """

    __slots__ = ("start", "target", "_code", "_raw", "_array")

    def __init__(self, backend: "Backend", handle: int, ty: Type, count: Any, offset: Any, what: str) -> None:
        self._code, dtype = typed_format(_checked_type(ty, what))
        start = as_int(offset)
        if start is None or start < 0:
            raise InvalidBuffer(f"{what}: offset must be a non-negative int, got {offset!r}")
        if count is None:
            size = backend.buffer_size(handle)
            if start > size:
                raise InvalidBuffer(f"{what}: offset {start} is outside buffer {int(handle)} of {size} bytes")
            number = (size - start) // ty.size_bytes()
        else:
            number = as_int(count)  # type: ignore[assignment]
            if number is None or number < 0:
                raise InvalidBuffer(f"{what}: count must be a non-negative int, got {count!r}")
        self.start = start
        np = _numpy()
        if np is not None:
            self._array = np.empty(number, dtype=dtype)
            self._raw = None
            self.target = self._array.view(np.uint8)
        else:
            self._array = None
            self._raw = bytearray(number * ty.size_bytes())
            self.target = self._raw

    def result(self) -> Any:
        """The filled array (NumPy, or an ``array.array`` without NumPy)."""
        return self._array if self._raw is None else _unpacked(self._raw, self._code)


class Backend(abc.ABC):
    """The protocol of an atlas-web backend.

    Handles returned by ``allocate_buffer`` and ``allocate_pool`` are ints in
    one space, numbered from 2 upward and never reused within a backend, so the
    same sequence of allocations gives the same handles on every backend.
    """

    #: registry name ("cpu", "wasm", "webgpu")
    name: str = ""
    #: set by ``close()`` (see ``atlas_web.exclusive.closes``)
    _closed: bool = False
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
        """Copy the bytes of ``data`` (any buffer-protocol object) into the pool at ``offset``.

        One copy. Raises InvalidBuffer for a bad handle (also a buffer's) or a range outside the pool.
        """

    @abc.abstractmethod
    def copy_from_pool(self, handle: int, offset: int, out: Any) -> Any:
        """Copy bytes from the pool at ``offset`` into ``out`` (a writable buffer) and return it.

        ``out`` may instead be an int, for a new ``bytes`` of that many bytes, or
        None, for a new ``bytes`` of the rest of the pool. One copy. Raises
        InvalidBuffer for a bad handle (also a buffer's), a negative count or a
        range outside the pool.
        """

    @abc.abstractmethod
    def pool_size(self, handle: int) -> int:
        """Size in bytes of a live pool. Raises InvalidBuffer."""

    # ---- execution: a template method over the backend's hooks ---------------------------------------
    #: a backend's compile pipeline (``atlas_web.pipeline.CompilePipeline``), made in its ``__init__``
    _pipeline: "CompilePipeline"

    @one_thread_at_a_time
    def execute_program_with_params(self, program: Any, params: ExecutionParams) -> None:
        """Verify and run ``program`` with ``params``: the launch prologue (:meth:`_prepare_launch`), then
        the backend's ``_launch`` hook, holding the backend's ``_exclusive`` lock (``atlas_web.exclusive``).

        Raises ProgramError (does not verify, or a static address outside its
        buffer), UnsupportedOperation (this backend cannot compile it),
        ExecutionFailed (bad launch), AtlasTrap (a lane trapped) or BackendClosed.
        """
        program, expanded = _run_expanded(program, self._has_kernel)   # no kernel here: its default expansion
        try:  # as lowering.expansions.original_traps, without a context manager's cost on every launch
            artifact, budget, compiled = self._prepare_launch(program, params)
            try:
                self._launch(artifact, params, budget)
            except AtlasTrap as trap:  # a trap of the optimized program, as the program's (the source map)
                raise compiled.original_trap(trap) from None
        except AtlasTrap as trap:
            if expanded is None:
                raise
            raise expanded.original_trap(trap) from None

    @staticmethod
    def _has_kernel(info) -> bool:
        """Hook: whether this backend runs cooperative ``info`` itself (else its default expansion runs,
        atlas_web/lowering/expansions.py). Default: every one (the reference runs its own rules)."""
        return True

    def _prepare_launch(self, program: Any, params: ExecutionParams) -> tuple[Any, int, "PipelineProgram"]:
        """The launch prologue every backend shares: argument types, the backend's launch limits
        (``_check_launch(config)``), the budget, the compile pipeline (cached verify -> optimization hook
        at ``params.optimize`` or the backend's level -> lowering plan, ``self._pipeline``) with the preset
        register types, the backend's compiled form (``_compile(compiled, config)``), then the static
        addresses against the live allocations (``verify_launch``). Returns ``(what _compile returned,
        budget, the PipelineProgram)``: its ``original_trap`` maps a trap of what runs back to ``program``.
        Runs nothing; copies nothing.

        Raises ExecutionFailed (params not an ExecutionParams, a launch over the backend's limits),
        ProgramError (not a Program, does not verify, a static address outside its allocation) or
        UnsupportedOperation (from ``_compile``).
        """
        if not isinstance(params, ExecutionParams):
            raise ExecutionFailed(f"execute_program_with_params needs ExecutionParams, got {type(params).__name__}")
        if not isinstance(program, Program):
            raise ProgramError(f"execute_program needs a Program, got {type(program).__name__}")
        config = params.config  # ExecutionParams checked config, budget and registers when it was made
        self._check_launch(config)
        budget = self.budget if params.budget is None else params.budget
        registers = params.registers
        optimize = params.optimize
        compiled = (self._pipeline.compile(program, {reg: ty for reg, (ty, _value) in registers.items()},
                                           optimize=optimize)
                    if registers else self._pipeline.compile(program, _NO_PRESETS, (), optimize=optimize))
        artifact = self._compile(compiled, config)
        if compiled.info.static_accesses:
            from .verify import verify_launch
            verify_launch(compiled.info, config, self._allocation_table())
        return artifact, budget, compiled

    def _check_launch(self, config: LaunchConfig) -> None:
        """Hook: raise ExecutionFailed for a launch shape over this backend's limits (default: none)."""

    def _allocation_table(self) -> Any:
        """Hook: the ``atlas_web.memory.HandleTable`` of the live allocations the static addresses are
        checked against (default: ``self._memory.table``)."""
        return self._memory.table  # type: ignore[attr-defined]

    # A backend using the template method also defines:
    #   _compile(compiled: atlas_web.pipeline.PipelineProgram, config: LaunchConfig) -> artifact
    #       its compiled form of the program for launches of ``config`` (cached as it needs); raises
    #       UnsupportedOperation for what it cannot compile;
    #   _launch(artifact, params: ExecutionParams, budget: int) -> None
    #       run it (presets from ``params.registers``), raising AtlasTrap for a trapped lane.

    def execute_program(self, program: Any, config: LaunchConfig) -> None:
        """Verify and run ``program`` over ``config``; raises as execute_program_with_params."""
        self.execute_program_with_params(program, plain_params(config))

    async def execute_async(self, program: Any, config: LaunchConfig | ExecutionParams) -> None:
        """Run ``program`` over ``config`` (a LaunchConfig or ExecutionParams) without blocking the event
        loop where the backend can (this default runs it synchronously); raises as execute_program."""
        params = config if isinstance(config, ExecutionParams) else plain_params(config)
        self.execute_program_with_params(program, params)

    @abc.abstractmethod
    def supports_op(self, info: OpcodeInfo, ty: Type | None) -> bool:
        """Whether this backend compiles instruction ``info`` for type ``ty`` (None when it has none)."""

    def supports(self, op: object, ty: Type | None = None) -> bool:
        """Whether this backend runs ``op`` (instruction, class, seed name) for ``ty``.

        ``ty=None`` asks about an instruction that carries no type, or about any
        of its types. Raises KeyError for an unknown instruction name, or for a
        ``ty`` that is not a Type (``"f32"`` would otherwise just answer False).
        """
        info = resolve_op(op)
        if ty is not None and not isinstance(ty, Type):
            raise KeyError(f"supports: ty must be a Type or None, got {ty!r}")
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

    @classmethod
    def documentation(cls) -> "BackendDocumentation | None":
        """This backend's section of docs/backends.md (``atlas_web.docs_backends``): its op x type support
        from its rule tables, its measured ulp table, notes and what it does not run by design. A
        classmethod: documenting needs no device. The default, None, gives the backend no column."""
        return None

    @abc.abstractmethod
    def device_info(self) -> dict:
        """What runs this backend: a new dict with at least ``name``, ``device``, ``engine`` and
        ``device_type`` (one of DEVICE_TYPES: "cpu" for the host's processor, "gpu" for a graphics
        processor, "software-gpu" for a GPU API implemented on the CPU such as lavapipe, llvmpipe or
        SwiftShader, which ``init_backend(AUTO)`` tries last) and ``subnormals``: "preserved", or "flushed"
        where the device reads F32 (and BF16) subnormal operands and writes subnormal results of arithmetic
        as zeros of their sign (docs/semantics.md, Numbers). ``max_memory``, where reported, lets
        ``init_backend_with_memory_check`` answer without allocating."""

    @abc.abstractmethod
    def resonance_accumulator(self) -> list[float]:
        """The 96 ResAccum sums of the last launch (zeros before any), as a new list of floats."""

    @property
    def boundary_buffer(self) -> BufferHandle:
        """The handle of the Atlas boundary memory (96 x 12288 bytes) for host copies."""
        return BufferHandle(BOUNDARY_HANDLE)

    # ---- typed helpers --------------------------------------------------------
    def allocate_typed(self, data_or_count: Any, ty: Type | None = None) -> BufferHandle:
        """Allocate a buffer for typed data and copy it in (one copy, plus one conversion where
        the data is not already of ``ty``).

        ``data_or_count`` is a NumPy array, an ``array.array``, a sequence of
        numbers with ``ty``, or an element count with ``ty`` (zero-filled). See
        ``copy_typed_to`` for how data is converted to ``ty``. Raises
        AllocationFailed (also for a negative count), InvalidBuffer for data
        that cannot be stored as ``ty`` or a missing ``ty``, or
        UnsupportedOperation for a type with no host array form.
        """
        count = as_int(data_or_count)
        if count is not None:
            if count < 0:
                raise AllocationFailed(f"allocate_typed: count must be a non-negative int, got {count}")
            return self.allocate_buffer(count * _checked_type(ty, "allocate_typed(count)").size_bytes())
        raw = typed_bytes(data_or_count, ty, "allocate_typed")
        handle = self.allocate_buffer(len(raw))
        self.copy_to_buffer(handle, raw)
        return handle

    def copy_typed_to(self, handle: int, data: Any, ty: Type | None = None, offset: int = 0) -> None:
        """Copy a NumPy array, ``array.array`` or sequence of numbers into a buffer at byte ``offset``.

        With ``ty`` the values are stored as ``ty``: a NumPy array is converted
        as ``astype`` does, an ``array.array`` of another element type and a
        plain sequence element by element (a value that does not fit, or a float
        for an integer type, is refused). Without ``ty`` an array's own elements
        are copied. One copy, plus one conversion where needed. Raises
        InvalidBuffer (bad handle, range, data, or a sequence without ``ty``)
        or UnsupportedOperation for a type with no host array form.
        """
        self.copy_to_buffer(handle, typed_bytes(data, ty, "copy_typed_to"), offset)

    def copy_typed_from(self, handle: int, ty: Type, count: int | None = None, offset: int = 0) -> Any:
        """``count`` values of ``ty`` (default: as many as fit after ``offset``) from a buffer at byte
        ``offset``: a NumPy array where NumPy is present, else an ``array.array`` (F16 values widened
        exactly to ``"f"``). One copy (into the new array). Raises InvalidBuffer (bad handle, count,
        offset or range) or UnsupportedOperation for a type with no host array form."""
        read = _TypedRead(self, handle, ty, count, offset, "copy_typed_from")
        self.copy_from_buffer(handle, read.target, read.start)
        return read.result()

    # ---- asynchronous reads (the browser's way to read results) ------------------------------
    async def copy_from_buffer_async(self, handle: int, out: Any = None, offset: int = 0) -> Any:
        """As ``copy_from_buffer``, but awaits the device without blocking the event loop where the
        backend has to wait for one (WebGPU); backends whose memory is host memory copy at once.

        In the browser this is how WebGPU results are read without ``run_sync``. One copy.
        Raises as ``copy_from_buffer``.
        """
        return self.copy_from_buffer(handle, out, offset)

    async def copy_typed_from_async(self, handle: int, ty: Type, count: int | None = None, offset: int = 0) -> Any:
        """As ``copy_typed_from``, awaiting the device like ``copy_from_buffer_async``. One copy (into
        the new array). Raises as ``copy_typed_from``."""
        read = _TypedRead(self, handle, ty, count, offset, "copy_typed_from_async")
        await self.copy_from_buffer_async(handle, read.target, read.start)
        return read.result()

    def close(self) -> None:  # noqa: B027 - an optional hook: the default has nothing to release
        """Release the backend's device, memory, buffers and pools. A closed backend stays closed: every
        later call but ``close()`` (which does nothing again) raises BackendClosed; make a new backend.
        The built-in backends guard their methods with ``atlas_web.exclusive``, which enforces this."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
