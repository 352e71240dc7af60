"""The conformance suite's cases skipped as unsupported, per backend, are exactly those docs/backends.md predicts:
a case is refused (and only checked to raise UnsupportedOperation) on a backend iff some (row, type) it needs has no
letter of that backend in the support matrix, and each such pair is in the backend's "Not supported, by design"
list (by row or by type). The counts go to the session's summary line (conftest.py)."""

from __future__ import annotations

import pytest

from atlas_web.isa import Type

from .backends import compiled_backends
from .unsupported import DOC, SKIPPED, all_cases, documented_missing, skipped

BACKENDS = compiled_backends()


@pytest.mark.parametrize("backend_name", sorted(BACKENDS))
def test_skipped_as_unsupported_is_what_docs_backends_md_lists(backend_name):
    backend = BACKENDS[backend_name]
    doc = type(backend).documentation()
    text = DOC.read_text()
    refused = skipped(backend)
    predicted, unlisted = set(), set()
    for case, needs in all_cases():
        for key, ty in needs:
            lacks, named = documented_missing(backend_name, doc.letter, key, ty, text)
            if lacks:
                predicted.add(case)
                if not named:
                    unlisted.add((key, getattr(ty, "name", ty)))
    assert set(refused) == predicted, (
        f"{backend_name}: refused but docs/backends.md has its letter: {sorted(set(refused) - predicted)[:10]}; "
        f"docs/backends.md lacks its letter but it ran: {sorted(predicted - set(refused))[:10]}")
    assert not unlisted, f"{backend_name}: pairs missing from the matrix but not in its 'Not supported' list: {unlisted}"
    SKIPPED[backend_name] = (len(refused), len(all_cases()))


def test_a_pair_the_docs_matrix_gives_a_backend_is_not_predicted_missing_and_one_it_lacks_is():
    """The docs reader itself: GEMM on f32 has wasm's letter; FMA on f64 lacks webgpu's and is listed by type."""
    text = DOC.read_text()
    assert documented_missing("wasm", "w", "GEMM", Type.F32, text) == (False, False)
    lacks, named = documented_missing("webgpu", "g", "FMA", Type.F64, text)
    assert lacks and named
    assert documented_missing("wasm", "w", "ParallelMap.Exp", Type.F32, text)[0] is False
    row = next(line for line in text.splitlines() if line.startswith("| GEMM |"))
    cells = row.split("|")
    cells[4] = cells[4].replace("w", "")  # the f32 column (after the name, f16 and bf16) without wasm's letter
    without = text.replace(row, "|".join(cells), 1)
    assert without != text and documented_missing("wasm", "w", "GEMM", Type.F32, without) == (True, False)
