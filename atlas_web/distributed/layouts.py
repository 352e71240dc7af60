"""How a distributed buffer lies on the devices (Replicated, Sharded) and how a launch is split (DataParallel).

Standard library only. ``split_blocks(blocks, devices)`` is the one rule that places work: contiguous ranges,
the first ``blocks % devices`` devices one block more, rank order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ProgramError
from ..isa.registers import Register
from ..launch import LaunchConfig

__all__ = ["Replicated", "Sharded", "DataParallel", "split_blocks"]


@dataclass(frozen=True)
class Replicated:
    """Every device holds the whole buffer. After a launch the copies must agree (write it sharded, or make them
    agree with an AllReduce/Broadcast), else the executor raises ExecutionFailed naming the buffer."""


@dataclass(frozen=True)
class Sharded:
    """The buffer is split along its only axis (a flat array of elements) in chunks of ``chunk`` elements per
    lane of a DataParallel launch: the device running global lanes [a, b) holds elements [a*chunk, b*chunk),
    so a lane indexes its shard with its device-local GLOBAL_LANE_ID. Raises ProgramError for chunk < 1."""

    chunk: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.chunk, int) or self.chunk < 1:
            raise ProgramError(f"Sharded.chunk must be a positive int, got {self.chunk!r}")


@dataclass(frozen=True)
class DataParallel:
    """Split ``config``'s 1-D grid (grid (gx, 1, 1)) across the executor's devices (``split_blocks``): each device
    runs its blocks as a launch of its own, with block and lane numbers local to it; ``lane_offset``, when set,
    is a register every lane starts with holding (u32) its device's first global lane, so a program can name
    global positions. ``pointers``: Register -> DistributedBuffer, a register every lane starts with holding (u64)
    the pointer to its device's copy of the buffer (``make_pointer(handle, 0)``, for RegisterIndirect
    addressing). ``registers``: further ExecutionParams presets (the same on every device)."""

    config: LaunchConfig
    lane_offset: Register | None = None
    pointers: dict = field(default_factory=dict)
    registers: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.config, LaunchConfig):
            raise ProgramError(f"DataParallel.config must be a LaunchConfig, got {self.config!r}")
        if self.config.grid[1:] != (1, 1):
            raise ProgramError(f"DataParallel splits a 1-D grid (gx, 1, 1); got grid {self.config.grid}")


def split_blocks(blocks: int, devices: int) -> list[tuple[int, int]]:
    """(first block, block count) per device: contiguous, in rank order, the first ``blocks % devices`` devices
    taking one block more (a device may get none)."""
    base, extra = divmod(blocks, devices)
    out, first = [], 0
    for rank in range(devices):
        count = base + (1 if rank < extra else 0)
        out.append((first, count))
        first += count
    return out
