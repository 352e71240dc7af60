"""docs/backends.md is generated from the backends' rule tables and measured ulp tables: it must be current."""

from __future__ import annotations

from pathlib import Path

from atlas_web.isa import OPCODE_TABLE, Type
from wasm_backend.docs import BackendDocumentation, backend_documentation, render_backends_md

DOC = Path(__file__).resolve().parents[2] / "docs" / "backends.md"


def test_backends_md_is_current():
    assert DOC.read_text() == render_backends_md(), \
        "docs/backends.md is stale: run `python -m wasm_backend.docs > docs/backends.md`"


def test_matrix_follows_the_supports_answers():
    """A backend that supports nothing gets no letter anywhere; the wasm column agrees with WasmBackend."""
    nothing = BackendDocumentation("none", "n", lambda info, ty: False, lambda op, ty: False)
    text = render_backends_md([nothing])
    rows = [line for line in text.splitlines() if line.startswith("| ") and "instruction" not in line]
    assert len(rows) >= len(OPCODE_TABLE)
    assert all("n" not in cell for row in rows for cell in row.split("|")[2:])
    from wasm_backend import WasmBackend
    backend = WasmBackend()
    doc = backend_documentation()
    for info in OPCODE_TABLE:
        for ty in sorted(info.types, key=lambda t: t.code) or [None]:
            assert doc.supports(info, ty) == backend.supports_op(info, ty), (info.name, ty)
    for (op, ty), ulps in doc.ulps.items():
        if "." not in op:  # instruction rows (cooperative operations are keyed "Instruction.Operation")
            assert backend.ulp_tolerance(op, Type[ty]) == ulps
