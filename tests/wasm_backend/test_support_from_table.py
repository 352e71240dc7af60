"""wasm's support queries read the opcode table: a cooperative row without an ``operation`` (a kernel such as
GEMM) is supported for the types of its row once a cooperative rule is registered for it."""

from __future__ import annotations

from atlas_web.isa import Type
from wasm_backend import WasmBackend
from wasm_backend.lowering import COOPERATIVE_RULES

from tests.table_rows import gemm_row, rows_added


def test_a_cooperative_row_without_an_operation_is_supported_for_its_types_once_it_has_a_rule(monkeypatch):
    backend = WasmBackend(threads=1)
    try:
        with rows_added(gemm_row()):
            assert not backend.supports("MadeGEMM", Type.F32)  # no rule yet
            monkeypatch.setitem(COOPERATIVE_RULES, "MadeGEMM", lambda ctx: None)
            assert backend.supports("MadeGEMM", Type.F32) and backend.supports("MadeGEMM", Type.F64)
            assert not backend.supports("MadeGEMM", Type.I32) and backend.supports("MadeGEMM")  # any of its types
    finally:
        backend.close()
