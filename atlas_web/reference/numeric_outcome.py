"""The result of one per-lane rule: the values of the executed lanes and their trap masks."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import TrapCode

__all__ = ["Outcome", "trap_list"]


class Outcome(NamedTuple):
    """``value``: the result for the executed lanes (storage dtype of the destination, bool for predicates).

    ``traps``: ``(code, mask)`` pairs in priority order, each mask a bool array
    over the executed lanes; a lane's first matching code is its trap. Masks
    with no lane set are left out, so an empty tuple means no lane trapped.
    The value of a trapping lane is unspecified.
    """

    value: np.ndarray
    traps: tuple[tuple[TrapCode, np.ndarray], ...] = ()


def trap_list(*pairs: tuple[TrapCode, np.ndarray]) -> tuple[tuple[TrapCode, np.ndarray], ...]:
    """The pairs whose mask has a lane set, in the given (priority) order."""
    return tuple((code, mask) for code, mask in pairs if mask.any())
