"""What the conformance suite skips as unsupported on each backend, and what docs/backends.md says about it.

A conformance test runs a case on a backend only where the backend supports everything the case needs (its
``needs``, its cooperative ``operation``, its matrix or kernel row on its type); elsewhere it checks only that the
backend refuses the case with UnsupportedOperation. ``skipped(backend)`` lists those cases of the fixed case lists
(``CASE_LISTS``; the hypothesis-drawn random programs are not a fixed list) with the pairs the backend lacks, and
``documented_missing`` reads docs/backends.md's support matrix and its "Not supported, by design" lists for the
same pairs, so tests/conformance/test_unsupported_summary.py can hold them equal. ``SKIPPED`` keeps the counts
the test computed (backend -> (skipped, cases)) for the session's summary line (tests/conformance/conftest.py).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from atlas_web.isa.operations import OPERATION_INSTRUCTIONS
from atlas_web.isa.types import Type

from . import (
    atlas_cases, attention_cases, contract_cases, control_cases, cooperative_cases, kernel_cases, lane_cases,
    matrix_cases, memory_cases, norm_cases, trap_cases,
)

__all__ = ["CASE_LISTS", "SKIPPED", "all_cases", "needs_of", "skipped", "documented_missing", "DOC"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "backends.md"

#: name -> the function that makes one fixed case list of the conformance suite
CASE_LISTS: dict[str, Callable[[], list]] = {
    "lane": lane_cases.lane_cases, "atlas": atlas_cases.atlas_cases, "control": control_cases.control_cases,
    "preset": control_cases.preset_cases, "cooperative": cooperative_cases.cooperative_cases,
    "memory": memory_cases.memory_cases, "pool": memory_cases.pool_cases, "trap": trap_cases.trap_cases,
    "budget": trap_cases.budget_cases, "kernel": kernel_cases.kernel_cases, "kernel_trap": kernel_cases.trap_cases,
    "matrix": matrix_cases.matrix_cases, "matrix_trap": matrix_cases.trap_cases,
    "contract": contract_cases.contract_cases, "contract_trap": contract_cases.trap_cases,
    "norm": norm_cases.norm_cases, "norm_trap": norm_cases.trap_cases,
    "attention": attention_cases.attention_cases, "attention_trap": attention_cases.trap_cases,
}

#: backend name -> (cases skipped as unsupported, cases), filled by the test that computes them
SKIPPED: dict[str, tuple[int, int]] = {}


def _key(op: object) -> str:
    """The matrix row of an instruction name or a cooperative operation ("ParallelMap.Exp")."""
    if isinstance(op, str):
        return op
    return f"{OPERATION_INSTRUCTIONS[type(op)]}.{op.name}"


def needs_of(case) -> tuple[tuple[str, Type | None], ...]:
    """(matrix row, type) pairs ``case`` needs: its ``needs``, its cooperative operation, or its row."""
    info = getattr(case, "info", None)
    if info is not None:  # kernel and matrix cases: one row on one type
        return ((info.name, case.ty),)
    operation = getattr(case, "operation", None)
    extra = ((_key(operation), case.ty),) if operation is not None else ()
    return tuple(case.needs) + extra


def _supported(backend, key: str, ty: Type | None) -> bool:
    if "." not in key:
        return backend.supports(key, ty)
    instruction, name = key.split(".")
    enum = next(enum for enum, owner in OPERATION_INSTRUCTIONS.items() if owner == instruction)
    return backend.supports_operation(enum[name], ty)


@functools.cache
def all_cases() -> tuple[tuple[str, tuple], ...]:
    """("list:case", its needs) for every case of CASE_LISTS (made once: the lists take seconds)."""
    return tuple((f"{list_name}:{case}", needs_of(case)) for list_name, make in CASE_LISTS.items() for case in make())


def skipped(backend) -> dict[str, tuple]:
    """case name -> the (row, type) pairs ``backend`` lacks, for every case of CASE_LISTS it cannot run."""
    out = {}
    for name, needs in all_cases():
        missing = tuple(pair for pair in needs if not _supported(backend, *pair))
        if missing:
            out[name] = missing
    return out


@functools.cache
def _matrix(text: str) -> dict[str, dict[str, str]]:
    """row -> column (type suffix or "untyped") -> cell, from the support matrix of docs/backends.md."""
    section = text.split("## Support matrix", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in rows[0]]
    return {cells[0].strip(): dict(zip(header[1:], (cell.strip() for cell in cells[1:]))) for cells in rows[1:]}


@functools.cache
def _by_design(text: str, backend_name: str) -> str:
    """The "Not supported, by design" list of ``backend_name``'s section ("" where it has none)."""
    section = text.split(f"\n### {backend_name}\n", 1)[1].split("\n### ", 1)[0]
    return section.split("Operations not listed", 1)[0].split("Every operation was measured", 1)[0]


def documented_missing(backend_name: str, letter: str, key: str, ty: Type | None, text: str) -> tuple[bool, bool]:
    """(docs/backends.md's matrix lacks ``letter`` for ``key`` on ``ty`` (None: every cell of the row),
    the backend's "Not supported, by design" list names the row or the type)."""
    row = _matrix(text)[key]
    cells = [row["untyped"]] if ty is None and row["untyped"] else (
        [row[ty.suffix]] if ty is not None else [cell for cell in row.values() if cell])
    lacks = all(letter not in cell for cell in cells)
    listed = _by_design(text, backend_name)
    named = f"\n- {key}:" in listed or (ty is not None and f"\n- every instruction on {ty.suffix}:" in listed)
    return lacks, named
