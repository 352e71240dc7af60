"""The engine-neutral objects a GPU driver hands out and takes back.

Buffers, shader modules, pipelines, binding layouts and dispatch commands are
plain Python objects that wrap an engine's own object (``native``: a wgpu-py
object natively, a JS proxy in the browser). Nothing here imports an engine.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from atlas_web.errors import ExecutionFailed, InvalidBuffer

__all__ = [
    "BufferUsage", "BindingKind", "BindingSpec", "GpuBuffer", "BufferBinding", "ShaderModule",
    "ComputePipeline", "DispatchCommand", "as_layout", "split_workgroups",
]

_buffer_ids = itertools.count(1)


class BufferUsage(enum.IntFlag):
    """What a buffer may be used for. The bit values are WebGPU's ``GPUBufferUsage`` values,
    so a driver passes them to its engine unchanged."""

    COPY_SRC = 0x0004
    COPY_DST = 0x0008
    UNIFORM = 0x0040
    STORAGE = 0x0080

    @classmethod
    def default(cls) -> "BufferUsage":
        """Storage that the host can write and read back: STORAGE | COPY_SRC | COPY_DST."""
        return cls.STORAGE | cls.COPY_SRC | cls.COPY_DST


#: the usage flags a driver accepts (all of BufferUsage)
ALL_USAGES = BufferUsage.COPY_SRC | BufferUsage.COPY_DST | BufferUsage.UNIFORM | BufferUsage.STORAGE


class BindingKind(enum.Enum):
    """How a shader sees a bound buffer. The values are WebGPU's ``GPUBufferBindingType`` names.

    ``usage`` is the buffer usage the binding needs; ``limit`` the device limit
    that caps a binding's size.
    """

    STORAGE = "storage"
    READ_ONLY_STORAGE = "read-only-storage"
    UNIFORM = "uniform"

    @property
    def usage(self) -> BufferUsage:
        return BufferUsage.UNIFORM if self is BindingKind.UNIFORM else BufferUsage.STORAGE

    @property
    def limit(self) -> str:
        return "maxUniformBufferBindingSize" if self is BindingKind.UNIFORM else "maxStorageBufferBindingSize"

    @property
    def offset_alignment_limit(self) -> str:
        return ("minUniformBufferOffsetAlignment" if self is BindingKind.UNIFORM
                else "minStorageBufferOffsetAlignment")


@dataclass(frozen=True, slots=True)
class BindingSpec:
    """One entry of a pipeline's bind group 0: ``@group(0) @binding(binding)`` seen as ``kind``."""

    binding: int
    kind: BindingKind = BindingKind.STORAGE

    def __post_init__(self) -> None:
        if not isinstance(self.binding, int) or isinstance(self.binding, bool) or self.binding < 0:
            raise ExecutionFailed(f"binding numbers are non-negative ints, got {self.binding!r}")
        object.__setattr__(self, "kind", BindingKind(self.kind))


def as_layout(spec: Mapping[int, Any] | Sequence[Any]) -> tuple[BindingSpec, ...]:
    """The canonical layout of ``spec``: BindingSpecs sorted by binding number.

    ``spec`` is a sequence of BindingSpec or ``(binding, kind)`` pairs, or a
    mapping binding -> kind; a kind is a BindingKind or its WebGPU name.
    Raises ExecutionFailed for an unknown kind or a binding named twice.
    """
    items = spec.items() if isinstance(spec, Mapping) else spec
    entries: dict[int, BindingSpec] = {}
    for item in items:
        if not isinstance(item, BindingSpec):
            try:
                binding, kind = item
                item = BindingSpec(binding, BindingKind(kind))
            except (TypeError, ValueError):
                kinds = ", ".join(k.value for k in BindingKind)
                raise ExecutionFailed(f"a layout entry is a BindingSpec or (binding, kind) with kind one of {kinds}; "
                                      f"got {item!r}") from None
        if item.binding in entries:
            raise ExecutionFailed(f"binding {item.binding} appears twice in the layout")
        entries[item.binding] = item
    return tuple(entries[b] for b in sorted(entries))


class GpuBuffer:
    """A device buffer: ``size`` bytes (as asked; the engine's allocation is rounded up to 4),
    ``usage`` flags and the engine's object ``native``. Opaque to callers: pass it back to
    the driver that made it. ``alive`` turns False after ``destroy_buffer``."""

    __slots__ = ("id", "size", "usage", "native", "alive", "driver_id")

    def __init__(self, size: int, usage: BufferUsage, native: Any, driver_id: int) -> None:
        self.id = next(_buffer_ids)
        self.size = size
        self.usage = usage
        self.native = native
        self.alive = True
        self.driver_id = driver_id

    def __repr__(self) -> str:
        state = "" if self.alive else ", destroyed"
        return f"GpuBuffer(id={self.id}, size={self.size}, usage={self.usage!r}{state})"


@dataclass(frozen=True, slots=True)
class BufferBinding:
    """A range of a buffer bound to one binding: ``size=None`` means to the end of the buffer."""

    buffer: GpuBuffer
    offset: int = 0
    size: int | None = None


@dataclass(frozen=True, eq=False, slots=True)
class ShaderModule:
    """A compiled (validated) WGSL module: its source, the SHA-256 ``digest`` of the source,
    the engine's module object, and the id of the driver that made it."""

    source: str
    digest: str
    native: Any = field(repr=False)
    driver_id: int = field(default=0, repr=False)


@dataclass(frozen=True, eq=False, slots=True)
class ComputePipeline:
    """A compute pipeline: the module, the entry point, the bind group 0 layout, the
    engine's pipeline and bind group layout objects, and the id of the driver that made it."""

    module: ShaderModule
    entry_point: str
    layout: tuple[BindingSpec, ...]
    native: Any = field(repr=False)
    native_bind_group_layout: Any = field(repr=False)
    driver_id: int = field(default=0, repr=False)

    @property
    def key(self) -> tuple[str, str, tuple[BindingSpec, ...]]:
        """The pipeline cache key: (source digest, entry point, layout)."""
        return (self.module.digest, self.entry_point, self.layout)


@dataclass(frozen=True, slots=True)
class DispatchCommand:
    """One compute dispatch: ``pipeline`` with ``bindings`` (binding number -> GpuBuffer or
    BufferBinding) over ``workgroups`` = (x, y, z) workgroups (an int means (x, 1, 1))."""

    pipeline: ComputePipeline
    bindings: Mapping[int, GpuBuffer | BufferBinding]
    workgroups: tuple[int, int, int] | int = (1, 1, 1)


def split_workgroups(count: int, max_per_dimension: int) -> tuple[int, int, int]:
    """A grid (x, y, z) of at least ``count`` workgroups with each dimension at most
    ``max_per_dimension`` (x as large as possible). Shaders rebuild the linear index as
    ``x + y * nx + z * nx * ny`` and skip indices past their element count.

    Raises ExecutionFailed when ``count`` does not fit in three dimensions.
    """
    if not isinstance(count, int) or count < 0:
        raise ExecutionFailed(f"a workgroup count is a non-negative int, got {count!r}")
    if count <= max_per_dimension:
        return (count, 1, 1)
    x = max_per_dimension
    rows = -(-count // x)
    if rows <= max_per_dimension:
        return (x, rows, 1)
    planes = -(-rows // max_per_dimension)
    if planes > max_per_dimension:
        raise ExecutionFailed(
            f"{count} workgroups exceed maxComputeWorkgroupsPerDimension={max_per_dimension} in all three dimensions")
    return (x, max_per_dimension, planes)


def check_buffer(buffer: object, what: str) -> GpuBuffer:
    """``buffer`` if it is a live GpuBuffer; raises InvalidBuffer naming ``what``."""
    if not isinstance(buffer, GpuBuffer):
        raise InvalidBuffer(f"{what}: expected a GpuBuffer from this driver, got {type(buffer).__name__}")
    if not buffer.alive:
        raise InvalidBuffer(f"{what}: buffer {buffer.id} was destroyed")
    return buffer
