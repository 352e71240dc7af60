"""Value rules of the dword family: I64 and U64 held as ``vec2<u32>`` (low word, high word),
computed by the helpers of ``lib_int64``. (The extended integers have statement rules of their
own, ``rules_wide``.)"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.enums import Condition

from .emitter import CodeWriter
from .rules import compare_rule, value_rule
from .types import WgslType

__all__ = ["negative", "ALL_ONES", "MINIMUM", "ZERO"]

ALL_ONES = "vec2<u32>(0xffffffffu, 0xffffffffu)"
#: the bits of the signed minimum (only the top bit set)
MINIMUM = "vec2<u32>(0u, 0x80000000u)"
ZERO = "vec2<u32>(0u, 0u)"


def negative(x: str) -> str:
    """Whether the 64-bit value ``x`` has its top bit set."""
    return f"(({x}[1] >> 31u) != 0u)"


def _less(w: CodeWriter, a: str, b: str, signed: bool) -> str:
    return f"{w.helper('i64_less' if signed else 'u64_less')}({a}, {b})"


_ARITHMETIC = {"ADD": "u64_add", "SUB": "u64_sub", "MUL": "u64_mul"}


@value_rule("ADD", "SUB", "MUL", family="dword")
def _arithmetic(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper(_ARITHMETIC[name])}({args[0]}, {args[1]})"


@value_rule("MAD", family="dword")
def _mad(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b, c = args
    return f"{w.helper('u64_add')}({w.helper('u64_mul')}({a}, {b}), {c})"


_BITWISE = {"AND": "&", "OR": "|", "XOR": "^"}


@value_rule("AND", "OR", "XOR", family="dword")
def _bitwise(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"({args[0]} {_BITWISE[name]} {args[1]})"


@value_rule("NOT", family="dword")
def _not(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"(~{args[0]})"


@value_rule("NEG", family="dword")
def _neg(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('u64_neg')}({args[0]})"


@value_rule("ABS", family="dword")
def _abs(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    if not wt.signed:
        return args[0]
    return f"{w.helper('i64_abs')}({args[0]})"


@value_rule("SIGN", family="dword")
def _sign(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    if wt.signed:
        return f"{w.helper('i64_sign')}({args[0]})"
    return f"vec2<u32>(select(0u, 1u, any({args[0]} != {ZERO})), 0u)"


@value_rule("MIN", "MAX", family="dword")
def _min_max(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b = w.temp(args[0]), w.temp(args[1])
    less = _less(w, a, b, wt.signed)
    return f"select({b}, {a}, {less})" if name == "MIN" else f"select({a}, {b}, {less})"


@value_rule("CLAMP", family="dword")
def _clamp(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    x, lo, hi = (w.temp(a) for a in args)
    raised = w.temp(f"select({x}, {lo}, {_less(w, x, lo, wt.signed)})")
    return f"select({raised}, {hi}, {_less(w, hi, raised, wt.signed)})"


@value_rule("SHL", family="dword")
def _shl(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('u64_shl')}({args[0]}, {args[1]})"


@value_rule("SHR", family="dword")
def _shr(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('i64_shr' if wt.signed else 'u64_shr')}({args[0]}, {args[1]})"


@value_rule("DIV", "REM", family="dword")
def _division(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b = w.temp(args[0]), w.temp(args[1])
    w.trap(TrapCode.DIVISION_BY_ZERO, f"all({b} == {ZERO})", operand="lhs", value=(f"{a}.x", f"{a}.y"))
    if wt.signed:
        w.trap(TrapCode.INTEGER_OVERFLOW, f"all({a} == {MINIMUM}) && all({b} == {ALL_ONES})")
    helper = w.helper("i64_divmod" if wt.signed else "u64_divmod")
    return f"{helper}({a}, {b}).{'q' if name == 'DIV' else 'r'}"


_RELATIONS = {Condition.LT: (False, False), Condition.GT: (True, False), Condition.LE: (True, True),
              Condition.GE: (False, True), Condition.LTU: (False, False), Condition.GTU: (True, False),
              Condition.LEU: (True, True), Condition.GEU: (False, True)}
_UNSIGNED_CONDITIONS = frozenset({Condition.LTU, Condition.LEU, Condition.GTU, Condition.GEU})


@compare_rule("dword")
def _compare(w: CodeWriter, wt: WgslType, cond: Condition, a: str, b: str) -> str:
    if cond is Condition.EQ:
        return f"all({a} == {b})"
    if cond is Condition.NE:
        return f"any({a} != {b})"
    swapped, negated = _RELATIONS[cond]
    signed = wt.signed and cond not in _UNSIGNED_CONDITIONS
    less = _less(w, b, a, signed) if swapped else _less(w, a, b, signed)
    return f"!{less}" if negated else less
