"""A launch grid split over a mesh of devices: which blocks each device runs and which elements it holds.

Standard library only. A DataParallel launch of grid (gx, gy, gz) over a device mesh (mx, my, mz) gives device
rank ``i + mx * (j + my * k)`` the blocks ``split_blocks(gx, mx)[i]`` along x, ``split_blocks(gy, my)[j]``
along y and ``split_blocks(gz, mz)[k]`` along z, run as a launch of its own (block and lane numbers local to
it). A buffer's elements on a device are a list of runs (first element, count) of the whole buffer, in the
order the device holds them:

- ``Sharded(chunk)``: by global lane id (GLOBAL_LANE_ID: blocks in x-fastest order, each block's lanes
  consecutive), ``chunk`` elements per lane; the device holds its lanes' elements in its own lane order, so a
  lane indexes its shard with its device-local GLOBAL_LANE_ID.
- ``Tiled(chunk)``: the buffer is a row-major array over the launch's lane positions (z, y, x), x fastest, with
  x = BLOCK_IDX_X * BLOCK_DIM_X + LANE_IDX_X (y, z alike), ``chunk`` elements per position; the device holds
  its box of positions, row-major in its own box, so a program indexing ``(y * width + x) * chunk`` with
  width = GRID_DIM_X * BLOCK_DIM_X runs unchanged on each device's tile.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ProgramError
from ..launch import LaunchConfig

__all__ = ["DevicePart", "split_blocks", "split_grid", "lane_runs", "position_runs", "check_mesh"]


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


@dataclass(frozen=True)
class DevicePart:
    """Device ``rank``'s share of a launch: ``grid`` blocks along (x, y, z) from global block ``origin``."""

    rank: int
    origin: tuple[int, int, int]
    grid: tuple[int, int, int]

    @property
    def blocks(self) -> int:
        """Blocks the device runs (0: it runs no launch)."""
        return self.grid[0] * self.grid[1] * self.grid[2]

    def launch(self, config: LaunchConfig) -> LaunchConfig | None:
        """The device's own launch (None when it has no block)."""
        if not self.blocks:
            return None
        return LaunchConfig(grid=self.grid, block=config.block, shared_memory=config.shared_memory)

    def global_lane(self, config: LaunchConfig, lane: int) -> int:
        """The global lane id of the device's local lane ``lane`` (-1 stays -1: a cooperative step's)."""
        if lane < 0:
            return -1
        block, within = divmod(lane, config.block_lanes)
        cx, cy, _ = self.grid
        x, y, z = block % cx + self.origin[0], (block // cx) % cy + self.origin[1], block // (cx * cy) + self.origin[2]
        gx, gy, _ = config.grid
        return (x + gx * (y + gy * z)) * config.block_lanes + within


def split_grid(config: LaunchConfig, mesh: tuple[int, int, int]) -> list[DevicePart]:
    """Every device's part of ``config``'s grid over ``mesh`` (rank order: x fastest)."""
    axes = [split_blocks(g, m) for g, m in zip(config.grid, mesh)]
    parts = []
    for k in range(mesh[2]):
        for j in range(mesh[1]):
            for i in range(mesh[0]):
                (ox, cx), (oy, cy), (oz, cz) = axes[0][i], axes[1][j], axes[2][k]
                parts.append(DevicePart(len(parts), (ox, oy, oz), (cx, cy, cz)))
    return parts


def _merged(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for first, count in runs:
        if count and out and out[-1][0] + out[-1][1] == first:
            out[-1] = (out[-1][0], out[-1][1] + count)
        elif count:
            out.append((first, count))
    return out


def lane_runs(part: DevicePart, config: LaunchConfig, chunk: int) -> list[tuple[int, int]]:
    """The elements (first, count) a device holds of a buffer Sharded by global lane id, in its lane order."""
    if not part.blocks:
        return []
    gx, gy, _ = config.grid
    (ox, oy, oz), (cx, cy, cz) = part.origin, part.grid
    per_block = config.block_lanes * chunk
    return _merged([((ox + gx * (oy + y + gy * (oz + z))) * per_block, cx * per_block)
                    for z in range(cz) for y in range(cy)])


def position_runs(part: DevicePart, config: LaunchConfig, chunk: int) -> list[tuple[int, int]]:
    """The elements (first, count) a device holds of a Tiled buffer, row-major in its box of lane positions."""
    if not part.blocks:
        return []
    (bx, by, bz), (gx, gy, _) = config.block, config.grid
    width, height = gx * bx, gy * by
    (ox, oy, oz), (cx, cy, cz) = part.origin, part.grid
    return _merged([(((oz * bz + z) * height + oy * by + y) * width * chunk + ox * bx * chunk, cx * bx * chunk)
                    for z in range(cz * bz) for y in range(cy * by)])


def check_mesh(mesh: object, devices: int) -> tuple[int, int, int]:
    """``mesh`` (None: all devices along x) as 3 positive ints whose product is ``devices``. Raises ProgramError."""
    if mesh is None:
        return (devices, 1, 1)
    dims = tuple(mesh) + (1,) * (3 - len(mesh)) if isinstance(mesh, (tuple, list)) and 1 <= len(mesh) <= 3 else ()
    if len(dims) != 3 or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims):
        raise ProgramError(f"DataParallel.mesh must be 1 to 3 positive ints (devices along x, y, z), got {mesh!r}")
    if dims[0] * dims[1] * dims[2] != devices:
        raise ProgramError(f"DataParallel.mesh {mesh} holds {dims[0] * dims[1] * dims[2]} devices; the executor has "
                           f"{devices}")
    return dims  # type: ignore[return-value]
