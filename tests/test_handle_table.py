"""atlas_web.memory.HandleTable: what counts as a handle."""

from __future__ import annotations

import re

import pytest

from atlas_web.errors import InvalidBuffer
from atlas_web.isa.addresses import BOUNDARY_HANDLE, BufferHandle
from atlas_web.memory import HandleTable


@pytest.mark.parametrize("handle", [True, False])
def test_a_bool_is_refused_though_true_equals_the_boundary_handle(handle):
    table = HandleTable()
    with pytest.raises(InvalidBuffer, match=rf"handle {handle!r} is not a handle: handles are ints, got bool"):
        table.get(handle)
    with pytest.raises(InvalidBuffer, match=rf"handle {handle!r} is not a handle"):
        table.get(handle, "buffer")
    assert table.lookup(handle) is None


@pytest.mark.parametrize("handle", [2.0, "2", None, (2,)])
def test_a_non_int_is_refused_naming_it(handle):
    table = HandleTable()
    table.add("buffer", 8)
    message = f"handle {handle!r} is not a handle: handles are ints, got {type(handle).__name__}"
    with pytest.raises(InvalidBuffer, match=re.escape(message)):
        table.get(handle)
    assert table.lookup(handle) is None


def test_int_handles_and_handle_subclasses_still_resolve():
    table = HandleTable()
    alloc = table.add("buffer", 8)
    assert table.get(BOUNDARY_HANDLE).kind == "boundary"
    assert table.get(alloc.handle, "buffer") is alloc
    assert table.get(BufferHandle(alloc.handle), "buffer") is alloc
    assert table.lookup(BufferHandle(alloc.handle)) is alloc
    with pytest.raises(InvalidBuffer, match="handle 99 names no live buffer or pool"):
        table.get(99)
    with pytest.raises(InvalidBuffer, match="handle True is not a handle"):
        table.remove(True, "buffer")


def test_handles_format_as_their_number_and_repr_names_their_kind():
    """Issue 17: f"{handle}" gave "BufferHandle(2)", which text assembly and messages then carried."""
    from atlas_web import Program
    from atlas_web.isa.addresses import PoolHandle
    buffer, pool = BufferHandle(2), PoolHandle(7)
    assert (f"{buffer}", str(pool), f"{pool:>3}", "%s" % buffer) == ("2", "7", "  7", "2")
    assert (repr(buffer), repr(pool), f"{buffer!r}") == ("BufferHandle(2)", "PoolHandle(7)", "BufferHandle(2)")
    program = Program.from_text(f"ldg.u32 r1, [buf{buffer} + 4]\nmov_imm.u32 r2, {pool}")
    assert program.instructions[0].src.handle == 2 and program.instructions[1].value == 7
