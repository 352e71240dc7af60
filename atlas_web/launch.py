"""Launch shapes and per-launch parameters."""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .errors import ExecutionFailed, ProgramError
from .isa.registers import Register, SpecialRegister
from .isa.types import Type

__all__ = [
    "LaunchConfig", "ExecutionParams", "DEFAULT_BLOCK", "DEFAULT_BUDGET", "MAX_LANES", "check_budget",
    "normalized_registers", "as_int", "UNIFORM_SPECIALS", "OPTIMIZE_LEVELS", "check_optimize", "plain_params",
]

#: lanes per block chosen by LaunchConfig.linear
DEFAULT_BLOCK = 256
#: backward branches a lane may take before it traps BUDGET_EXCEEDED
DEFAULT_BUDGET = 1 << 24
#: the most lanes one launch may have
MAX_LANES = 1 << 31


def as_int(value: object) -> int | None:
    """``value`` as a Python int when it is an integer (NumPy integers included, bools not), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def _positive(method: str, name: str, value: object) -> int:
    number = as_int(value)
    if number is None or number < 1:
        raise ExecutionFailed(f"LaunchConfig.{method}: {name} must be a positive int, got {value!r}")
    return number


def _blocks(lanes: int, block: int) -> int:
    """Blocks of ``block`` lanes needed to cover ``lanes``."""
    return (lanes + block - 1) // block


def _dims(name: str, value: object) -> tuple[int, int, int]:
    if type(value) is tuple and len(value) == 3:  # the common case, checked without generators (a launch makes one)
        x, y, z = value
        if (type(x) is int and type(y) is int and type(z) is int and 1 <= x <= 0xFFFFFFFF and 1 <= y <= 0xFFFFFFFF
                and 1 <= z <= 0xFFFFFFFF):
            return value  # type: ignore[return-value]
    if as_int(value) is not None:
        value = (value,)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
        raise ExecutionFailed(f"LaunchConfig.{name} must be 1 to 3 positive ints, got {value!r}")
    dims = tuple(as_int(d) for d in value) + (1,) * (3 - len(value))
    if not all(d is not None and 1 <= d <= 0xFFFFFFFF for d in dims):
        raise ExecutionFailed(f"LaunchConfig.{name} must be 1 to 3 ints in 1..2**32-1, got {value!r}")
    return dims  # type: ignore[return-value]


#: special register -> (LaunchConfig field, axis) of the registers whose value the launch shape gives every lane
UNIFORM_SPECIALS = {
    SpecialRegister.BLOCK_DIM_X: ("block", 0), SpecialRegister.BLOCK_DIM_Y: ("block", 1),
    SpecialRegister.BLOCK_DIM_Z: ("block", 2), SpecialRegister.GRID_DIM_X: ("grid", 0),
    SpecialRegister.GRID_DIM_Y: ("grid", 1), SpecialRegister.GRID_DIM_Z: ("grid", 2),
}


@dataclass(frozen=True, slots=True)
class LaunchConfig:
    """``grid`` blocks of ``block`` lanes, with ``shared_memory`` bytes of shared memory per block.

    Raises ExecutionFailed for a malformed shape or more than MAX_LANES lanes.
    """

    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    shared_memory: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "grid", _dims("grid", self.grid))
        object.__setattr__(self, "block", _dims("block", self.block))
        sm = self.shared_memory if type(self.shared_memory) is int else as_int(self.shared_memory)
        if sm is None or not 0 <= sm <= 0xFFFFFFFF:
            raise ExecutionFailed("LaunchConfig.shared_memory must be an int in 0..2**32-1, "
                                  f"got {self.shared_memory!r}")
        object.__setattr__(self, "shared_memory", sm)
        if self.total_threads > MAX_LANES:
            raise ExecutionFailed(f"a launch may have at most {MAX_LANES} lanes, this one has {self.total_threads}")

    def uniform_specials(self) -> dict[SpecialRegister, int]:
        """The special registers with one value in every lane of the launch (block and grid dimensions)."""
        return {reg: getattr(self, field)[axis] for reg, (field, axis) in UNIFORM_SPECIALS.items()}

    @classmethod
    def linear(cls, total_threads: int, block_size: int = DEFAULT_BLOCK, shared_memory: int = 0) -> "LaunchConfig":
        """A 1-D launch of at least ``total_threads`` lanes in blocks of up to ``block_size``.

        When ``total_threads`` is not a multiple of the block, the last block has
        spare lanes (GLOBAL_LANE_ID >= total_threads): guard them in the program.
        Raises ExecutionFailed naming the argument that is not a positive int, or
        for more than MAX_LANES lanes.
        """
        total_threads = _positive("linear", "total_threads", total_threads)
        block = min(total_threads, _positive("linear", "block_size", block_size))
        return cls(grid=(_blocks(total_threads, block), 1, 1), block=(block, 1, 1), shared_memory=shared_memory)

    @classmethod
    def grid_2d(cls, width: int, height: int, block: tuple[int, int] = (16, 16),
                shared_memory: int = 0) -> "LaunchConfig":
        """A 2-D launch covering ``width`` x ``height`` lanes in blocks of up to ``block`` (x, y).

        Spare lanes exist where the block does not divide the size: guard them.
        Raises ExecutionFailed naming the argument that is malformed.
        """
        width = _positive("grid_2d", "width", width)
        height = _positive("grid_2d", "height", height)
        sizes = tuple(as_int(b) for b in block) if isinstance(block, (tuple, list)) else ()
        if len(sizes) != 2 or not all(b is not None and b >= 1 for b in sizes):
            raise ExecutionFailed(f"LaunchConfig.grid_2d: block must be two positive ints, got {block!r}")
        bx, by = min(width, sizes[0]), min(height, sizes[1])  # type: ignore[type-var]
        return cls(grid=(_blocks(width, bx), _blocks(height, by), 1), block=(bx, by, 1), shared_memory=shared_memory)

    @property
    def total_threads(self) -> int:
        """Lanes in the launch: product of grid and block."""
        g, b = self.grid, self.block
        return g[0] * g[1] * g[2] * b[0] * b[1] * b[2]

    @property
    def block_lanes(self) -> int:
        """Lanes in one block: product of ``block``."""
        b = self.block
        return b[0] * b[1] * b[2]

    @property
    def num_blocks(self) -> int:
        """Blocks in the launch: product of ``grid``."""
        g = self.grid
        return g[0] * g[1] * g[2]


def check_budget(budget: object, what: str) -> int:
    """``budget`` (backward jumps per lane) as a non-negative int; raises ExecutionFailed naming ``what``."""
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        raise ExecutionFailed(f"{what} must be a non-negative int (backward jumps per lane), got {budget!r}")
    return budget


#: integer type -> the (lo, hi) range whose ints MOV_IMM keeps unchanged (normalized_registers' fast path)
_KEPT_INTS = {ty: ty.int_range() for ty in Type if ty.is_integer() and ty.bits <= 64}


#: the optimization levels (atlas_web.opt): 0 none, 1 one round of every pass, 2 rounds until nothing changes
OPTIMIZE_LEVELS = (0, 1, 2)


def check_optimize(level: object, what: str, error: type = ExecutionFailed) -> int:
    """``level`` as one of OPTIMIZE_LEVELS; raises ``error`` (default ExecutionFailed) naming ``what``."""
    if isinstance(level, bool) or level not in OPTIMIZE_LEVELS:
        raise error(f"{what} must be an optimization level 0, 1 or 2, got {level!r}")
    return level  # type: ignore[return-value]


def normalized_registers(registers: object) -> dict[Register, tuple[Type, int | float]]:
    """Preset registers checked and normalized like MOV_IMM immediates (wrapped or rounded to their
    type, NaN canonical); a new dict. Raises ProgramError naming the register."""
    if type(registers) is dict and not registers:
        return {}   # the common launch: no presets (nothing to import or check)
    from .isa.instructions import MOV_IMM, normalize_immediate  # type: ignore[attr-defined]  # MOV_IMM: from the table

    if not isinstance(registers, Mapping):
        raise ProgramError(f"ExecutionParams.registers must map Register -> (Type, value), got {registers!r}")
    out: dict[Register, tuple[Type, int | float]] = {}
    for reg, entry in registers.items():
        if not isinstance(reg, Register):
            raise ProgramError(f"ExecutionParams.registers: key {reg!r} is not a Register")
        if reg.is_special:
            raise ProgramError(f"ExecutionParams.registers: {reg} is the special register "
                               f"{SpecialRegister(reg.index).name} (read-only)")
        if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], Type)):
            raise ProgramError(f"ExecutionParams.registers[{reg}] must be a (Type, value) pair, got {entry!r}")
        ty, value = entry
        kept = _KEPT_INTS.get(ty)
        if kept is not None and type(value) is int and kept[0] <= value <= kept[1]:
            out[reg] = (ty, value)  # what MOV_IMM keeps; skipping it makes a launch with pointer presets cheap
            continue
        try:  # MOV_IMM's own normalization (it takes every type), without making the instruction
            out[reg] = (ty, normalize_immediate(MOV_IMM.INFO, value, ty))
        except ProgramError as error:
            raise ProgramError(f"ExecutionParams.registers[{reg}]: {error.reason.removeprefix('MOV_IMM: ')}") from None
    return out


@dataclass(frozen=True)
class ExecutionParams:
    """A launch plus uniform register values every lane starts with.

    ``registers`` maps a general Register to ``(Type, value)``; the verifier
    treats them as defined with that type at entry. They are checked and
    normalized like MOV_IMM immediates and kept as a read-only copy. ``budget``
    overrides the backend's execution budget (backward branches per lane) for
    this launch. ``optimize`` overrides the backend's optimization level (0, 1
    or 2; atlas_web.opt) for this launch. Raises ExecutionFailed for a
    ``config`` that is not a LaunchConfig, a bad ``budget`` or ``optimize``,
    ProgramError for a bad register preset.
    """

    config: LaunchConfig
    registers: Mapping[Register, tuple[Type, int | float]] = field(default_factory=dict)
    budget: int | None = None
    optimize: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.config, LaunchConfig):
            raise ExecutionFailed(f"ExecutionParams.config must be a LaunchConfig, got {type(self.config).__name__}")
        if self.budget is not None:
            check_budget(self.budget, "ExecutionParams.budget")
        if self.optimize is not None:
            check_optimize(self.optimize, "ExecutionParams.optimize")
        object.__setattr__(self, "registers", MappingProxyType(normalized_registers(self.registers)))


@functools.lru_cache(maxsize=64)
def _plain_params(config: LaunchConfig) -> ExecutionParams:
    return ExecutionParams(config)


def plain_params(config: object) -> ExecutionParams:
    """``ExecutionParams(config)``: no presets, the backend's budget and optimization level. One immutable object
    is shared by the launches of equal LaunchConfigs (the 64 most recent), so a repeated ``execute_program``
    checks nothing again. Raises ExecutionFailed for a ``config`` that is not a LaunchConfig."""
    if type(config) is LaunchConfig:
        return _plain_params(config)
    return ExecutionParams(config)  # type: ignore[arg-type]
