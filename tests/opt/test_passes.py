"""Each optimization pass on small programs: what it does, and what it must not do."""

from __future__ import annotations

import math

import pytest

from atlas_web import Program
from atlas_web.isa import Type
from atlas_web.opt import EXACT, PASSES, ProgramOptimizer
from atlas_web.opt.fold import conversion, evaluate
from atlas_web.opt.passes import round_trip_exact

STORE = "    mov_imm.u64 r200, 4294967296\n"


def optimized(body: str, *passes: str, level: int = 1, target=EXACT):
    """The program ``STORE + body + exit`` optimized with ``passes`` (default: all)."""
    program = Program.from_text(STORE + body + "    exit\n")
    return ProgramOptimizer(level, target=target, passes=passes or None).optimize(program)


def lines(result) -> list[str]:
    return [line.strip() for line in result.program.to_text().strip().splitlines()]


# ---- constant folding -------------------------------------------------------------------------------------

def test_integer_arithmetic_folds_and_wraps_at_the_width():
    result = optimized("""
    mov_imm.u8 r1, 200
    mov_imm.u8 r2, 100
    add.u8 r3, r1, r2
    stg.u8 [r200+0], r3
    mov_imm.i32 r4, -2147483648
    neg.i32 r5, r4
    stg.i32 [r200+4], r5
    mov_imm.u32 r6, 1
    mov_imm.u32 r7, 35
    shl.u32 r8, r6, r7
    stg.u32 [r200+8], r8
""", "fold_constants")
    assert "mov_imm.u8 r3, 44" in lines(result)           # 300 mod 256
    assert "mov_imm.i32 r5, -2147483648" in lines(result)  # -MIN wraps to MIN
    assert "mov_imm.u32 r8, 8" in lines(result)           # the amount modulo the width
    assert result.source_map[lines(result).index("mov_imm.u8 r3, 44")] == 3


def test_a_dividing_instruction_that_may_trap_is_kept():
    result = optimized("""
    mov_imm.i32 r1, 7
    mov_imm.i32 r2, 0
    div.i32 r3, r1, r2
    stg.i32 [r200+0], r3
    mov_imm.i32 r4, -2147483648
    mov_imm.i32 r5, -1
    rem.i32 r6, r4, r5
    stg.i32 [r200+4], r6
""")
    assert "div.i32 r3, r1, r2" in lines(result) and "rem.i32 r6, r4, r5" in lines(result)


def test_a_division_that_cannot_trap_folds_truncating_toward_zero():
    result = optimized("""
    mov_imm.i32 r1, -7
    mov_imm.i32 r2, 2
    div.i32 r3, r1, r2
    rem.i32 r4, r1, r2
    stg.i32 [r200+0], r3
    stg.i32 [r200+4], r4
""", "fold_constants")
    assert "mov_imm.i32 r3, -3" in lines(result) and "mov_imm.i32 r4, -1" in lines(result)


def test_f32_folds_are_exactly_rounded_and_nan_or_subnormal_results_are_left():
    assert evaluate("ADD", Type.F32, {"lhs": 1.0, "rhs": 2.0 ** -24}) == 1.0          # the tie rounds to even
    assert evaluate("ADD", Type.F32, {"lhs": 1.0, "rhs": 2.0 ** -23}) == 1.0 + 2.0 ** -23
    assert evaluate("DIV", Type.F32, {"lhs": 1.0, "rhs": 3.0}) == 0.3333333432674408
    assert evaluate("MUL", Type.F32, {"lhs": 3.0e38, "rhs": 10.0}) == math.inf
    assert evaluate("SUB", Type.F32, {"lhs": math.inf, "rhs": math.inf}) is None      # NaN: left alone
    assert evaluate("MUL", Type.F32, {"lhs": 2.0 ** -100, "rhs": 2.0 ** -30}) is None  # subnormal: left alone
    assert evaluate("DIV", Type.F64, {"lhs": 1.0, "rhs": 0.0}) is None
    assert evaluate("SQRT", Type.F32, {"src": 2.0}) == 1.4142135381698608
    assert evaluate("ADD", Type.F16, {"lhs": 1.0, "rhs": 2.0}) is None                 # f16/bf16 not folded
    assert evaluate("EXP", Type.F32, {"src": 1.0}) is None                             # no exact rule
    # MAD rounds the product, then the sum: not the fused result
    a = 1.0 + 2.0 ** -12
    assert evaluate("MAD", Type.F32, {"a": a, "b": a, "c": -1.0}) == 2.0 ** -11
    result = optimized("""
    mov_imm.f32 r1, -0.0
    mov_imm.f32 r2, 0.0
    mul.f32 r3, r1, r2
    stg.f32 [r200+0], r3
""", "fold_constants")
    assert "mov_imm.f32 r3, -0.0" in lines(result)


def test_a_float_op_a_backend_rounds_otherwise_is_not_folded():
    class Loose:
        @staticmethod
        def supports(op, ty=None):
            return True

        @staticmethod
        def ulp_tolerance(op, ty):
            return 1.0 if op == "DIV" else 0.0

    body = """
    mov_imm.f32 r1, 1.0
    mov_imm.f32 r2, 3.0
    div.f32 r3, r1, r2
    add.f32 r4, r1, r2
    stg.f32 [r200+0], r3
    stg.f32 [r200+4], r4
"""
    assert "div.f32 r3, r1, r2" in lines(optimized(body, "fold_constants", target=Loose()))
    assert "mov_imm.f32 r4, 4.0" in lines(optimized(body, "fold_constants", target=Loose()))


def test_conversions_fold_only_where_exact():
    assert conversion(Type.I32, Type.U8, -1) == 255
    assert conversion(Type.I32, Type.F32, 16777217) is None   # not exact in f32
    assert conversion(Type.I32, Type.F32, 16777216) == 16777216.0
    assert conversion(Type.F32, Type.I8, -300.5) == -128      # truncate, then saturate
    assert conversion(Type.F64, Type.F32, 0.1) == 0.10000000149011612


def test_constants_through_several_definitions_must_agree():
    result = optimized("""
    mov_imm.u32 r1, 5
    mov_imm.u32 r9, 1
    set.eq.u32 p0, r255, r9
    bra.p0 @other
    mov_imm.u32 r1, 6
other:
    add.u32 r2, r1, r1
    stg.u32 [r200+0], r2
""", "fold_constants")
    assert "add.u32 r2, r1, r1" in lines(result)  # 5 on one path, 6 on the other


# ---- copy propagation -------------------------------------------------------------------------------------

def test_a_copy_is_read_through_in_its_block_and_not_after_its_source_changes():
    result = optimized("""
    ldg.f32 r1, [r200+0]
    mov.f32 r2, r1
    add.f32 r3, r2, r2
    ldg.f32 r1, [r200+4]
    add.f32 r4, r2, r1
    stg.f32 [r200+8], r3
    stg.f32 [r200+12], r4
""", "propagate_copies")
    assert "add.f32 r3, r1, r1" in lines(result)
    assert "add.f32 r4, r2, r1" in lines(result)  # r1 was loaded again: r2 is the old value


def test_an_instruction_that_may_trap_keeps_its_operands_as_written():
    result = optimized("""
    ldg.i32 r1, [r200+0]
    mov.i32 r2, r1
    div.i32 r3, r1, r2
    stg.i32 [r200+4], r3
""", "propagate_copies")
    assert "div.i32 r3, r1, r2" in lines(result)  # its trap message names r2


# ---- MUL + ADD -> MAD -------------------------------------------------------------------------------------

def test_mul_add_becomes_mad_never_fma():
    result = optimized("""
    ldg.f32 r1, [r200+0]
    ldg.f32 r2, [r200+4]
    ldg.f32 r3, [r200+8]
    mul.f32 r4, r1, r2
    add.f32 r5, r4, r3
    stg.f32 [r200+12], r5
""", "fuse_multiply_add")
    text = lines(result)
    assert "mad.f32 r5, r1, r2, r3" in text and not any(line.startswith(("mul", "fma")) for line in text)
    assert result.source_map[text.index("mad.f32 r5, r1, r2, r3")] == 5  # the ADD's place


@pytest.mark.parametrize("body, reason", [
    ("""
    mul.f32 r4, r1, r2
    add.f32 r5, r4, r3
    stg.f32 [r200+12], r4
    stg.f32 [r200+16], r5
""", "the product is read again"),
    ("""
    mul.f32 r4, r1, r2
    add.f32 r5, r3, r4
    stg.f32 [r200+16], r5
""", "float product on the right: a NaN's bits may follow operand order"),
    ("""
    mul.f16 r4, r1, r2
    add.f16 r5, r4, r3
    stg.f16 [r200+16], r5
""", "F16's MAD keeps the product in f32"),
    ("""
    mul.f32 r4, r1, r2
    ldg.f32 r1, [r200+20]
    add.f32 r5, r4, r3
    stg.f32 [r200+16], r5
""", "an operand changes between them"),
    ("""
    mul.f32 r1, r1, r2
    add.f32 r5, r1, r3
    stg.f32 [r200+16], r5
""", "the MUL overwrote its operand"),
])
def test_mul_add_left_alone(body, reason):
    ty = "f16" if "f16" in body else "f32"
    loads = "".join(f"    ldg.{ty} r{k}, [r200+{4 * k}]\n" for k in (1, 2, 3))
    assert not any(line.startswith("mad") for line in lines(optimized(loads + body, "fuse_multiply_add"))), reason


def test_integer_mul_add_fuses_on_either_side():
    result = optimized("""
    ldg.u32 r1, [r200+0]
    ldg.u32 r2, [r200+4]
    mul.u32 r4, r1, r2
    add.u32 r5, r2, r4
    stg.u32 [r200+12], r5
""", "fuse_multiply_add")
    assert "mad.u32 r5, r1, r2, r2" in lines(result)


# ---- CVT chains -------------------------------------------------------------------------------------------

def test_an_integer_round_trip_through_a_wider_type_is_a_move():
    result = optimized("""
    ldg.i16 r1, [r200+0]
    cvt.f32.i16 r2, r1
    cvt.i16.f32 r3, r2
    stg.i16 [r200+4], r3
""", "shorten_conversions")
    assert "mov.i16 r3, r1" in lines(result)
    assert round_trip_exact(Type.I32, Type.U64) and round_trip_exact(Type.U8, Type.BF16)
    assert not round_trip_exact(Type.I32, Type.F32)      # 2**31 - 1 is not exact in f32
    assert not round_trip_exact(Type.I64, Type.I32)      # narrowing
    assert not round_trip_exact(Type.F32, Type.F64)      # a NaN's bits need not survive


# ---- dead code --------------------------------------------------------------------------------------------

def test_dead_pure_code_goes_and_whatever_may_trap_or_has_effects_stays():
    result = optimized("""
    ldg.u32 r1, [r200+0]
    add.u32 r2, r1, r1
    mul.u32 r3, r2, r2
    div.u32 r4, r1, r1
    ldg.u32 r5, [r200+4]
    phase.adv 3
    mov_imm.f32 r9, 1.0
    res.accum.f32 r1, r9
    bar.sync 0
""", "eliminate_dead_code")
    text = lines(result)
    assert not any(line.startswith(("add", "mul")) for line in text)
    for kept in ("div.u32 r4, r1, r1", "ldg.u32 r5, [r200 + 4]", "phase.adv 3", "res.accum.f32 r1, r9", "bar.sync 0"):
        assert kept in text


def test_jumps_and_loops_stay_and_labels_follow_the_code():
    result = optimized("""
    mov_imm.u32 r1, 3
top:
    add.u32 r7, r1, r1
    loop r1, @top
    stg.u32 [r200+0], r1
""")
    text = lines(result)
    assert "loop r1, @top" in text and not any(line.startswith("add") for line in text)
    assert result.program.instructions[result.program.labels["top"]].INFO.name == "LOOP"


def test_every_pass_is_registered_and_level_zero_changes_nothing():
    assert set(PASSES) == {"fold_constants", "propagate_copies", "shorten_conversions", "fuse_multiply_add",
                           "eliminate_dead_code"}
    program = Program.from_text(STORE + "    mov_imm.u32 r1, 1\n    add.u32 r2, r1, r1\n    exit\n")
    assert ProgramOptimizer(0).optimize(program).program is program
    assert [i.INFO.name for i in program.optimize(2)] == ["EXIT"]  # nothing is stored: all of it is dead
    with pytest.raises(ValueError):
        ProgramOptimizer(3)
    with pytest.raises(ValueError, match="unknown"):
        ProgramOptimizer(1, passes=("inline",))


def test_what_the_target_cannot_run_stays_even_dead():
    class NoExp:
        @staticmethod
        def supports(op, ty=None):
            return op != "EXP"

        @staticmethod
        def ulp_tolerance(op, ty):
            return 0.0

    result = optimized("    exp.f32 r1, r2\n    add.f32 r3, r2, r2\n", target=NoExp())
    assert "exp.f32 r1, r2" in lines(result) and not any(line.startswith("add") for line in lines(result))


def test_a_register_a_cooperative_step_reads_keeps_its_definitions():
    # lane 0 ends at @lane0 after moving r23 on; the step later reads lane 0's r23 (reaching definitions
    # do not see that read: the step is not on lane 0's path)
    result = optimized("""
    mov_imm.u64 r23, 12884901888
    cvt.u64.u32 r7, r255
    set.eq.u32 p0, r255, r255
    bra.p0 @lane0
    pmap2.add.u32 [r23+0], [r23+0], [r23+0], 2
    exit
lane0:
    add.u64 r23, r23, r7
    mul.u64 r24, r23, r7
""")
    text = lines(result)
    assert "add.u64 r23, r23, r7" in text and not any(line.startswith("mul") for line in text)
