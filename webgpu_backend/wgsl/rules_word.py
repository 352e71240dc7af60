"""Value rules of the word family: integers of 8, 16 and 32 bits held as canonical u32 bits.

Results are wrapped to the width (``wrap``); signed rules sign-extend (``sext``) to i32 where
the value matters (comparisons, DIV/REM, SHR, ABS, SIGN, MIN/MAX). Integer DIV and REM trap
DIVISION_BY_ZERO and INTEGER_OVERFLOW (MIN / -1) through the writer's ``trap``.
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.enums import Condition

from .emitter import CodeWriter
from .rules import compare_rule, value_rule
from .types import WgslType, u32_literal

__all__ = ["wrap", "sext", "extend32", "sign_bit_set"]


def wrap(wt: WgslType, expr: str) -> str:
    """``expr`` (a u32) reduced to the canonical bits of ``wt``."""
    return f"({expr})" if wt.bits == 32 else f"(({expr}) & {u32_literal(wt.mask)})"


def sext(wt: WgslType, expr: str) -> str:
    """The value of canonical bits ``expr`` as an i32 (sign-extended for signed types)."""
    if wt.bits == 32:
        return f"bitcast<i32>({expr})"
    shift = 32 - wt.bits
    return f"(bitcast<i32>(({expr}) << {shift}u) >> {shift}u)"


def extend32(wt: WgslType, expr: str) -> str:
    """Canonical bits ``expr`` extended to 32 bits by the type's signedness, as a u32."""
    return f"bitcast<u32>({sext(wt, expr)})" if wt.signed and wt.bits < 32 else expr


def sign_bit_set(wt: WgslType, expr: str) -> str:
    return f"((({expr}) >> {wt.bits - 1}u) != 0u)"


_WRAPPING = {"ADD": "+", "SUB": "-", "MUL": "*", "AND": "&", "OR": "|", "XOR": "^"}


@value_rule("ADD", "SUB", "MUL", "AND", "OR", "XOR", family="word")
def _wrapping(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return wrap(wt, f"{args[0]} {_WRAPPING[name]} {args[1]}")


@value_rule("MAD", family="word")
def _mad(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b, c = args
    return wrap(wt, f"{a} * {b} + {c}")


@value_rule("DIV", "REM", family="word")
def _division(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b = args
    w.trap(TrapCode.DIVISION_BY_ZERO, f"{b} == 0u", operand="lhs", value=a)
    if not wt.signed:
        return f"({a} {'/' if name == 'DIV' else '%'} {b})"
    minimum = u32_literal(1 << (wt.bits - 1))
    w.trap(TrapCode.INTEGER_OVERFLOW, f"{a} == {minimum} && {b} == {u32_literal(wt.mask)}")
    sa, sb = w.temp(sext(wt, a)), w.temp(sext(wt, b))
    if name == "DIV":
        return wrap(wt, f"bitcast<u32>({sa} / {sb})")
    # the remainder from the truncated quotient, not WGSL's `%`: on an NVIDIA H200 (Vulkan) the signed `%`
    # gave wrong remainders for negative operands (REM.i32 367 came back as 53437); the quotient is right there
    return wrap(wt, f"bitcast<u32>({sa} - ({sa} / {sb}) * {sb})")


@value_rule("MIN", "MAX", family="word")
def _min_max(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    fn = name.lower()
    if not wt.signed:
        return f"{fn}({args[0]}, {args[1]})"
    return wrap(wt, f"bitcast<u32>({fn}({sext(wt, args[0])}, {sext(wt, args[1])}))")


@value_rule("CLAMP", family="word")
def _clamp(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    x, lo, hi = args
    if not wt.signed:
        return f"min(max({x}, {lo}), {hi})"
    return wrap(wt, f"bitcast<u32>(min(max({sext(wt, x)}, {sext(wt, lo)}), {sext(wt, hi)}))")


@value_rule("ABS", family="word")
def _abs(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    if not wt.signed:
        return args[0]
    return wrap(wt, f"bitcast<u32>(abs({sext(wt, args[0])}))")


@value_rule("NEG", family="word")
def _neg(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return wrap(wt, f"0u - {args[0]}")


@value_rule("NOT", family="word")
def _not(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return wrap(wt, f"~{args[0]}")


@value_rule("SIGN", family="word")
def _sign(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    x = args[0]
    if not wt.signed:
        return f"select(0u, 1u, {x} != 0u)"
    return wrap(wt, f"bitcast<u32>(sign({sext(wt, x)}))")


@value_rule("SHL", family="word")
def _shl(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return wrap(wt, f"{args[0]} << ({args[1]} & {wt.bits - 1}u)")


@value_rule("SHR", family="word")
def _shr(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    amount = f"({args[1]} & {wt.bits - 1}u)"
    if not wt.signed:
        return f"({args[0]} >> {amount})"
    return wrap(wt, f"bitcast<u32>({sext(wt, args[0])} >> {amount})")


_RELATIONS = {Condition.EQ: "==", Condition.NE: "!=", Condition.LT: "<", Condition.LE: "<=", Condition.GT: ">",
              Condition.GE: ">=", Condition.LTU: "<", Condition.LEU: "<=", Condition.GTU: ">", Condition.GEU: ">="}
_UNSIGNED_CONDITIONS = frozenset({Condition.LTU, Condition.LEU, Condition.GTU, Condition.GEU})


@compare_rule("word")
def _compare(w: CodeWriter, wt: WgslType, cond: Condition, a: str, b: str) -> str:
    if wt.signed and cond not in _UNSIGNED_CONDITIONS:
        a, b = sext(wt, a), sext(wt, b)
    return f"({a} {_RELATIONS[cond]} {b})"
