"""CpuBackend: the reference backend ("cpu"), the executable specification the other backends are checked against.

Memory is NumPy byte arrays (``MemoryStore``); programs run in the NumPy
executor (``atlas_web.reference.executor``) after the verifier accepted them
and the static addresses of the launch were checked against live buffers.
"""

from __future__ import annotations

import os
import platform
from typing import Any

import numpy as np

from ..atlas import NUM_CLASSES
from ..backend import Backend
from ..errors import ExecutionFailed, InvalidBuffer
from ..exclusive import closes, exclusive_lock, one_thread_at_a_time
from ..host_bytes import source_bytes, target_bytes
from ..isa.addresses import BufferHandle, PoolHandle
from ..memory import MAX_ALLOCATION
from ..pipeline import DEFAULT_OPTIMIZE, CompilePipeline, PipelineProgram
from ..isa.opcodes import OpcodeInfo
from ..isa.types import Type
from ..launch import DEFAULT_BUDGET, ExecutionParams, LaunchConfig, check_budget
from .exec_state import LaneGeometry
from .exec_store import MemoryStore
from .executor import FLUSHING_RULES, RULES, Prepared, prepare, run_program

__all__ = ["CpuBackend", "MAX_REFERENCE_LANES", "MAX_SHARED_TOTAL", "SUBNORMAL_MODES", "host_memory_bytes"]

#: the most lanes one launch may have on the reference backend (its lane state lives in host memory)
MAX_REFERENCE_LANES = 1 << 26
#: the most bytes of shared memory (all blocks together) one launch may have here
MAX_SHARED_TOTAL = 1 << 31
#: ``subnormals`` mode -> (the key of its plans in a compiled program's plans, the executor's rules)
SUBNORMAL_MODES = {"preserved": ("reference", RULES), "flushed": ("reference-flushed", FLUSHING_RULES)}
#: verified programs kept per backend (least recently used dropped first)
_PROGRAM_CACHE_SIZE = 256


def host_memory_bytes() -> int | None:
    """The host's physical memory in bytes, or None where ``os.sysconf`` cannot tell."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page_size if pages > 0 and page_size > 0 else None


class CpuBackend(Backend):
    """The NumPy reference backend.

    ``budget``: backward jumps each lane may take (ExecutionParams.budget
    overrides it per launch). ``memory_limit``: optional cap in bytes on all
    buffers and pools together (the boundary memory does not count). ``optimize``: the optimization level
    of its programs (0, 1 or 2: atlas_web.opt; ExecutionParams.optimize overrides it per launch).
    ``subnormals``: "preserved" (the exact reference) or "flushed": the flush mode, a device that flushes f32
    subnormals in the opcode table's may_flush_subnormals rows (docs/semantics.md, Numbers;
    ``numeric_flush``), which ``device_info()["subnormals"]`` then says.
    Raises ExecutionFailed / AllocationFailed for malformed arguments.
    Threads may share it: its methods take turns (``atlas_web.exclusive``).
    """

    name = "cpu"

    def __init__(self, *, budget: int = DEFAULT_BUDGET, memory_limit: int | None = None,
                 optimize: int = DEFAULT_OPTIMIZE, subnormals: str = "preserved") -> None:
        self._exclusive = exclusive_lock()
        self.budget = check_budget(budget, "CpuBackend budget")
        if subnormals not in SUBNORMAL_MODES:
            raise ExecutionFailed(f"CpuBackend subnormals must be one of {', '.join(SUBNORMAL_MODES)}, "
                                  f"got {subnormals!r}")
        self.subnormals = subnormals
        self._memory = MemoryStore(memory_limit)
        self._accumulator = np.zeros(NUM_CLASSES, dtype=np.float64)
        # verified (and optimized) programs, with the executor's plans
        self._pipeline = CompilePipeline(_PROGRAM_CACHE_SIZE, optimize=optimize, target=self)
        # lane ids and special registers of the last launch shape (read-only, reused by the next launch)
        self._geometry: LaneGeometry | None = None

    # ---- buffers ---------------------------------------------------------------
    @one_thread_at_a_time
    def allocate_buffer(self, size: int) -> BufferHandle:
        """A new zero-filled buffer of ``size`` bytes. Raises AllocationFailed."""
        return BufferHandle(self._memory.allocate("buffer", size).handle)

    @one_thread_at_a_time
    def free_buffer(self, handle: int) -> None:
        """Release a buffer. Raises InvalidBuffer (also for a pool or the boundary memory)."""
        self._memory.free(handle, "buffer")

    @one_thread_at_a_time
    def copy_to_buffer(self, handle: int, data: Any, offset: int = 0) -> None:
        """Copy the bytes of ``data`` into the buffer at ``offset`` (one copy). Raises InvalidBuffer."""
        self._copy_in(handle, "buffer", offset, data, "copy_to_buffer")

    @one_thread_at_a_time
    def copy_from_buffer(self, handle: int, out: Any = None, offset: int = 0) -> Any:
        """Copy bytes from the buffer at ``offset`` into ``out`` and return it; with ``out=None`` a new
        ``bytes`` of the rest of the buffer. One copy. Raises InvalidBuffer."""
        return self._copy_out(handle, "buffer", offset, out, "copy_from_buffer")

    @one_thread_at_a_time
    def buffer_size(self, handle: int) -> int:
        """Size in bytes of a live buffer (or of the boundary memory). Raises InvalidBuffer."""
        return self._memory.get(handle, "buffer")[0].size

    # ---- pools -----------------------------------------------------------------
    @one_thread_at_a_time
    def allocate_pool(self, size: int) -> PoolHandle:
        """A new zero-filled pool of ``size`` bytes. Raises AllocationFailed."""
        return PoolHandle(self._memory.allocate("pool", size).handle)

    @one_thread_at_a_time
    def free_pool(self, handle: int) -> None:
        """Release a pool. Raises InvalidBuffer (also for a buffer handle)."""
        self._memory.free(handle, "pool")

    @one_thread_at_a_time
    def copy_to_pool(self, handle: int, offset: int, data: Any) -> None:
        """Copy ``data`` into the pool at ``offset`` (one copy). Raises InvalidBuffer."""
        self._copy_in(handle, "pool", offset, data, "copy_to_pool")

    @one_thread_at_a_time
    def copy_from_pool(self, handle: int, offset: int, out: Any) -> Any:
        """Fill ``out`` (a writable buffer; or an int: that many new bytes) from the pool at ``offset``.

        One copy. Raises InvalidBuffer.
        """
        if isinstance(out, int) and not isinstance(out, bool):
            if out < 0:
                raise InvalidBuffer(f"copy_from_pool: byte count must be non-negative, got {out}")
            alloc, data = self._memory.get(handle, "pool")
            self._memory.table.check_range(alloc, offset, out, "copy_from_pool")
            return data[offset:offset + out].tobytes()
        return self._copy_out(handle, "pool", offset, out, "copy_from_pool")

    @one_thread_at_a_time
    def pool_size(self, handle: int) -> int:
        """Size in bytes of a live pool. Raises InvalidBuffer."""
        return self._memory.get(handle, "pool")[0].size

    def _copy_in(self, handle: int, kind: str, offset: int, data: Any, what: str) -> None:
        alloc, target = self._memory.get(handle, kind)
        source = source_bytes(data, what)
        self._memory.table.check_range(alloc, offset, source.nbytes, what)
        target[offset:offset + source.nbytes] = source

    def _copy_out(self, handle: int, kind: str, offset: int, out: Any, what: str) -> Any:
        alloc, source = self._memory.get(handle, kind)
        if out is None:
            self._memory.table.check_range(alloc, offset, 0, what)
            return source[offset:].tobytes()
        target = target_bytes(out, what)
        self._memory.table.check_range(alloc, offset, target.nbytes, what)
        target[:] = source[offset:offset + target.nbytes]
        return out

    # ---- execution (Backend.execute_program_with_params calls these hooks) ------------------------
    def _check_launch(self, config: LaunchConfig) -> None:
        """ExecutionFailed for a launch too large for the reference: more than MAX_REFERENCE_LANES lanes or
        MAX_SHARED_TOTAL bytes of shared memory (Backend.execute_program_with_params runs the launch)."""
        if config.total_threads > MAX_REFERENCE_LANES:
            raise ExecutionFailed(f"the reference backend runs at most {MAX_REFERENCE_LANES} lanes per launch, "
                                  f"this one has {config.total_threads}")
        if config.num_blocks * config.shared_memory > MAX_SHARED_TOTAL:
            raise ExecutionFailed(f"{config.num_blocks} blocks x {config.shared_memory} bytes of shared memory "
                                  f"exceed the reference backend's {MAX_SHARED_TOTAL} bytes")

    def _compile(self, compiled: PipelineProgram, config: LaunchConfig) -> tuple[PipelineProgram, Prepared]:
        """The executor's plans of the pipeline's program, kept with it (the reference needs no lowering plan)."""
        key, rules = SUBNORMAL_MODES[self.subnormals]
        prepared = compiled.plans.get(key)
        if prepared is None:
            prepared = compiled.plans.setdefault(key, prepare(compiled.program, compiled.info, rules))
        return compiled, prepared

    def _launch(self, artifact: tuple[PipelineProgram, Prepared], params: ExecutionParams, budget: int) -> None:
        compiled, prepared = artifact
        config = params.config
        self._accumulator = np.zeros(NUM_CLASSES, dtype=np.float64)
        if self._geometry is None or self._geometry.config != config:
            self._geometry = LaneGeometry(config)
        run_program(compiled.program, compiled.info, config, self._memory, budget=budget, registers=params.registers,
                    accumulator=self._accumulator, prepared=prepared, geometry=self._geometry)

    # ---- capabilities ------------------------------------------------------------
    def supports_op(self, info: OpcodeInfo, ty: Type | None) -> bool:
        """True for every row of the opcode table and each type it accepts (None for untyped rows)."""
        if info.name not in RULES:
            return False
        return ty is None if not info.types else ty in info.types

    @classmethod
    def documentation(cls):
        """The reference's section of docs/backends.md: every row with a rule, each accepted type, exactly."""
        from ..docs_backends import BackendDocumentation
        from ..isa.operations import COOPERATIVE_OPERATION_TYPES

        def supports(info: OpcodeInfo, ty: Type | None) -> bool:
            return info.name in RULES and (ty is None if not info.types else ty in info.types)

        return BackendDocumentation(
            "cpu", "c", supports, lambda operation, ty: ty in COOPERATIVE_OPERATION_TYPES[operation], {},
            ("The reference (NumPy): the executable specification; exact by definition.",))

    @one_thread_at_a_time
    def device_info(self) -> dict:
        """``name``, ``device`` (the host CPU), ``subnormals`` (the constructor's), ``engine`` (NumPy version), ``memory_limit``, ``memory_used``
        and ``max_memory``: the memory limit, or the host's physical memory (None where the host does not
        say), so ``init_backend_with_memory_check`` need not allocate (NumPy's zeros are lazy and would
        accept any size); ``max_allocation``: the largest buffer or pool (MAX_ALLOCATION, or the limit)."""
        host = host_memory_bytes()
        limit = self._memory.limit
        return {
            "name": self.name,
            "device_type": "cpu",
            "subnormals": self.subnormals,
            "device": platform.processor() or platform.machine() or "host CPU",
            "engine": f"NumPy {np.__version__}",
            "memory_limit": limit,
            "memory_used": self._memory.used,
            "max_memory": host if limit is None else min(limit, host if host is not None else limit),
            "max_allocation": MAX_ALLOCATION if limit is None else min(limit, MAX_ALLOCATION),
        }

    @one_thread_at_a_time
    def resonance_accumulator(self) -> list[float]:
        """The 96 ResAccum sums of the last launch (zeros before any), as Python floats (a copy)."""
        return self._accumulator.tolist()

    @closes
    def close(self) -> None:
        """Release the buffers, pools and cached programs; the backend is closed (later calls raise
        BackendClosed)."""
        self._memory = MemoryStore(self._memory.limit)
        self._pipeline.clear()
        self._geometry = None
