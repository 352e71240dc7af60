"""The 96 resonance classes of the Atlas ISA (shared/atlas-structures.md), as functions and flat tables.

Standard library only (imports under Pyodide). A class id is an int 0–95; its
label is ``(e1, e2, e3, d45, e6, e7)`` with ``d45`` varying fastest in the id.
The flat tables (``CLASSIFY_TABLE``, ``MIRROR_TABLE``, ``DEGREE_TABLE``,
``NEIGHBOUR_TABLE``) are immutable ``bytes`` that code generators embed as
constant data; the functions check their arguments and raise ProgramError
(a ValueError) naming the argument and its limit.
"""

from __future__ import annotations

from .errors import ProgramError

__all__ = [
    "NUM_CLASSES", "PAGES", "BYTES_PER_PAGE", "TOTAL_ELEMENTS", "BOUNDARY_CELLS", "PHASE_MODULUS",
    "NUM_EDGES", "MAX_DEGREE", "UNITY_CLASSES", "NO_NEIGHBOUR",
    "label_of", "class_of", "neighbours", "degree", "mirror", "is_unity", "classify", "bound_map",
    "CLASSIFY_TABLE", "MIRROR_TABLE", "DEGREE_TABLE", "NEIGHBOUR_TABLE",
]

#: number of resonance classes (ids 0–95)
NUM_CLASSES = 96
#: pages of a class's boundary region
PAGES = 48
#: bytes per page
BYTES_PER_PAGE = 256
#: cells per class: 48 pages x 256 bytes
TOTAL_ELEMENTS = PAGES * BYTES_PER_PAGE
#: cells of the whole boundary: the range of bound_map is 0 .. BOUNDARY_CELLS - 1
BOUNDARY_CELLS = NUM_CLASSES * TOTAL_ELEMENTS
#: a lane's phase is taken modulo this (8 x 96)
PHASE_MODULUS = 8 * NUM_CLASSES
#: edges of the class graph
NUM_EDGES = 256
#: the largest degree (classes with d45 = 0)
MAX_DEGREE = 6
#: the classes with d45 = 0 and e1 = e2 = e3 = e6 = 0
UNITY_CLASSES = (1, 4)
#: what NbrGet gives for an index at or past the degree; never a class id
NO_NEIGHBOUR = 255

Label = tuple[int, int, int, int, int, int]


def _check_class(class_id: object, what: str = "class_id") -> int:
    if isinstance(class_id, bool) or not isinstance(class_id, int) or not 0 <= class_id < NUM_CLASSES:
        raise ProgramError(f"{what} must be an int in 0..{NUM_CLASSES - 1}, got {class_id!r}")
    return class_id


def _label(class_id: int) -> Label:
    q = class_id // 3
    return ((q >> 4) & 1, (q >> 3) & 1, (q >> 2) & 1, class_id % 3 - 1, (q >> 1) & 1, q & 1)


def _class(label: Label) -> int:
    e1, e2, e3, d45, e6, e7 = label
    return 48 * e1 + 24 * e2 + 12 * e3 + 6 * e6 + 3 * e7 + (d45 + 1)


def label_of(class_id: int) -> Label:
    """The label ``(e1, e2, e3, d45, e6, e7)`` of a class; raises ProgramError for an id outside 0–95."""
    return _label(_check_class(class_id))


def class_of(label: Label) -> int:
    """The class id of ``(e1, e2, e3, d45, e6, e7)``; raises ProgramError for a malformed label."""
    if not isinstance(label, tuple) or len(label) != 6:
        raise ProgramError(f"label must be a tuple (e1, e2, e3, d45, e6, e7), got {label!r}")
    for name, value, allowed in zip(("e1", "e2", "e3", "d45", "e6", "e7"), label,
                                    ((0, 1), (0, 1), (0, 1), (-1, 0, 1), (0, 1), (0, 1))):
        if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
            raise ProgramError(f"label component {name} must be one of {allowed}, got {value!r}")
    return _class(label)


def _adjacent(a: Label, b: Label) -> bool:
    """Labels differ in exactly one of e1, e2, e3, e6, or only in d45 by one step."""
    binary_a = (a[0], a[1], a[2], a[4], a[5])
    binary_b = (b[0], b[1], b[2], b[4], b[5])
    flips = sum(x != y for x, y in zip(binary_a, binary_b))
    if a[3] == b[3]:
        return flips == 1 and a[5] == b[5]
    return flips == 0 and abs(a[3] - b[3]) == 1


def _build_neighbours() -> tuple[tuple[int, ...], ...]:
    labels = [_label(c) for c in range(NUM_CLASSES)]
    return tuple(tuple(d for d in range(NUM_CLASSES) if d != c and _adjacent(labels[c], labels[d]))
                 for c in range(NUM_CLASSES))


_NEIGHBOURS = _build_neighbours()


def neighbours(class_id: int) -> tuple[int, ...]:
    """The neighbours of a class in ascending id order; raises ProgramError for an id outside 0–95."""
    return _NEIGHBOURS[_check_class(class_id)]


def degree(class_id: int) -> int:
    """The number of neighbours (6 when d45 = 0, else 5); raises ProgramError for an id outside 0–95."""
    return len(_NEIGHBOURS[_check_class(class_id)])


def _mirror(class_id: int) -> int:
    return class_id + 3 if class_id % 6 < 3 else class_id - 3


def mirror(class_id: int) -> int:
    """The class with e7 flipped; raises ProgramError for an id outside 0–95."""
    return _mirror(_check_class(class_id))


def is_unity(class_id: int) -> bool:
    """True for the unity classes 1 and 4; raises ProgramError for an id outside 0–95."""
    return _check_class(class_id) in UNITY_CLASSES


def _classify(byte: int) -> int:
    t = ((byte >> 5) & 3) % 3
    return _class((byte & 1, (byte >> 1) & 1, (byte >> 2) & 1, t - 1, (byte >> 3) & 1, (byte >> 4) & 1))


def classify(byte: int) -> int:
    """The class of a byte value (bit 7 ignored); raises ProgramError for a value outside 0–255."""
    if isinstance(byte, bool) or not isinstance(byte, int) or not 0 <= byte < 256:
        raise ProgramError(f"byte must be an int in 0..255, got {byte!r}")
    return _classify(byte)


def bound_map(class_id: int, page: int, byte: int) -> int:
    """``class_id*12288 + page*256 + byte``, a bijection onto 0 .. 1 179 647.

    Raises ProgramError when class_id is outside 0–95, page outside 0–47 or byte outside 0–255.
    """
    _check_class(class_id)
    if isinstance(page, bool) or not isinstance(page, int) or not 0 <= page < PAGES:
        raise ProgramError(f"page must be an int in 0..{PAGES - 1}, got {page!r}")
    if isinstance(byte, bool) or not isinstance(byte, int) or not 0 <= byte < BYTES_PER_PAGE:
        raise ProgramError(f"byte must be an int in 0..{BYTES_PER_PAGE - 1}, got {byte!r}")
    return class_id * TOTAL_ELEMENTS + page * BYTES_PER_PAGE + byte


#: CLASSIFY_TABLE[b] = classify(b) for every byte b (256 bytes)
CLASSIFY_TABLE: bytes = bytes(_classify(b) for b in range(256))
#: MIRROR_TABLE[c] = mirror(c) (96 bytes)
MIRROR_TABLE: bytes = bytes(_mirror(c) for c in range(NUM_CLASSES))
#: DEGREE_TABLE[c] = degree(c) (96 bytes)
DEGREE_TABLE: bytes = bytes(len(n) for n in _NEIGHBOURS)
#: NEIGHBOUR_TABLE[6*c + i] = neighbours(c)[i], padded with NO_NEIGHBOUR (96 x 6 bytes, row-major)
NEIGHBOUR_TABLE: bytes = bytes(
    v for row in _NEIGHBOURS for v in row + (NO_NEIGHBOUR,) * (MAX_DEGREE - len(row)))
