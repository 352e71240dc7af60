"""Per-lane rules of the extended integers (I128 … U4096), whose registers are slots of the lane's
wide register file in memory (``lib_wide``): each rule reads operand slots and writes the
destination slot through the slot-based helpers; results that need a temporary get a scratch
slot (``ctx.scratch``), so an operation on a register and itself is always right.

``WIDE_RULES[name](ctx, wt, instr)`` is consulted by the per-lane rules (typed computations,
MOV, MOV_IMM, SEL, SETcc, CVT, loads and stores) when the instruction's type is extended.
"""

from __future__ import annotations

from typing import Callable

from atlas_web.errors import TrapCode
from atlas_web.isa.enums import Condition

from .lib_float import FORMAT_CODES
from .lib_wide import DIVMOD_SCRATCH_PER_LIMB
from .types import TYPE_MAP, WgslType, u32_literal

__all__ = ["WIDE_RULES", "wide_rule", "WIDE_COMPUTATIONS", "wide_load", "wide_store", "wide_convert_from",
           "wide_convert_to"]

#: instruction name -> rule (ctx, wt, instr) for extended types
WIDE_RULES: dict[str, Callable] = {}


def wide_rule(*names: str):
    """Register an extended-integer rule for instructions ``names``."""
    def register(fn):
        for name in names:
            WIDE_RULES[name] = fn
        return fn
    return register


def _h(ctx, name: str, wt: WgslType) -> str:
    return ctx.helper(name, wt.words)


def _copy(ctx, wt: WgslType, d: int, a: int) -> None:
    if d != a:
        ctx.emit(f"{_h(ctx, 'wide_copy', wt)}({d}u, {a}u);")


def _negative(ctx, wt: WgslType, slot: int) -> str:
    return f"((state[{ctx.helper('wx')}({slot}u, {wt.words - 1}u)] >> 31u) != 0u)"


@wide_rule("ADD", "SUB")
def _add(ctx, wt: WgslType, instr) -> None:
    a, b, d = ctx.wide_slot("lhs"), ctx.wide_slot("rhs"), ctx.wide_slot("dst", write=True)
    ctx.emit(f"{_h(ctx, 'wide_add', wt)}({d}u, {a}u, {b}u, {str(instr.INFO.name == 'SUB').lower()});")


@wide_rule("MUL")
def _mul(ctx, wt: WgslType, instr) -> None:
    t = ctx.scratch(wt)
    ctx.emit(f"{_h(ctx, 'wide_mul', wt)}({t}u, {ctx.wide_slot('lhs')}u, {ctx.wide_slot('rhs')}u);")
    _copy(ctx, wt, ctx.wide_slot("dst", write=True), t)


@wide_rule("MAD")
def _mad(ctx, wt: WgslType, instr) -> None:
    t = ctx.scratch(wt)
    ctx.emit(f"{_h(ctx, 'wide_mul', wt)}({t}u, {ctx.wide_slot('a')}u, {ctx.wide_slot('b')}u);")
    ctx.emit(f"{_h(ctx, 'wide_add', wt)}({ctx.wide_slot('dst', write=True)}u, {t}u, {ctx.wide_slot('c')}u, false);")


_BITWISE = {"AND": 0, "OR": 1, "XOR": 2}


@wide_rule("AND", "OR", "XOR")
def _bitwise(ctx, wt: WgslType, instr) -> None:
    a, b, d = ctx.wide_slot("lhs"), ctx.wide_slot("rhs"), ctx.wide_slot("dst", write=True)
    ctx.emit(f"{_h(ctx, 'wide_bitwise', wt)}({d}u, {a}u, {b}u, {_BITWISE[instr.INFO.name]}u);")


@wide_rule("NOT")
def _not(ctx, wt: WgslType, instr) -> None:
    a, d = ctx.wide_slot("src"), ctx.wide_slot("dst", write=True)
    ctx.emit(f"{_h(ctx, 'wide_bitwise', wt)}({d}u, {a}u, {a}u, 3u);")


@wide_rule("NEG")
def _neg(ctx, wt: WgslType, instr) -> None:
    ctx.emit(f"{_h(ctx, 'wide_negate', wt)}({ctx.wide_slot('dst', write=True)}u, {ctx.wide_slot('src')}u);")


@wide_rule("ABS")
def _abs(ctx, wt: WgslType, instr) -> None:
    a, d = ctx.wide_slot("src"), ctx.wide_slot("dst", write=True)
    if not wt.signed:
        _copy(ctx, wt, d, a)
        return
    with ctx.block(f"if {_negative(ctx, wt, a)}"):
        ctx.emit(f"{_h(ctx, 'wide_negate', wt)}({d}u, {a}u);")
    if d != a:
        with ctx.block("else"):
            _copy(ctx, wt, d, a)


@wide_rule("SIGN")
def _sign(ctx, wt: WgslType, instr) -> None:
    a, d = ctx.wide_slot("src"), ctx.wide_slot("dst", write=True)
    zero = ctx.temp(f"{_h(ctx, 'wide_is_zero', wt)}({a}u)")
    negative = ctx.temp(_negative(ctx, wt, a) if wt.signed else "false")
    fill = ctx.temp(f"select(0u, 0xffffffffu, {negative})")
    low = f"select(select(1u, 0u, {zero}), 0xffffffffu, {negative})"
    ctx.emit(f"{_h(ctx, 'wide_fill', wt)}({d}u, vec2<u32>({low}, {fill}), 1u, {fill});")


@wide_rule("MIN", "MAX")
def _min_max(ctx, wt: WgslType, instr) -> None:
    a, b, d = ctx.wide_slot("lhs"), ctx.wide_slot("rhs"), ctx.wide_slot("dst", write=True)
    order = ctx.temp(f"{_h(ctx, 'wide_compare', wt)}({a}u, {b}u, {str(wt.signed).lower()})")
    first = "<" if instr.INFO.name == "MIN" else ">"
    with ctx.block(f"if ({order} {first} 0)"):
        _copy(ctx, wt, d, a)
    with ctx.block("else"):
        _copy(ctx, wt, d, b)


@wide_rule("CLAMP")
def _clamp(ctx, wt: WgslType, instr) -> None:
    x, lo, hi = ctx.wide_slot("src"), ctx.wide_slot("min"), ctx.wide_slot("max")
    t = ctx.scratch(wt)
    compare, signed = _h(ctx, "wide_compare", wt), str(wt.signed).lower()
    _copy(ctx, wt, t, x)
    with ctx.block(f"if ({compare}({t}u, {lo}u, {signed}) < 0)"):
        _copy(ctx, wt, t, lo)
    with ctx.block(f"if ({compare}({hi}u, {t}u, {signed}) < 0)"):
        _copy(ctx, wt, t, hi)
    _copy(ctx, wt, ctx.wide_slot("dst", write=True), t)


@wide_rule("SHL", "SHR")
def _shift(ctx, wt: WgslType, instr) -> None:
    t = ctx.scratch(wt)
    left = str(instr.INFO.name == "SHL").lower()
    ctx.emit(f"{_h(ctx, 'wide_shift', wt)}({t}u, {ctx.wide_slot('src')}u, {ctx.read('amount')}, {left}, "
             f"{str(wt.signed).lower()});")
    _copy(ctx, wt, ctx.wide_slot("dst", write=True), t)


def _all_words(ctx, wt: WgslType, slot: int, low: int, top: int) -> str:
    """Whether limb N-1 of ``slot`` is ``top`` and every other limb is ``low``."""
    index = ctx.helper("wx")
    flag = ctx.var("bool", "true", "pattern")
    with ctx.block(f"for (var k = 0u; k < ({wt.words - 1}u ^ launch.zero); k = k + 1u)"):
        ctx.emit(f"{flag} = {flag} && state[{index}({slot}u, k)] == {u32_literal(low)};")
    return f"({flag} && state[{index}({slot}u, {wt.words - 1}u)] == {u32_literal(top)})"


def _divmod_scratch(ctx, wt: WgslType) -> int:
    """The first of the scratch words wide_divmod needs (its digit arrays)."""
    first = ctx.scratch(wt)
    for _ in range(DIVMOD_SCRATCH_PER_LIMB - 1):
        ctx.scratch(wt)
    return first


@wide_rule("DIV", "REM")
def _division(ctx, wt: WgslType, instr) -> None:
    a, b = ctx.wide_slot("lhs"), ctx.wide_slot("rhs")
    ctx.trap(TrapCode.DIVISION_BY_ZERO, f"{_h(ctx, 'wide_is_zero', wt)}({b}u)")
    q, r = ctx.scratch(wt), ctx.scratch(wt)
    if wt.signed:
        is_min = _all_words(ctx, wt, a, 0, 0x80000000)
        is_minus_one = _all_words(ctx, wt, b, 0xFFFFFFFF, 0xFFFFFFFF)
        ctx.trap(TrapCode.INTEGER_OVERFLOW, f"{is_min} && {is_minus_one}")
        na, nb = ctx.temp(_negative(ctx, wt, a)), ctx.temp(_negative(ctx, wt, b))
        ta, tb = ctx.scratch(wt), ctx.scratch(wt)
        negate = _h(ctx, "wide_negate", wt)
        for flag, src, dst in ((na, a, ta), (nb, b, tb)):
            with ctx.block(f"if ({flag})"):
                ctx.emit(f"{negate}({dst}u, {src}u);")
            with ctx.block("else"):
                _copy(ctx, wt, dst, src)
        divmod = _h(ctx, "wide_divmod", wt)
        ctx.emit(f"if (alive) {{ {divmod}({q}u, {r}u, {ta}u, {tb}u, {_divmod_scratch(ctx, wt)}u); }}")
        ctx.emit(f"if ({na} != {nb}) {{ {negate}({q}u, {q}u); }}")
        ctx.emit(f"if ({na}) {{ {negate}({r}u, {r}u); }}")
    else:
        ctx.emit(f"if (alive) {{ {_h(ctx, 'wide_divmod', wt)}({q}u, {r}u, {a}u, {b}u, {_divmod_scratch(ctx, wt)}u); }}")
    _copy(ctx, wt, ctx.wide_slot("dst", write=True), q if instr.INFO.name == "DIV" else r)


#: the instructions computed by WIDE_RULES (the typed computations an extended type accepts)
WIDE_COMPUTATIONS = frozenset(WIDE_RULES)


@wide_rule("MOV")
def _mov(ctx, wt: WgslType, instr) -> None:
    _copy(ctx, wt, ctx.wide_slot("dst", write=True), ctx.wide_slot("src"))


@wide_rule("MOV_IMM")
def _mov_imm(ctx, wt: WgslType, instr) -> None:
    d = ctx.wide_slot("dst", write=True)
    bits = int(instr.value) & ((1 << wt.bits) - 1)
    words = [(bits >> (32 * k)) & 0xFFFFFFFF for k in range(wt.words)]
    fill = words[-1] if words[-1] in (0, 0xFFFFFFFF) else 0
    ctx.emit(f"{_h(ctx, 'wide_fill', wt)}({d}u, vec2<u32>(0u, 0u), 0u, {u32_literal(fill)});")
    index = ctx.helper("wx")
    for k, word in enumerate(words):
        if word != fill:
            ctx.emit(f"state[{index}({d}u, {k}u)] = {u32_literal(word)};")


@wide_rule("SEL")
def _sel(ctx, wt: WgslType, instr) -> None:
    d = ctx.wide_slot("dst", write=True)
    with ctx.block(f"if ({ctx.read('pred')})"):
        _copy(ctx, wt, d, ctx.wide_slot("true_val"))
    with ctx.block("else"):
        _copy(ctx, wt, d, ctx.wide_slot("false_val"))


_RELATIONS = {Condition.EQ: "==", Condition.NE: "!=", Condition.LT: "<", Condition.LE: "<=", Condition.GT: ">",
              Condition.GE: ">=", Condition.LTU: "<", Condition.LEU: "<=", Condition.GTU: ">", Condition.GEU: ">="}
_UNSIGNED = frozenset({Condition.LTU, Condition.LEU, Condition.GTU, Condition.GEU})


@wide_rule("SETcc")
def _setcc(ctx, wt: WgslType, instr) -> None:
    signed = wt.signed and instr.cond not in _UNSIGNED
    order = f"{_h(ctx, 'wide_compare', wt)}({ctx.wide_slot('lhs')}u, {ctx.wide_slot('rhs')}u, {str(signed).lower()})"
    ctx.write("pred", f"({order} {_RELATIONS[instr.cond]} 0)")


def wide_load(ctx, wt: WgslType, load: str, byte: str, slot: int) -> None:
    """Copy the value at (aligned) byte offset ``byte`` into ``slot`` with accessor ``load(word)``."""
    first = ctx.temp(f"{byte} >> 2u")
    with ctx.block(f"for (var k = 0u; k < ({wt.words}u ^ launch.zero); k = k + 1u)"):
        ctx.emit(f"state[{ctx.helper('wx')}({slot}u, k)] = {load}({first} + k);")


def wide_store(ctx, wt: WgslType, store: str, byte: str, slot: int) -> None:
    """Store ``slot`` at byte offset ``byte`` with accessor ``store(word, value)``."""
    first = ctx.temp(f"{byte} >> 2u")
    with ctx.block(f"for (var k = 0u; k < ({wt.words}u ^ launch.zero); k = k + 1u)"):
        ctx.emit(f"{store}({first} + k, state[{ctx.helper('wx')}({slot}u, k)]);")


def wide_convert_to(ctx, src: WgslType, dst: WgslType, value: str, slot: int) -> None:
    """CVT into an extended type: ``value`` (a word, dword or float expression, or a slot number for
    an extended source) converted into ``slot``."""
    fill_helper = _h(ctx, "wide_fill", dst)
    if src.family == "wide":
        ctx.emit(f"{_h(ctx, 'wide_extend', dst)}({slot}u, {value}u, {src.words}u, {str(src.signed).lower()});")
    elif src.family == "float":
        ctx.emit(f"{_h(ctx, 'f32_to_wide', dst)}({slot}u, {value}, {str(dst.signed).lower()});")
    else:
        from .rules_word import extend32
        if src.family == "word":
            low = ctx.temp(extend32(src, value))
            pair, words, top = f"vec2<u32>({low}, 0u)", 1, low
        else:
            pair = ctx.temp(value)
            words, top = 2, f"{pair}.y"
        fill = f"select(0u, 0xffffffffu, ({top} >> 31u) != 0u)" if src.signed else "0u"
        ctx.emit(f"{fill_helper}({slot}u, {pair}, {words}u, {fill});")


def wide_convert_from(ctx, src: WgslType, dst: WgslType, slot: int) -> str:
    """CVT out of an extended type: the expression of ``slot`` (of ``src``) converted to ``dst``."""
    index = ctx.helper("wx")
    if dst.family == "word":
        from .rules_word import wrap
        return wrap(dst, f"state[{index}({slot}u, 0u)]")
    if dst.family == "dword":
        return f"vec2<u32>(state[{index}({slot}u, 0u)], state[{index}({slot}u, 1u)])"
    result = ctx.var("f32", "0.0", "cvt")
    with ctx.block(f"if (!{_h(ctx, 'wide_is_zero', src)}({slot}u))"):
        negative = ctx.temp(_negative(ctx, src, slot) if src.signed else "false")
        magnitude = ctx.scratch(src)
        with ctx.block(f"if ({negative})"):
            ctx.emit(f"{_h(ctx, 'wide_negate', src)}({magnitude}u, {slot}u);")
        with ctx.block("else"):
            _copy(ctx, src, magnitude, slot)
        parts = ctx.temp(f"{_h(ctx, 'wide_to_float_top', src)}({magnitude}u)")
        rounded = ctx.helper("round_top", FORMAT_CODES[dst.format])
        ctx.emit(f"{result} = {rounded}({parts}.top, {parts}.sticky, {parts}.e, {negative});")
    return result


@wide_rule("CVT")
def _cvt(ctx, wt: WgslType, instr) -> None:
    src, dst = TYPE_MAP[instr.src_ty], TYPE_MAP[instr.dst_ty]
    if dst.family == "wide":
        value = ctx.wide_slot("src") if src.family == "wide" else ctx.read("src")
        wide_convert_to(ctx, src, dst, value, ctx.wide_slot("dst", write=True))
    else:
        ctx.write("dst", wide_convert_from(ctx, src, dst, ctx.wide_slot("src")))
