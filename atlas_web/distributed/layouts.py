"""How a distributed buffer lies on the devices (Replicated, Sharded, Tiled) and how a launch is split
(DataParallel over a device mesh).

Standard library only. ``mesh.split_grid`` is the one rule that places work: contiguous ranges of blocks per
mesh axis, the first ``blocks % devices`` devices of an axis one block more, rank order x fastest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ProgramError
from ..isa.registers import Register
from ..launch import LaunchConfig
from .mesh import DevicePart, lane_runs, position_runs, split_blocks

__all__ = ["Replicated", "Sharded", "Tiled", "DataParallel", "split_blocks", "element_runs"]


@dataclass(frozen=True)
class Replicated:
    """Every device holds the whole buffer. After a launch the copies must agree (write it sharded, or make them
    agree with an AllReduce/Broadcast), else the executor raises ExecutionFailed naming the buffer."""


def _chunk(layout, chunk) -> None:
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise ProgramError(f"{type(layout).__name__}.chunk must be a positive int, got {chunk!r}")


@dataclass(frozen=True)
class Sharded:
    """The buffer is split by global lane id (GLOBAL_LANE_ID), ``chunk`` elements per lane of a DataParallel
    launch: each device holds its lanes' elements in its own lane order (on a 1-D grid, the device running global
    lanes [a, b) holds elements [a*chunk, b*chunk)), so a lane indexes its shard with its device-local
    GLOBAL_LANE_ID. Raises ProgramError for chunk < 1."""

    chunk: int = 1

    def __post_init__(self) -> None:
        _chunk(self, self.chunk)


@dataclass(frozen=True)
class Tiled:
    """The buffer is a row-major array over the launch's lane positions (z, y, x; x = BLOCK_IDX_X * BLOCK_DIM_X
    + LANE_IDX_X), ``chunk`` elements per position: each device holds its box of positions, row-major in its own
    box, so a 2-D program indexing ``y * (GRID_DIM_X * BLOCK_DIM_X) + x`` runs unchanged on every device's tile.
    On a 1-D grid of 1-D blocks it is Sharded. Raises ProgramError for chunk < 1."""

    chunk: int = 1

    def __post_init__(self) -> None:
        _chunk(self, self.chunk)


@dataclass(frozen=True)
class DataParallel:
    """Split ``config``'s grid across the executor's devices arranged as ``mesh`` (devices along the grid's x, y,
    z; None: all along x; ``mesh.split_grid``): each device runs its blocks as a launch of its own, with block and
    lane numbers and GRID_DIM local to it. Registers every lane starts with, for programs that need global
    positions: ``lane_offset`` (u32) the global lane id of the device's first lane (on a 1-D grid its lanes are
    the next ones); ``block_offset`` (up to three, for x, y, z; None skips an axis) the device's first global
    block index along that axis (u32). ``pointers``: Register -> DistributedBuffer, a register every lane starts
    with holding (u64) the pointer to its device's copy of the buffer (``make_pointer(handle, 0)``, for
    RegisterIndirect addressing). ``registers``: further ExecutionParams presets (the same on every device).
    Raises ProgramError for a malformed field (the mesh is checked against the devices at launch)."""

    config: LaunchConfig
    lane_offset: Register | None = None
    pointers: dict = field(default_factory=dict)
    registers: dict = field(default_factory=dict)
    mesh: tuple | None = None
    block_offset: tuple = ()

    def __post_init__(self) -> None:
        if not isinstance(self.config, LaunchConfig):
            raise ProgramError(f"DataParallel.config must be a LaunchConfig, got {self.config!r}")
        if not isinstance(self.block_offset, tuple) or len(self.block_offset) > 3 or \
                not all(r is None or isinstance(r, Register) for r in self.block_offset):
            raise ProgramError(f"DataParallel.block_offset must be up to 3 Registers or None (x, y, z), got "
                               f"{self.block_offset!r}")

    def presets(self, part: DevicePart) -> dict:
        """The registers device ``part`` starts with (``registers`` plus the offsets)."""
        from ..isa.types import Type
        out = dict(self.registers)
        if self.lane_offset is not None:
            out[self.lane_offset] = (Type.U32, part.global_lane(self.config, 0))
        for axis, register in enumerate(self.block_offset):
            if register is not None:
                out[register] = (Type.U32, part.origin[axis])
        return out


def element_runs(buffer, part: DevicePart, config: LaunchConfig) -> list[tuple[int, int]]:
    """The elements (first, count) of ``buffer`` device ``part`` holds, in its order (the whole buffer when
    Replicated). Raises ProgramError for a Sharded or Tiled buffer whose size does not match the launch."""
    layout = buffer.layout
    if isinstance(layout, Replicated):
        return [(0, buffer.count)] if buffer.count else []
    if buffer.count != config.total_threads * layout.chunk:
        what = "per lane" if isinstance(layout, Sharded) else "per lane position"
        raise ProgramError(f"{buffer!r} is {type(layout).__name__.lower()} {layout.chunk} element(s) {what} over "
                           f"{config.total_threads} lanes: it must hold {config.total_threads * layout.chunk} "
                           f"elements, not {buffer.count}")
    runs = lane_runs if isinstance(layout, Sharded) else position_runs
    return runs(part, config, layout.chunk)
