"""wasm's support queries ask the registered cooperative rule: a cooperative row without an ``operation`` (a kernel
such as GEMM) is supported for the types its rule gives (by default every type of its row) once the rule is
registered with ``@cooperative_rule``, and check_supported asks the same rule."""

from __future__ import annotations

import pytest

from atlas_web.errors import UnsupportedOperation
from atlas_web.isa import Address, Type
from wasm_backend import WasmBackend
from wasm_backend.lowering import COOPERATIVE_RULES
from wasm_backend.lowering.rules import check_cooperative, cooperative_rule

from tests.table_rows import gemm_row, rows_added


def test_a_cooperative_row_without_an_operation_is_supported_for_its_types_once_it_has_a_rule(monkeypatch):
    backend = WasmBackend(threads=1)
    try:
        with rows_added(gemm_row()):
            assert not backend.supports("MadeGEMM", Type.F32)  # no rule yet
            monkeypatch.setattr("wasm_backend.lowering.rules.COOPERATIVE_RULES", dict(COOPERATIVE_RULES))
            cooperative_rule("MadeGEMM")(lambda cc: None)
            assert backend.supports("MadeGEMM", Type.F32) and backend.supports("MadeGEMM", Type.F64)
            assert not backend.supports("MadeGEMM", Type.I32) and backend.supports("MadeGEMM")  # any of its types
    finally:
        backend.close()


def test_a_rule_registered_for_some_types_is_asked_by_supports_and_check_supported(monkeypatch):
    backend = WasmBackend(threads=1)
    try:
        with rows_added(gemm_row()) as made:
            monkeypatch.setattr("wasm_backend.lowering.rules.COOPERATIVE_RULES", dict(COOPERATIVE_RULES))
            cooperative_rule("MadeGEMM", (Type.F32,))(lambda cc: None)
            assert backend.supports("MadeGEMM", Type.F32) and not backend.supports("MadeGEMM", Type.F64)
            assert not backend.documentation().supports(made["MadeGEMM"].INFO, Type.F64)

            def gemm(ty):
                return made["MadeGEMM"](c=Address.BufferOffset(2, 0), a=Address.BufferOffset(3, 0),
                                        b=Address.BufferOffset(4, 0), m=2, n=2, k=2, alpha=1.0, beta=0.0, ty=ty)
            with pytest.raises(UnsupportedOperation, match="MadeGEMM"):
                check_cooperative(gemm(Type.F64))
            check_cooperative(gemm(Type.F32))
    finally:
        backend.close()


def test_cooperative_rule_refuses_operations_for_a_row_without_them_and_wants_them_where_it_has_them():
    with pytest.raises(ValueError, match="refused"):
        cooperative_rule("PoolFree", operations=lambda op, ty: True)
    with pytest.raises(ValueError, match="required"):
        cooperative_rule("ParallelReduce")
    with pytest.raises(ValueError, match="twice"):
        cooperative_rule("PoolFree")(lambda cc: None)
