"""The reference coverage contract (tests/reference/coverage.py): every instruction and type of the opcode
table, and every cooperative operation and type, has a reference rule and a test that covers it."""

from __future__ import annotations

import pytest

from atlas_web.isa import OPCODE_TABLE, Type
from atlas_web.reference import numeric
from atlas_web.reference.executor import EXECUTOR_RULES, RULES

from . import coverage

COVERS: list = []  # this module checks the others; it covers nothing itself


@pytest.fixture(scope="module")
def declared():
    return coverage.declared_pairs()


def test_every_reference_test_module_declares_covers(declared):
    assert set(declared) == set(coverage.reference_test_modules())
    assert "tests.reference.test_executor_memory" in declared


def test_every_declared_pair_names_an_accepted_type(declared):
    problems = []
    for module, pairs in declared.items():
        for key, ty in pairs:
            try:
                canonical = coverage.normalize(key)
            except KeyError as error:
                problems.append(f"{module}: {error}")
                continue
            if ty is not None and not isinstance(ty, Type):
                problems.append(f"{module}: ({key!r}, {ty!r}): the type must be a Type or None")
            elif ty not in coverage.accepted_types(canonical):
                problems.append(f"{module}: {key} does not accept {getattr(ty, 'name', ty)}")
    assert not problems, "\n".join(problems)


def test_every_instruction_type_and_cooperative_operation_type_is_covered(declared):
    covered = {(coverage.normalize(key), ty) for pairs in declared.values() for key, ty in pairs}
    missing = sorted(coverage.required_pairs() - covered, key=lambda p: (p[0], getattr(p[1], "code", -1)))
    assert not missing, "not covered by any COVERS of tests/reference: " + ", ".join(
        f"{key}/{getattr(ty, 'name', ty)}" for key, ty in missing)


def test_every_instruction_has_exactly_one_reference_rule():
    names = [row.name for row in OPCODE_TABLE]
    assert not [n for n in names if n not in numeric.PURE_LANE_RULES and n not in EXECUTOR_RULES]
    assert not set(numeric.PURE_LANE_RULES) & set(EXECUTOR_RULES), "a rule in both tables"
    assert set(RULES) == set(names), "the executor's dispatch table is keyed by every instruction name, no other"


def test_required_pairs_follow_the_tables():
    required = coverage.required_pairs()
    assert ("ADD", Type.U4096) in required and ("BRA", None) in required
    assert ("MAP:Gelu", Type.BF16) in required and ("MAP:Gelu", Type.I32) not in required
    assert ("BINMAP:Add", Type.I8) in required and ("REDUCE:Product", Type.U64) in required
    assert coverage.normalize("MAP:gelu") == "MAP:Gelu" and coverage.normalize("LANEREDUCE:ADD") == "LANEREDUCE:add"
    with pytest.raises(KeyError):
        coverage.normalize("NOPE")
    with pytest.raises(KeyError):
        coverage.normalize("MAP:Cbrt")
