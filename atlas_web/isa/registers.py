"""Registers, predicates, special registers and labels."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import ProgramError

__all__ = [
    "Register", "Predicate", "Label", "SpecialRegister",
    "NUM_REGISTERS", "NUM_PREDICATES", "FIRST_SPECIAL_REGISTER",
]

NUM_REGISTERS = 256
NUM_PREDICATES = 16
#: r243 … r255 are read-only special registers; r0 … r242 are general.
FIRST_SPECIAL_REGISTER = 243


class SpecialRegister(enum.IntEnum):
    """The read-only registers a launch fills in (all typed u32)."""

    LANE_IDX_Y = 243
    LANE_IDX_Z = 244
    BLOCK_IDX_Y = 245
    BLOCK_IDX_Z = 246
    BLOCK_DIM_Y = 247
    BLOCK_DIM_Z = 248
    GRID_DIM_X = 249
    GRID_DIM_Y = 250
    GRID_DIM_Z = 251
    LANE_IDX_X = 252
    BLOCK_IDX_X = 253
    BLOCK_DIM_X = 254
    GLOBAL_LANE_ID = 255


@dataclass(frozen=True, slots=True, order=True)
class Register:
    """A general or special register, ``r0`` … ``r255``.

    Raises ProgramError (a ValueError) for an index outside 0 … 255.
    """

    index: int

    def __post_init__(self) -> None:
        if not isinstance(self.index, int) or isinstance(self.index, bool) or not 0 <= self.index < NUM_REGISTERS:
            raise ProgramError(f"register index must be an int in 0..{NUM_REGISTERS - 1}, got {self.index!r}")

    @property
    def is_special(self) -> bool:
        """True for the read-only special registers r243 … r255."""
        return self.index >= FIRST_SPECIAL_REGISTER

    @property
    def special(self) -> SpecialRegister | None:
        """The SpecialRegister this is, or None for a general register."""
        return SpecialRegister(self.index) if self.is_special else None

    def __str__(self) -> str:
        return f"r{self.index}"

    def __repr__(self) -> str:
        return f"Register({self.index})"


@dataclass(frozen=True, slots=True, order=True)
class Predicate:
    """A one-bit predicate register, ``p0`` … ``p15``.

    Raises ProgramError (a ValueError) for an index outside 0 … 15.
    """

    index: int

    def __post_init__(self) -> None:
        if not isinstance(self.index, int) or isinstance(self.index, bool) or not 0 <= self.index < NUM_PREDICATES:
            raise ProgramError(f"predicate index must be an int in 0..{NUM_PREDICATES - 1}, got {self.index!r}")

    def __str__(self) -> str:
        return f"p{self.index}"

    def __repr__(self) -> str:
        return f"Predicate({self.index})"


@dataclass(frozen=True, slots=True, order=True)
class Label:
    """A branch target; resolved to an instruction index by the Program.

    Names are identifiers: a letter or ``_`` then letters, digits, ``_`` or ``.``.
    Raises ProgramError (a ValueError) otherwise.
    """

    name: str

    def __post_init__(self) -> None:
        if not is_label_name(self.name):
            raise ProgramError(f"invalid label name {self.name!r}: use a letter or '_' then letters, digits, "
                               "'_' or '.'")

    def __str__(self) -> str:
        return f"@{self.name}"

    def __repr__(self) -> str:
        return f"Label({self.name!r})"


def is_label_name(name: object) -> bool:
    """True when ``name`` is a valid label identifier (at most 255 characters)."""
    if not isinstance(name, str) or not 0 < len(name) <= 255 or not name.isascii():
        return False
    if not (name[0].isalpha() or name[0] == "_"):
        return False
    return all(c.isalnum() or c in "_." for c in name)


# Convenience: r0 … r255 and p0 … p15 as module attributes (``from atlas_web.isa.registers import r1``).
for _i in range(NUM_REGISTERS):
    globals()[f"r{_i}"] = Register(_i)
for _i in range(NUM_PREDICATES):
    globals()[f"p{_i}"] = Predicate(_i)
del _i
