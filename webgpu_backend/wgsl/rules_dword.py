"""Value rules of the dword family (I64, U64 as ``vec2<u32>``) and the wide family (I128 … U4096
as ``array<u32, N>``): both call the limb helpers of ``lib_int64`` / ``lib_wide``.

The two families share their rule shapes; the tables below name the helper each operation
calls per family, so a rule is written once.
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.enums import Condition

from .emitter import CodeWriter
from .rules import compare_rule, value_rule
from .types import WgslType

__all__ = ["is_zero", "negative", "all_ones", "minimum"]


def _h(w: CodeWriter, wt: WgslType, dword: str, wide: str) -> str:
    """The helper named ``dword`` (64-bit) or the family ``wide`` instantiated for ``wt``'s limbs."""
    return w.helper(dword) if wt.family == "dword" else w.helper(wide, wt.words)


def is_zero(w: CodeWriter, wt: WgslType, x: str) -> str:
    if wt.family == "dword":
        return f"all({x} == vec2<u32>(0u, 0u))"
    return f"{w.helper('wide_is_zero', wt.words)}({x})"


def negative(wt: WgslType, x: str) -> str:
    return f"(({x}[{wt.words - 1}] >> 31u) != 0u)"


def all_ones(wt: WgslType) -> str:
    if wt.family == "dword":
        return "vec2<u32>(0xffffffffu, 0xffffffffu)"
    return f"array<u32, {wt.words}>({', '.join(['0xffffffffu'] * wt.words)})"


def minimum(wt: WgslType) -> str:
    """The bits of the signed minimum (only the top bit set)."""
    if wt.family == "dword":
        return "vec2<u32>(0u, 0x80000000u)"
    return f"array<u32, {wt.words}>({', '.join(['0u'] * (wt.words - 1) + ['0x80000000u'])})"


def _equal(w: CodeWriter, wt: WgslType, a: str, b: str) -> str:
    if wt.family == "dword":
        return f"all({a} == {b})"
    return f"({w.helper('wide_compare', wt.words)}({a}, {b}, false) == 0)"


def _less(w: CodeWriter, wt: WgslType, a: str, b: str, signed: bool) -> str:
    if wt.family == "dword":
        return f"{w.helper('i64_less' if signed else 'u64_less')}({a}, {b})"
    return f"({w.helper('wide_compare', wt.words)}({a}, {b}, {str(signed).lower()}) < 0)"


_ARITHMETIC = {"ADD": ("u64_add", "wide_add"), "SUB": ("u64_sub", "wide_sub"), "MUL": ("u64_mul", "wide_mul")}


@value_rule("ADD", "SUB", "MUL", family="dword")
@value_rule("ADD", "SUB", "MUL", family="wide")
def _arithmetic(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{_h(w, wt, *_ARITHMETIC[name])}({args[0]}, {args[1]})"


@value_rule("MAD", family="dword")
@value_rule("MAD", family="wide")
def _mad(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b, c = args
    product = f"{_h(w, wt, 'u64_mul', 'wide_mul')}({a}, {b})"
    return f"{_h(w, wt, 'u64_add', 'wide_add')}({product}, {c})"


_BITWISE_DWORD = {"AND": "&", "OR": "|", "XOR": "^"}
_BITWISE_WIDE = {"AND": 0, "OR": 1, "XOR": 2}


@value_rule("AND", "OR", "XOR", family="dword")
def _bitwise_dword(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"({args[0]} {_BITWISE_DWORD[name]} {args[1]})"


@value_rule("AND", "OR", "XOR", family="wide")
def _bitwise_wide(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('wide_bitwise', wt.words)}({args[0]}, {args[1]}, {_BITWISE_WIDE[name]}u)"


@value_rule("NOT", family="dword")
def _not_dword(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"(~{args[0]})"


@value_rule("NOT", family="wide")
def _not_wide(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('wide_bitwise', wt.words)}({args[0]}, {args[0]}, 3u)"


@value_rule("NEG", family="dword")
@value_rule("NEG", family="wide")
def _neg(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{_h(w, wt, 'u64_neg', 'wide_neg')}({args[0]})"


@value_rule("ABS", family="dword")
@value_rule("ABS", family="wide")
def _abs(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    x = args[0]
    if not wt.signed:
        return x
    x = w.temp(x)
    return f"select({x}, {_h(w, wt, 'u64_neg', 'wide_neg')}({x}), {negative(wt, x)})"


@value_rule("SIGN", family="dword")
@value_rule("SIGN", family="wide")
def _sign(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    x = w.temp(args[0])
    zero = wt.zero
    one = "vec2<u32>(1u, 0u)" if wt.family == "dword" else f"array<u32, {wt.words}>(1u{', 0u' * (wt.words - 1)})"
    positive = f"select({one}, {zero}, {is_zero(w, wt, x)})"
    if not wt.signed:
        return positive
    return f"select({positive}, {all_ones(wt)}, {negative(wt, x)})"


@value_rule("MIN", "MAX", family="dword")
@value_rule("MIN", "MAX", family="wide")
def _min_max(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b = w.temp(args[0]), w.temp(args[1])
    less = _less(w, wt, a, b, wt.signed)
    return f"select({b}, {a}, {less})" if name == "MIN" else f"select({a}, {b}, {less})"


@value_rule("CLAMP", family="dword")
@value_rule("CLAMP", family="wide")
def _clamp(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    x, lo, hi = (w.temp(a) for a in args)
    raised = w.temp(f"select({x}, {lo}, {_less(w, wt, x, lo, wt.signed)})")
    return f"select({raised}, {hi}, {_less(w, wt, hi, raised, wt.signed)})"


@value_rule("SHL", family="dword")
@value_rule("SHL", family="wide")
def _shl(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{_h(w, wt, 'u64_shl', 'wide_shl')}({args[0]}, {args[1]})"


@value_rule("SHR", family="dword")
def _shr_dword(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('i64_shr' if wt.signed else 'u64_shr')}({args[0]}, {args[1]})"


@value_rule("SHR", family="wide")
def _shr_wide(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('wide_shr', wt.words)}({args[0]}, {args[1]}, {str(wt.signed).lower()})"


@value_rule("DIV", "REM", family="dword")
@value_rule("DIV", "REM", family="wide")
def _division(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b = w.temp(args[0]), w.temp(args[1])
    w.trap(TrapCode.DIVISION_BY_ZERO, is_zero(w, wt, b))
    if wt.signed:
        w.trap(TrapCode.INTEGER_OVERFLOW, f"{_equal(w, wt, a, minimum(wt))} && {_equal(w, wt, b, all_ones(wt))}")
        helper = _h(w, wt, "i64_divmod", "wide_sdivmod")
    else:
        helper = _h(w, wt, "u64_divmod", "wide_divmod")
    return f"{helper}({a}, {b}).{'q' if name == 'DIV' else 'r'}"


_RELATIONS = {Condition.LT: (False, False), Condition.GT: (True, False), Condition.LE: (True, True),
              Condition.GE: (False, True), Condition.LTU: (False, False), Condition.GTU: (True, False),
              Condition.LEU: (True, True), Condition.GEU: (False, True)}
_UNSIGNED_CONDITIONS = frozenset({Condition.LTU, Condition.LEU, Condition.GTU, Condition.GEU})


@compare_rule("dword")
@compare_rule("wide")
def _compare(w: CodeWriter, wt: WgslType, cond: Condition, a: str, b: str) -> str:
    if cond is Condition.EQ:
        return _equal(w, wt, a, b)
    if cond is Condition.NE:
        return f"!{_equal(w, wt, a, b)}"
    swapped, negated = _RELATIONS[cond]
    signed = wt.signed and cond not in _UNSIGNED_CONDITIONS
    less = _less(w, wt, b, a, signed) if swapped else _less(w, wt, a, b, signed)
    return f"!{less}" if negated else less
