"""Value rules of the float family (F16, BF16, F32 held in f32).

Each result is computed in f32 and rounded to the instruction's format (``finish``), as the
contract says for F16 and BF16. Products that must round before an addition (MUL, MAD, LERP)
pass through ``opaque_f32`` so the compiler cannot fuse them. DIV, RCP, SQRT and RSQRT are the
correctly rounded integer helpers of ``lib_rounding`` (WGSL's ``/`` and ``sqrt`` may be 2.5 ulp
off, and real GPUs' are); an operation whose two
operands are the same register gets one of them opaque, so ``x - x`` keeps its NaN for
infinite ``x``. NaN tests look at bits (``is_nan``).
"""

from __future__ import annotations

from atlas_web.isa.enums import Condition

from .emitter import CodeWriter
from .rules import compare_rule, value_rule
from .types import WgslType

__all__ = ["finish", "float_bits", "FINISHERS"]


def _finish_f32(w: CodeWriter, expr: str) -> str:
    return expr


def _finish_f16(w: CodeWriter, expr: str) -> str:
    # integer rounding also where the device has shader-f16: WGSL lets f16(x) round either way and gives
    # an indeterminate value out of range (an NVIDIA H200 kept 3.0 where an f16 product had overflowed)
    return f"{w.helper('round_f16_packed')}({expr})"


def _finish_bf16(w: CodeWriter, expr: str) -> str:
    return f"{w.helper('round_bf16')}({expr})"


#: float format -> how an f32 result is rounded to it
FINISHERS = {"f32": _finish_f32, "f16": _finish_f16, "bf16": _finish_bf16}


def finish(w: CodeWriter, wt: WgslType, expr: str) -> str:
    """``expr`` (an f32 result) rounded to ``wt``'s format."""
    return FINISHERS[wt.format](w, expr)


def float_bits(expr: str) -> str:
    return f"bitcast<u32>({expr})"


def _opaque(w: CodeWriter, expr: str) -> str:
    return f"{w.helper('opaque_f32')}({expr})"


def _distinct(w: CodeWriter, a: str, b: str) -> tuple[str, str]:
    """The operands, the second made opaque when both are the same expression."""
    return (a, _opaque(w, b)) if a == b else (a, b)


_ARITHMETIC = {"ADD": "+", "SUB": "-", "MUL": "*"}


@value_rule("ADD", "SUB", "MUL", family="float")
def _arithmetic(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b = _distinct(w, *args)
    result = f"({a} {_ARITHMETIC[name]} {b})"
    if name == "MUL" and wt.format == "f32" and not w.vector:
        # a product stays rounded: NVIDIA's compiler contracts a multiply and an add that reads it into one
        # FMA (one rounding; seen on an H200), also across instructions; F16/BF16 round in integer code
        result = _opaque(w, result)
    return finish(w, wt, result)


@value_rule("DIV", family="float")
def _div(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return finish(w, wt, f"{w.helper('div_f32')}({args[0]}, {args[1]})")


@value_rule("REM", family="float")
def _rem(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return finish(w, wt, f"{w.helper('fmod')}({args[0]}, {args[1]})")


_MIN_MAX = {"MIN": "fmin", "MAX": "fmax"}


@value_rule("MIN", "MAX", family="float")
def _min_max(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper(_MIN_MAX[name])}({args[0]}, {args[1]})"


@value_rule("MAD", family="float")
def _mad(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b, c = args
    return finish(w, wt, f"({_opaque(w, f'{a} * {b}')} + {c})")


@value_rule("FMA", "FMS", family="float")
def _fma(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b, c = args
    if name == "FMS":
        c = f"bitcast<f32>(bitcast<u32>({c}) ^ 0x80000000u)"
    return finish(w, wt, f"{w.helper('fma_f32')}({a}, {b}, {c})")


@value_rule("ABS", family="float")
def _abs(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"bitcast<f32>(bitcast<u32>({args[0]}) & 0x7fffffffu)"


@value_rule("NEG", family="float")
def _neg(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"bitcast<f32>(bitcast<u32>({args[0]}) ^ 0x80000000u)"


@value_rule("RCP", family="float")
def _rcp(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return finish(w, wt, f"{w.helper('div_f32')}(1.0, {args[0]})")


@value_rule("RSQRT", family="float")
def _rsqrt(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return finish(w, wt, f"{w.helper('div_f32')}(1.0, {w.helper('sqrt_f32')}({args[0]}))")


@value_rule("SQRT", family="float")
def _sqrt(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return finish(w, wt, f"{w.helper('sqrt_f32')}({args[0]})")


@value_rule("CLAMP", family="float")
def _clamp(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    x, lo, hi = args
    return f"{w.helper('fmin')}({w.helper('fmax')}({x}, {lo}), {hi})"


@value_rule("LERP", family="float")
def _lerp(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    a, b, t = args
    minuend, subtrahend = _distinct(w, b, a)
    difference = w.temp(f"({minuend} - {subtrahend})")
    return finish(w, wt, f"({a} + {_opaque(w, f'{t} * {difference}')})")


@value_rule("SIGN", family="float")
def _sign(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return f"{w.helper('fsign')}({args[0]})"


@value_rule("FLOOR", "CEIL", "ROUND", "TRUNC", family="float")
def _integral(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    # the integral value of a value of the format is a value of the format: no rounding needed
    return f"{name.lower()}({args[0]})"


_ORDERED = {Condition.EQ: "==", Condition.LT: "<", Condition.LE: "<=", Condition.GT: ">", Condition.GE: ">="}
_UNORDERED = {Condition.LTU: "<", Condition.LEU: "<=", Condition.GTU: ">", Condition.GEU: ">="}


@compare_rule("float")
def _compare(w: CodeWriter, wt: WgslType, cond: Condition, a: str, b: str) -> str:
    # ordered on the bits (float_key): a device may flush subnormals to zero in float comparisons
    nan = f"({w.helper('is_nan')}({a}) || {w.helper('is_nan')}({b}))"
    key = w.helper("float_key")
    ka, kb = f"{key}({a})", f"{key}({b})"
    if cond is Condition.NE:
        return f"({nan} || {ka} != {kb})"
    if cond in _ORDERED:
        return f"(!{nan} && {ka} {_ORDERED[cond]} {kb})"
    return f"({nan} || {ka} {_UNORDERED[cond]} {kb})"
