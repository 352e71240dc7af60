"""The reference coverage contract: what the tests of tests/reference/ must cover, and what they declare.

Every test module ``tests/reference/test_*.py`` defines a module-level
``COVERS``: the ``(key, type)`` pairs it actually parametrizes over. A key is
an instruction name of the opcode table, or ``"MAP:<op>"`` / ``"BINMAP:<op>"``
/ ``"REDUCE:<op>"`` for a cooperative operation (MapOperation,
BinaryMapOperation, ReduceOperation member, by name or assembly text, any
case), or ``"LANEREDUCE:<kind>"`` for a per-lane reduction kind (add, min,
max, mul). The type is one the instruction or operation accepts, or None for
an instruction that carries no type.

``required_pairs()`` is every (instruction, accepted type) of OPCODE_TABLE
and every (operation, accepted type) of COOPERATIVE_OPERATION_TYPES.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from atlas_web.isa import (
    COOPERATIVE_OPERATION_TYPES, OPCODE_TABLE, SCALARS, BinaryMapOperation, MapOperation, ReduceOperation, Type,
)

__all__ = ["ENUM_PREFIXES", "LANE_REDUCE_KINDS", "required_pairs", "accepted_types", "normalize",
           "reference_test_modules", "declared_pairs"]

#: key prefix -> the enumeration of the cooperative operations it names
ENUM_PREFIXES = {"MAP": MapOperation, "BINMAP": BinaryMapOperation, "REDUCE": ReduceOperation}
#: the per-lane reduction kinds of ``numeric.lane_reduce``
LANE_REDUCE_KINDS = ("add", "min", "max", "mul")
_ROWS = {row.name: row for row in OPCODE_TABLE}


def _member(prefix: str, name: str):
    for member in ENUM_PREFIXES[prefix]:
        if name.lower() in (member.name.lower(), member.text):
            return member
    raise KeyError(f"{prefix}:{name} names no {ENUM_PREFIXES[prefix].__name__} member")


def normalize(key: str) -> str:
    """The canonical spelling of a COVERS key (``MAP:Abs``, ``LANEREDUCE:add``).

    Raises KeyError when it names nothing.
    """
    if not isinstance(key, str):
        raise KeyError(f"a COVERS key must be a str, got {key!r}")
    prefix, sep, name = key.partition(":")
    if not sep:
        if key not in _ROWS:
            raise KeyError(f"{key!r} is not an instruction of the opcode table")
        return key
    if prefix == "LANEREDUCE":
        if name.lower() not in LANE_REDUCE_KINDS:
            raise KeyError(f"{key!r}: the lane reduction kinds are {', '.join(LANE_REDUCE_KINDS)}")
        return f"LANEREDUCE:{name.lower()}"
    if prefix not in ENUM_PREFIXES:
        raise KeyError(f"{key!r}: unknown prefix (use {', '.join(ENUM_PREFIXES)} or LANEREDUCE)")
    return f"{prefix}:{_member(prefix, name).name}"


def accepted_types(key: str) -> frozenset:
    """The types ``key`` (canonical) accepts; ``{None}`` for an untyped instruction."""
    prefix, sep, name = key.partition(":")
    if not sep:
        return _ROWS[key].types or frozenset({None})
    if prefix == "LANEREDUCE":
        return SCALARS
    return COOPERATIVE_OPERATION_TYPES[_member(prefix, name)]


def required_pairs() -> set[tuple[str, Type | None]]:
    """Every (instruction, accepted type) of the opcode table and (operation key, type) of the cooperative ones."""
    pairs = {(row.name, ty) for row in OPCODE_TABLE for ty in (row.types or {None})}
    for prefix, enum in ENUM_PREFIXES.items():
        pairs |= {(f"{prefix}:{op.name}", ty) for op in enum for ty in COOPERATIVE_OPERATION_TYPES[op]}
    return pairs


def reference_test_modules() -> list[str]:
    """Names of the test modules of tests/reference (``tests.reference.test_*``)."""
    here = Path(__file__).parent
    return sorted(f"tests.reference.{m.name}" for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("test_"))


def declared_pairs() -> dict[str, list]:
    """Module name -> its COVERS list; raises AttributeError naming a module that declares none."""
    out = {}
    for name in reference_test_modules():
        module = importlib.import_module(name)
        if not hasattr(module, "COVERS"):
            raise AttributeError(f"{name} defines no module-level COVERS list")
        out[name] = list(module.COVERS)
    return out
