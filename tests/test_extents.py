"""Operand extents: a row of the opcode table says how many elements each address covers, and the verifier's
static accesses and launch-time bounds follow from it with no other change (a new row made here, with the
table's own constructors, as a developer adding a kernel instruction would)."""

from __future__ import annotations

import pytest

from atlas_web.errors import ProgramError
from atlas_web.isa import (
    LDG, Access, Address, MapOperation, Operand, OperandKind, ParallelMap, ReduceAdd, Register, Type, TypeRule,
    array_operands, extent_elements,
)
from atlas_web.launch import LaunchConfig
from atlas_web.memory import HandleTable
from atlas_web.program import Program
from atlas_web.verify import verify, verify_launch
from atlas_web.verify_memory import StaticAccess

from .table_rows import address as _addr
from .table_rows import gemm_row, rows_added
from .table_rows import shape as _shape

CONFIG = LaunchConfig(grid=(1, 1, 1), block=(4, 1, 1))


@pytest.fixture
def gemm():
    """The GEMM class, seen by the verifier as a row of the table is."""
    with rows_added(gemm_row()) as made:
        yield made["MadeGEMM"]


@pytest.fixture
def memory() -> HandleTable:
    """Buffers 2 (24 bytes), 3 (24 bytes), 4 (40 bytes)."""
    table = HandleTable()
    for size in (24, 24, 40):
        table.add("buffer", size)
    return table


def _gemm(cls, m, n, k, ty=Type.F32, c=2, a=3, b=4, offset=0):
    return cls(c=Address.BufferOffset(c, 0), a=Address.BufferOffset(a, offset), b=Address.BufferOffset(b, 0),
               m=m, n=n, k=k, alpha=1.0, beta=0.0, ty=ty)


def test_array_operands_evaluate_each_extent_over_the_instructions_own_fields(gemm):
    instr = _gemm(gemm, 2, 3, 5)
    arrays = array_operands(instr)
    assert [(a.name, a.elements, a.ty, a.access, a.nbytes) for a in arrays] == [
        ("c", 6, Type.F32, Access.READ_WRITE, 24), ("a", 10, Type.F32, Access.READ, 40), ("b", 15, Type.F32, Access.READ, 60)]
    assert extent_elements(instr, "a") == 10


def test_the_existing_rows_cover_one_value_or_count_values():
    ldg = LDG(dst=Register(1), src=Address.BufferOffset(2, 0), ty=Type.F64)
    assert [(a.name, a.elements, a.nbytes, a.access) for a in array_operands(ldg)] == [("src", 1, 8, Access.READ)]
    pmap = ParallelMap(dst_array=Address.BufferOffset(2, 0), src_array=Address.BufferOffset(3, 0), count=7,
                       operation=MapOperation.Abs, ty=Type.I16)
    assert [(a.name, a.elements, a.nbytes, a.access) for a in array_operands(pmap)] == [
        ("dst_array", 7, 14, Access.WRITE), ("src_array", 7, 14, Access.READ)]
    reduce = ReduceAdd(dst=Register(1), src_array=Address.BufferOffset(2, 0), count=3, ty=Type.U8)
    assert extent_elements(reduce, "src_array") == 3
    with pytest.raises(ProgramError, match="operand 'dst' is not an address operand"):
        extent_elements(reduce, "dst")


def test_a_new_row_gets_its_static_accesses_from_its_extents(gemm):
    info = verify(Program([_gemm(gemm, 2, 3, 1, ty=Type.F64)]))
    assert info.static_accesses == (
        StaticAccess(0, "c", "buffer", 2, 0, 48, Type.F64), StaticAccess(0, "a", "buffer", 3, 0, 16, Type.F64),
        StaticAccess(0, "b", "buffer", 4, 0, 24, Type.F64))


def test_a_new_row_is_bounds_checked_at_launch_from_its_extents(gemm, memory):
    verify_launch(verify(Program([_gemm(gemm, 2, 3, 2)])), CONFIG, memory)  # 24, 16 and 24 bytes fit
    with pytest.raises(ProgramError, match=r"instruction 0 \(madegemm\.f32 .*\): operand 'a': bytes 0\.\.32 lie outside "
                                           r"buffer 3 of 24 bytes"):
        verify_launch(verify(Program([_gemm(gemm, 2, 3, 4, c=2, a=3, b=4)])), CONFIG, memory)  # a: 2*4 f32
    with pytest.raises(ProgramError, match=r"operand 'b': bytes 0\.\.48 lie outside buffer 4 of 40 bytes"):
        verify_launch(verify(Program([_gemm(gemm, 1, 4, 3, c=3, a=2, b=4)])), CONFIG, memory)  # b: 3*4 f32
    with pytest.raises(ProgramError, match=r"operand 'a': offset 2 is misaligned for f32"):
        verify_launch(verify(Program([_gemm(gemm, 1, 1, 1, offset=2)])), CONFIG, memory)


@pytest.mark.parametrize("operands, match", [
    ((_addr("c", Access.WRITE, "m*q"), _shape("m")), r"GEMM: operand 'c': extent 'm\*q' names q, not a shape"),
    ((_addr("c", Access.WRITE, "m**2"), _shape("m")), r"extent 'm\*\*2': only integers, field names"),
    ((_addr("c", Access.WRITE, "m*"), _shape("m")), r"extent 'm\*' is not an expression"),
    ((Operand("c", OperandKind.ADDR, "global", extent="1", element=TypeRule.TY),),
     "operand 'c': an address operand needs its memory access"),
    ((Operand("c", OperandKind.ADDR, "global", memory=Access.READ, element=TypeRule.TY),),
     "operand 'c': an address operand needs its extent"),
    ((Operand("c", OperandKind.ADDR, "global", memory=Access.READ, extent="1", element=TypeRule.SRC_TY),),
     "operand 'c': element type .* is neither a Type nor a type field of the row"),
    ((Operand("m", OperandKind.UINT, 32, extent="1"),), "only an address operand has a memory access, extent"),
])
def test_a_row_with_a_bad_extent_is_refused_when_it_is_made(operands, match):
    with pytest.raises(ProgramError, match=match):
        gemm_row(operands=operands)


def test_the_remainder_operator_and_its_zero_divisor():
    from types import SimpleNamespace

    from atlas_web.isa.extents import compile_extent
    condition = compile_extent("groups > 0 and channels % groups == 0")
    assert condition.names == {"groups", "channels"}
    assert [condition.evaluate(SimpleNamespace(channels=c, groups=g)) for c, g in ((6, 3), (6, 4), (6, 0), (0, 2))] \
        == [1, 0, 0, 1]
    assert compile_extent("channels % groups").evaluate(SimpleNamespace(channels=5, groups=0)) == 0


def test_floor_division_and_its_zero_divisor():
    from types import SimpleNamespace

    from atlas_web.isa.extents import compile_extent
    half = compile_extent("head_dim // 2")
    assert [half.evaluate(SimpleNamespace(head_dim=d)) for d in (0, 1, 8, 9)] == [0, 0, 4, 4]
    assert compile_extent("a // b").evaluate(SimpleNamespace(a=5, b=0)) == 0
