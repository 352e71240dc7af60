"""The matrix rows of the opcode table (GEMM, BatchedGEMM): their extents cover exactly the elements each array
holds with transposes, leading dimensions and batch strides (counted here by enumerating the elements), the
verifier refuses bad shapes naming the operand, and the rows round-trip through text, bytecode and JSON with
their flags and float immediates (stored in the instruction's own type)."""

from __future__ import annotations

import itertools

import pytest

from atlas_web.errors import ProgramError
from atlas_web.isa import Address, Type, array_operands
from atlas_web.isa.extents import compile_extent
from atlas_web.isa.floats import round_float
from atlas_web.isa.instructions import BatchedGEMM, GEMM
from atlas_web.launch import LaunchConfig
from atlas_web.memory import HandleTable
from atlas_web.program import Program
from atlas_web.verify import verify, verify_launch

from .table_rows import gemm_row

ADDRESSES = dict(c=Address.BufferOffset(2, 0), a=Address.BufferOffset(3, 0), b=Address.BufferOffset(4, 0))


def _covered(rows: int, cols: int, ld: int, starts=(0,)) -> int:
    """One past the last element a stored matrix touches, counted element by element (0: none)."""
    ld = ld or cols
    touched = [start + r * ld + c for start in starts for r in range(rows) for c in range(cols)]
    return max(touched) + 1 if touched else 0


SHAPES = [(3, 4, 5), (1, 1, 1), (4, 1, 3), (0, 3, 2), (3, 0, 2), (3, 2, 0)]


@pytest.mark.parametrize("m, n, k", SHAPES)
@pytest.mark.parametrize("trans_a, trans_b", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("pad", [0, 2])
def test_gemm_extents_cover_exactly_the_stored_elements(m, n, k, trans_a, trans_b, pad):
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    lda, ldb, ldc = (a_shape[1] + pad, b_shape[1] + pad + 1, n + pad) if pad else (0, 0, 0)
    instr = GEMM(**ADDRESSES, m=m, n=n, k=k, trans_a=trans_a, trans_b=trans_b, lda=lda, ldb=ldb, ldc=ldc)
    got = {a.name: a.elements for a in array_operands(instr)}
    assert got == {"c": _covered(m, n, ldc), "a": _covered(*a_shape, lda), "b": _covered(*b_shape, ldb)}


@pytest.mark.parametrize("batch", [0, 1, 3])
@pytest.mark.parametrize("strides", [(0, 0, 0), (40, 31, 25)])
def test_batched_gemm_extents_cover_every_item(batch, strides):
    m, n, k, lda, ldb, ldc = 3, 4, 5, 0, 6, 5
    instr = BatchedGEMM(**ADDRESSES, batch=batch, m=m, n=n, k=k, trans_a=True, lda=lda, ldb=ldb, ldc=ldc,
                        stride_a=strides[0], stride_b=strides[1], stride_c=strides[2])
    packed = {"a": k * m, "b": k * ldb, "c": m * ldc}   # stride 0: rows * ld apart
    step = {name: stride or packed[name] for name, stride in zip("abc", strides)}
    want = {"a": _covered(k, m, lda, [i * step["a"] for i in range(batch)]),
            "b": _covered(k, n, ldb, [i * step["b"] for i in range(batch)]),
            "c": _covered(m, n, ldc, [i * step["c"] for i in range(batch)])}
    assert {a.name: a.elements for a in array_operands(instr)} == want


@pytest.mark.parametrize("fields, operand", [
    (dict(m=3, n=4, k=5, lda=4), "lda"),                     # a is m x k: a row of 5
    (dict(m=3, n=4, k=5, lda=2, trans_a=True), "lda"),       # stored k x m: a row of 3
    (dict(m=3, n=4, k=5, ldb=3), "ldb"),
    (dict(m=3, n=4, k=5, ldb=4, trans_b=True), "ldb"),       # stored n x k: a row of 5
    (dict(m=3, n=4, k=5, ldc=3), "ldc"),
])
def test_a_leading_dimension_shorter_than_its_row_is_refused_naming_it(fields, operand):
    with pytest.raises(ProgramError, match=rf"instruction 0 \(gemm\.f32 .*\): operand '{operand}': {operand} is "
                                           rf"shorter than a row of {operand[-1]} \(needs .*{operand}="):
        verify(Program([GEMM(**ADDRESSES, **fields)]))


def test_leading_dimensions_equal_to_the_row_or_zero_verify():
    verify(Program([GEMM(**ADDRESSES, m=3, n=4, k=5, lda=3, ldb=5, ldc=4, trans_a=True, trans_b=True)]))
    verify(Program([GEMM(**ADDRESSES, m=3, n=4, k=5)]))


def test_batched_items_of_c_may_not_overlap():
    fields = dict(**ADDRESSES, m=2, n=3, k=1, ldc=4)
    verify(Program([BatchedGEMM(**fields, batch=2, stride_c=7)]))   # (m - 1) * ldc + n = 7: adjacent
    verify(Program([BatchedGEMM(**fields, batch=1, stride_c=1)]))   # one item: nothing to overlap
    with pytest.raises(ProgramError, match="operand 'stride_c': the items of c would overlap"):
        verify(Program([BatchedGEMM(**fields, batch=2, stride_c=6)]))


def test_the_launch_checks_a_padded_matrix_to_its_last_element():
    memory = HandleTable()
    for size in (12 * 4, 17 * 4, 4 * 4):    # c 3x4; a 3x5 with lda 6 covers 17; b 5x... too short
        memory.add("buffer", size)
    program = Program([GEMM(**ADDRESSES, m=3, n=4, k=5, lda=6)])
    with pytest.raises(ProgramError, match=r"operand 'b': bytes 0\.\.80 lie outside buffer 4 of 16 bytes"):
        verify_launch(verify(program), LaunchConfig(), memory)


def _round_trips(instr) -> None:
    program = Program([instr])
    encoded = program.to_bytes()
    for again in (Program.from_text(program.to_text()), Program.from_bytes(encoded), Program.from_json(program.to_json())):
        assert again == program and again.to_bytes() == encoded


@pytest.mark.parametrize("ty", [Type.F32, Type.F64])
def test_alpha_and_beta_are_stored_in_the_instructions_type_in_every_form(ty):
    third = 1 / 3
    instr = BatchedGEMM(**ADDRESSES, batch=2, m=3, n=4, k=5, alpha=third, beta=-2.5, trans_a=True, ldc=6,
                        stride_b=21, ty=ty)
    assert instr.alpha == round_float(third, ty) and (instr.alpha == third) == (ty is Type.F64)
    _round_trips(instr)


def test_the_text_spells_the_flags_true_and_false_and_defaults_are_listed():
    instr = GEMM(**ADDRESSES, m=3, n=4, k=5, trans_b=True)
    text = "gemm.f32 [buf2 + 0], [buf3 + 0], [buf4 + 0], 3, 4, 5, 1.0, 0.0, false, true, 0, 0, 0"
    assert str(instr) == text
    assert Program.from_text(text + "\n").instructions == (instr,)
    assert Program.from_json(Program([instr]).to_json()).instructions[0].trans_b is True
    with pytest.raises(ProgramError, match="expected true or false, got 'yes'"):
        Program.from_text(text.replace("true", "yes"))


def test_a_flag_must_be_a_bool():
    with pytest.raises(ProgramError, match="GEMM: operand 'trans_a' must be a bool, got 1"):
        GEMM(**ADDRESSES, m=1, n=1, k=1, trans_a=1)


@pytest.mark.parametrize("expression, fields, value", [
    ("max(m, k) + min(m, k)", dict(m=3, k=5), 8),
    ("m if t else k", dict(m=3, k=5, t=True), 3),
    ("m if t else k", dict(m=3, k=5, t=False), 5),
    ("m == 0 or k >= m", dict(m=3, k=2), 0),
    ("not m < k <= 9", dict(m=3, k=5), 0),
    ("matrix(m, k, 0)", dict(m=3, k=5), 15),
    ("matrices(2, 0, m, k, 7)", dict(m=3, k=5), 21 + 19),
])
def test_the_extent_language_has_conditions_and_matrix_functions(expression, fields, value):
    class Fields:
        pass
    instr = Fields()
    instr.__dict__.update(fields)
    evaluate, names, _ = compile_extent(expression)
    assert evaluate(instr) == value and names == frozenset(n for n in fields if n in expression)


@pytest.mark.parametrize("expression", ["matrix(m, k)", "pow(m, 2)", "m / 2", "m if k else", "[m]"])
def test_the_extent_language_refuses_anything_else(expression):
    with pytest.raises(ProgramError, match="extent"):
        compile_extent(expression)


def test_a_requirement_naming_no_shape_of_the_row_is_refused_when_the_row_is_made():
    from atlas_web.isa.extents import Requirement
    with pytest.raises(ProgramError, match="requirement on 'm': condition 'q > 0' names q"):
        gemm_row(requires=(Requirement("m", "q > 0", "why"),))


def test_a_csr_extent_is_read_at_launch_and_left_out_of_the_static_bounds():
    from atlas_web.isa.instructions import SparseGEMM
    instr = SparseGEMM(c=Address.BufferOffset(2), a_values=Address.BufferOffset(3), a_indices=Address.BufferOffset(4),
                       a_ptr=Address.BufferOffset(5), b=Address.BufferOffset(6), m=3, n=4, k=5, ldb=6)
    assert {a.name: a.elements for a in array_operands(instr)} == {
        "c": 12, "a_values": None, "a_indices": None, "a_ptr": 4, "b": 4 * 6 + 4}
    pointers = {"a_ptr": [0, 2, 2, 7]}
    loaded = array_operands(instr, lambda name, index: pointers[name][index])
    assert [(a.name, a.elements, a.nbytes) for a in loaded][1:3] == [("a_values", 7, 28), ("a_indices", 7, 28)]
    assert [acc.path for acc in verify(Program([instr])).static_accesses] == ["c", "a_ptr", "b"]


def test_an_extent_may_read_only_an_integer_array_with_an_extent_of_its_own():
    from atlas_web.isa.opcodes import Access, Operand, OperandKind, TypeRule

    def array(name, extent, element):
        return Operand(name, OperandKind.ADDR, "global", memory=Access.READ, extent=extent, element=element)

    shape = Operand("m", OperandKind.UINT, 32)
    gemm_row(operands=(array("counts", "m", Type.U32), array("values", "counts[0]", TypeRule.TY), shape))
    for counts in (array("counts", "m", TypeRule.TY), array("counts", "m", Type.F32),
                   array("counts", "values[0]", Type.U32)):
        with pytest.raises(ProgramError, match=r"reads an element of (counts|values), not an integer array operand"):
            gemm_row(operands=(counts, array("values", "counts[0]", TypeRule.TY), shape))
