"""The pure per-lane Atlas instructions: ClsGet, MIRROR, UnityTest, NbrCount, NbrGet, BoundMap.

Class, index, page and byte operands may be any integer type of at most 64
bits; each is read as an unsigned value of its own width (a negative i32
class id is a huge class and traps INVALID_CLASS). Lookups use the flat
tables of ``atlas_web.atlas``. Each rule has the PURE_LANE_RULES shape
``(instr, operands, n) -> Outcome``.
"""

from __future__ import annotations

import numpy as np

from .. import atlas
from ..errors import TrapCode
from .numeric_formats import unsigned_view
from .numeric_outcome import Outcome, operand_values, trap_list

__all__ = ["ATLAS_RULES"]

_CLASSIFY = np.frombuffer(atlas.CLASSIFY_TABLE, dtype=np.uint8)
_MIRROR = np.frombuffer(atlas.MIRROR_TABLE, dtype=np.uint8)
_DEGREE = np.frombuffer(atlas.DEGREE_TABLE, dtype=np.uint8).astype(np.uint32)
# one row of 7 per class: the neighbours, 255 padding, and a 7th column of 255 that every index >= 6 reads
_ROW = atlas.MAX_DEGREE + 1
_NEIGHBOURS = np.concatenate(
    [np.frombuffer(atlas.NEIGHBOUR_TABLE, dtype=np.uint8).reshape(atlas.NUM_CLASSES, atlas.MAX_DEGREE),
     np.full((atlas.NUM_CLASSES, 1), atlas.NO_NEIGHBOUR, dtype=np.uint8)], axis=1).ravel()
_LAST_CLASS = atlas.NUM_CLASSES - 1


def _unsigned(values: np.ndarray) -> np.ndarray:
    """An integer operand read as unsigned of its width (a view when possible)."""
    return unsigned_view(np.ascontiguousarray(values))


def _class_operand(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class ids as uint16, clamped to 95 where invalid, mask of lanes whose class is >= 96)."""
    ids = _unsigned(values)
    invalid = ids > _LAST_CLASS
    return np.minimum(ids, _LAST_CLASS).astype(np.uint16), invalid


def _class_numbers(ops: dict, name: str = "class_id") -> dict:
    """The numbers of an INVALID_CLASS trap: the class operand read unsigned."""
    return {TrapCode.INVALID_CLASS: operand_values(name, _unsigned(ops[name]))}


def cls_get(instr, ops: dict, n: int) -> Outcome:
    """dst:u8 = classify(low byte of src)."""
    src = np.ascontiguousarray(ops["src"])
    low = src.view(np.uint8)[::src.dtype.itemsize]  # little-endian: the first byte of each value
    return Outcome(np.take(_CLASSIFY, low))


def mirror(instr, ops: dict, n: int) -> Outcome:
    """dst:u8 = mirror(src); src >= 96 traps INVALID_CLASS."""
    ids, invalid = _class_operand(ops["src"])
    return Outcome(np.take(_MIRROR, ids), trap_list((TrapCode.INVALID_CLASS, invalid)), _class_numbers(ops, "src"))


def unity_test(instr, ops: dict, n: int) -> Outcome:
    """pred = src in {1, 4}; a class >= 96 gives false."""
    ids = _unsigned(ops["src"])
    return Outcome((ids == 1) | (ids == 4))


def nbr_count(instr, ops: dict, n: int) -> Outcome:
    """dst:u32 = degree(class_id); class_id >= 96 traps INVALID_CLASS."""
    ids, invalid = _class_operand(ops["class_id"])
    return Outcome(np.take(_DEGREE, ids), trap_list((TrapCode.INVALID_CLASS, invalid)), _class_numbers(ops))


def nbr_get(instr, ops: dict, n: int) -> Outcome:
    """dst:u8 = neighbours(class_id)[index]; index >= degree gives 255; class_id >= 96 traps INVALID_CLASS."""
    ids, invalid = _class_operand(ops["class_id"])
    ids *= np.uint16(_ROW)
    ids += np.minimum(_unsigned(ops["index"]), atlas.MAX_DEGREE).astype(np.uint16)
    return Outcome(np.take(_NEIGHBOURS, ids), trap_list((TrapCode.INVALID_CLASS, invalid)), _class_numbers(ops))


def bound_map(instr, ops: dict, n: int) -> Outcome:
    """dst:u64 = class_id*12288 + page*256 + byte; traps INVALID_CLASS (class >= 96), then OUT_OF_BOUNDS.

    OUT_OF_BOUNDS is for page >= 48 or byte >= 256.
    """
    ids, invalid = _class_operand(ops["class_id"])
    page = _unsigned(ops["page"])
    byte = _unsigned(ops["byte"])
    outside = (page >= atlas.PAGES) | (byte >= atlas.BYTES_PER_PAGE)
    value = ids.astype(np.uint32)  # every valid result is below 2**21
    value *= np.uint32(atlas.TOTAL_ELEMENTS)
    offset = np.minimum(page, atlas.PAGES - 1).astype(np.uint32)
    offset *= np.uint32(atlas.BYTES_PER_PAGE)
    offset += np.minimum(byte, atlas.BYTES_PER_PAGE - 1).astype(np.uint32)
    value += offset
    traps = trap_list((TrapCode.INVALID_CLASS, invalid), (TrapCode.OUT_OF_BOUNDS, outside))

    def beyond(position: int) -> tuple[str, int, int]:
        if page[position] >= atlas.PAGES:
            return "page", int(page[position]), atlas.PAGES
        return "byte", int(byte[position]), atlas.BYTES_PER_PAGE

    return Outcome(value.astype(np.uint64), traps, {**_class_numbers(ops), TrapCode.OUT_OF_BOUNDS: beyond})


ATLAS_RULES = {
    "ClsGet": cls_get, "MIRROR": mirror, "UnityTest": unity_test, "NbrCount": nbr_count, "NbrGet": nbr_get,
    "BoundMap": bound_map,
}
