"""CVT: one conversion rule per (source family, destination family), each rounding or wrapping once
(conversions from or to the extended integers are statement rules of ``rules_wide``).

- int -> int: extend by the source's signedness, keep the destination's words, wrap;
- int -> float: the magnitude's leading 32 bits and a sticky bit, rounded once to the
  destination format by ``round_top`` (so F16/BF16 never see a double rounding);
- float -> float: exact when widening, else rounded once to the narrower format;
- float -> int: truncate, saturate, NaN -> 0.
"""

from __future__ import annotations

from typing import Callable

from .emitter import CodeWriter
from .lib_float import FORMAT_CODES
from .rules_dword import negative
from .rules_float import finish
from .rules_word import extend32, wrap
from .types import WgslType

__all__ = ["CONVERSIONS", "conversion", "convert"]

#: (source family, destination family) -> rule (w, src WgslType, dst WgslType, value) -> expression
CONVERSIONS: dict[tuple[str, str], Callable[[CodeWriter, WgslType, WgslType, str], str]] = {}

_INTEGER_FAMILIES = ("word", "dword")


def conversion(*pairs: tuple[str, str]):
    """Register a conversion rule for the (source family, destination family) ``pairs``."""
    def register(fn):
        for pair in pairs:
            CONVERSIONS[pair] = fn
        return fn
    return register


def convert(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    """The expression of ``value`` (of ``src``) converted to ``dst``."""
    if src.ty is dst.ty:
        return value
    return CONVERSIONS[(src.family, dst.family)](w, src, dst, value)


@conversion(("float", "float"))
def _float_to_float(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    return value if dst.format == "f32" else finish(w, dst, value)


@conversion(("word", "word"))
def _word_to_word(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    return wrap(dst, extend32(src, value))


def _limbs(w: CodeWriter, src: WgslType, value: str) -> tuple[list[str], str]:
    """The source's words (low first, at most 32-bit each) and the fill word of its extension."""
    if src.family == "word":
        low = w.temp(extend32(src, value))
        words = [low]
        top = low
    else:
        whole = w.temp(value)
        words = [f"{whole}[{i}]" for i in range(src.words)]
        top = words[-1]
    fill = w.temp(f"select(0u, 0xffffffffu, ({top} >> 31u) != 0u)") if src.signed else "0u"
    return words, fill


@conversion(*((s, "dword") for s in _INTEGER_FAMILIES))
def _to_limbs(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    words, fill = _limbs(w, src, value)
    parts = [words[i] if i < len(words) else fill for i in range(dst.words)]
    return f"{dst.wgsl}({', '.join(parts)})"


@conversion(("dword", "word"))
def _limbs_to_word(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    return wrap(dst, f"{value}[0]")


@conversion(("word", "float"))
def _word_to_float(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    extended = w.temp(extend32(src, value))
    neg = f"(({extended} >> 31u) != 0u)" if src.signed else "false"
    magnitude = w.temp(f"select({extended}, 0u - {extended}, {neg})")
    result = w.var("f32", "0.0", "cvt")
    with w.block(f"if ({magnitude} != 0u)"):
        z = w.temp(f"countLeadingZeros({magnitude})")
        rounded = f"{w.helper('round_top', FORMAT_CODES[dst.format])}({magnitude} << {z}, false, 31 - i32({z}), {neg})"
        w.emit(f"{result} = {rounded};")
    return result


@conversion(("dword", "float"))
def _dword_to_float(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    whole = w.temp(value)
    neg = negative(whole) if src.signed else "false"
    negate_name, top_name = w.helper("u64_neg"), w.helper("u64_to_float_top")
    zero = f"all({whole} == vec2<u32>(0u, 0u))"
    result = w.var("f32", "0.0", "cvt")
    with w.block(f"if (!{zero})"):
        negative_flag = w.temp(neg)
        magnitude = w.temp(f"select({whole}, {negate_name}({whole}), {negative_flag})")
        parts = w.temp(f"{top_name}({magnitude})")
        rounded = w.helper("round_top", FORMAT_CODES[dst.format])
        w.emit(f"{result} = {rounded}({parts}.top, {parts}.sticky, {parts}.e, {negative_flag});")
    return result


@conversion(("float", "word"))
def _float_to_word(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    return f"{w.helper('f32_to_word')}({value}, {dst.bits}u, {str(dst.signed).lower()})"


@conversion(("float", "dword"))
def _float_to_dword(w: CodeWriter, src: WgslType, dst: WgslType, value: str) -> str:
    return f"{w.helper('f32_to_dword')}({value}, {str(dst.signed).lower()})"


