"""ModuleContext.data_at: only the constant Atlas tables region may be written by a data segment
(worker threads instantiate modules mid-launch, which rewrites every active segment)."""

import pytest

from wasm_backend import layout
from wasm_backend.errors import WasmEncodingError
from wasm_backend.lowering.module_context import ModuleContext


def _context() -> ModuleContext:
    return ModuleContext("data_at_test")


def test_the_atlas_tables_may_be_written():
    m = _context()
    m.data_at(layout.ATLAS_TABLES, layout.atlas_table_bytes())
    assert layout.atlas_table_bytes() in m.to_bytes()


@pytest.mark.parametrize("offset, size", [(layout.ARENA_START, 4), (0, 4), (layout.RES_SUMS, 8),
                                          (layout.ATLAS_TABLES, layout.ATLAS_TABLE_BYTES + 1),
                                          (layout.ATLAS_TABLES - 1, 4)])
def test_anything_else_is_refused_naming_the_region(offset, size):
    with pytest.raises(WasmEncodingError, match="outside the constant Atlas tables region"):
        _context().data_at(offset, bytes(size))
