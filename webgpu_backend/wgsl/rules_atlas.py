"""Per-lane rules of the Atlas instructions (shared/atlas-structures.md, docs/semantics.md).

Class, page, byte and index operands are read as unsigned values of their register's type
(a 64-bit one is "large" when its high word is set). The classify, mirror and degree maps are
arithmetic on the class label; the neighbour table is a private array of packed bytes.
ResAccum adds each f32 exactly into fixed-point sums in the runtime buffer (``res_accum``):
the host turns them into correctly rounded f64 sums. The phase is the private ``phase``.
"""

from __future__ import annotations

from atlas_web import atlas
from atlas_web.errors import TrapCode
from atlas_web.trap_report import operand_position

from .lane_context import LaneContext
from .library import helper
from .rules import lane_rule

__all__ = ["neighbour_table_wgsl", "RES_LIMBS", "RES_STRIDE", "RES_WORDS", "RES_FLAG_POS_INF", "RES_FLAG_NEG_INF",
           "RES_FLAG_NAN"]

#: limbs of one fixed-point ResAccum sum (bit 0 weighs 2**-149; 278 value bits and 42 of carry room)
RES_LIMBS = 10
#: words per class: one flag word, the positive sum, the negative sum
RES_STRIDE = 1 + 2 * RES_LIMBS
#: words of the whole ResAccum area
RES_WORDS = atlas.NUM_CLASSES * RES_STRIDE
RES_FLAG_POS_INF = 1
RES_FLAG_NEG_INF = 2
RES_FLAG_NAN = 4


def neighbour_table_wgsl() -> str:
    """The module-scope declaration of the packed neighbour table (96 x 6 bytes, 4 per word)."""
    table = atlas.NEIGHBOUR_TABLE
    words = [int.from_bytes(table[k:k + 4].ljust(4, b"\xff"), "little") for k in range(0, len(table), 4)]
    body = ", ".join(f"0x{w:08x}u" for w in words)
    return f"var<private> NEIGHBOURS: array<u32, {len(words)}> = array<u32, {len(words)}>({body});"


@helper("res_accum")
def _res_accum() -> str:
    return f"""
// rt[RESONANCE + class * {RES_STRIDE}]: flags; + 1: the positive sum; + {1 + RES_LIMBS}: the negative sum
fn res_accum(class_id: u32, x: f32) {{
    let bits = bitcast<u32>(x);
    let magnitude = bits & 0x7fffffffu;
    let base = RESONANCE + class_id * {RES_STRIDE}u;
    if (magnitude >= 0x7f800000u) {{
        var flag = {RES_FLAG_NAN}u;
        if (magnitude == 0x7f800000u) {{
            flag = select({RES_FLAG_POS_INF}u, {RES_FLAG_NEG_INF}u, (bits >> 31u) != 0u);
        }}
        atomicOr(&rt[base], flag);
        return;
    }}
    if (magnitude == 0u) {{ return; }}
    let e = magnitude >> 23u;
    let m = select(magnitude & 0x7fffffu, (magnitude & 0x7fffffu) | 0x800000u, e != 0u);
    let position = max(e, 1u) - 1u;
    let shift = position % 32u;
    let sum = base + 1u + select(0u, {RES_LIMBS}u, (bits >> 31u) != 0u);
    var limb = position / 32u;
    var add = m << shift;
    var next = select(0u, m >> (32u - shift), shift != 0u);
    loop {{
        let old = atomicAdd(&rt[sum + limb], add);
        let carry = select(0u, 1u, old + add < old);
        limb = limb + 1u;
        add = next + carry;
        next = 0u;
        if (add == 0u || limb >= {RES_LIMBS}u) {{ break; }}
    }}
}}"""


def _class(ctx: LaneContext, path: str) -> tuple[str, str]:
    """(the operand's low word, the condition that its unsigned value is 96 or more)."""
    wt = ctx.read_type(path)
    reg = ctx.read(path)
    if wt.family == "word":
        return reg, f"{reg} >= {atlas.NUM_CLASSES}u"
    return f"{reg}[0]", f"({reg}[1] != 0u || {reg}[0] >= {atlas.NUM_CLASSES}u)"


def _words(ctx: LaneContext, path: str) -> tuple[str, str]:
    """The (low, high) words of an integer register operand read unsigned (a trap record's value)."""
    reg = ctx.read(path)
    return (reg, "0u") if ctx.read_type(path).family == "word" else (f"{reg}[0]", f"{reg}[1]")


def _bounded(ctx: LaneContext, path: str, limit: int) -> tuple[str, str]:
    wt = ctx.read_type(path)
    reg = ctx.read(path)
    if wt.family == "word":
        return reg, f"{reg} >= {limit}u"
    return f"{reg}[0]", f"({reg}[1] != 0u || {reg}[0] >= {limit}u)"


def _checked_class(ctx: LaneContext, path: str) -> str:
    low, invalid = _class(ctx, path)
    ctx.trap(TrapCode.INVALID_CLASS, invalid, operand=path, value=_words(ctx, path))
    return ctx.temp(low, "cls")


@lane_rule("ClsGet")
def _cls_get(ctx: LaneContext, instr) -> None:
    wt = ctx.read_type("src")
    reg = ctx.read("src")
    b = ctx.temp(f"{reg if wt.family == 'word' else reg + '[0]'} & 0xffu", "byte")
    label = (f"48u * ({b} & 1u) + 24u * (({b} >> 1u) & 1u) + 12u * (({b} >> 2u) & 1u) + 6u * (({b} >> 3u) & 1u) "
             f"+ 3u * (({b} >> 4u) & 1u) + ((({b} >> 5u) & 3u) % 3u)")
    ctx.write("dst", f"({label})")


@lane_rule("MIRROR")
def _mirror(ctx: LaneContext, instr) -> None:
    c = _checked_class(ctx, "src")
    ctx.write("dst", f"select({c} - 3u, {c} + 3u, {c} % 6u < 3u)")


@lane_rule("UnityTest")
def _unity_test(ctx: LaneContext, instr) -> None:
    low, invalid = _class(ctx, "src")
    ctx.write("pred", f"(!({invalid}) && ({low} == 1u || {low} == 4u))")


@lane_rule("NbrCount")
def _nbr_count(ctx: LaneContext, instr) -> None:
    c = _checked_class(ctx, "class_id")
    ctx.write("dst", f"select(5u, 6u, {c} % 3u == 1u)")


@lane_rule("NbrGet")
def _nbr_get(ctx: LaneContext, instr) -> None:
    ctx.resources.neighbours = True
    c = _checked_class(ctx, "class_id")
    index, past = _bounded(ctx, "index", atlas.MAX_DEGREE)
    k = ctx.temp(f"{c} * {atlas.MAX_DEGREE}u + min({index}, {atlas.MAX_DEGREE - 1}u)", "nbr")
    entry = f"((NEIGHBOURS[{k} >> 2u] >> (({k} & 3u) * 8u)) & 0xffu)"
    ctx.write("dst", f"select({entry}, {atlas.NO_NEIGHBOUR}u, {past})")


@lane_rule("BoundMap")
def _bound_map(ctx: LaneContext, instr) -> None:
    c = _checked_class(ctx, "class_id")
    page, page_out = _bounded(ctx, "page", atlas.PAGES)
    byte, byte_out = _bounded(ctx, "byte", atlas.BYTES_PER_PAGE)
    page_words, byte_words = _words(ctx, "page"), _words(ctx, "byte")
    on_page = f"({page_out})"
    position = f"select({operand_position(instr, 'byte')}u, {operand_position(instr, 'page')}u, {on_page})"
    ctx.trap(TrapCode.OUT_OF_BOUNDS, f"{page_out} || {byte_out}", position=position,
             value=tuple(f"select({b}, {p}, {on_page})" for p, b in zip(page_words, byte_words)),
             limit=f"select({atlas.BYTES_PER_PAGE}u, {atlas.PAGES}u, {on_page})")
    ctx.write("dst", f"vec2<u32>({c} * {atlas.TOTAL_ELEMENTS}u + {page} * {atlas.BYTES_PER_PAGE}u + {byte}, 0u)")


@lane_rule("ResAccum")
def _res_accum_rule(ctx: LaneContext, instr) -> None:
    ctx.resources.resonance = True
    c = _checked_class(ctx, "class_id")
    ctx.emit(f"if (alive) {{ {ctx.helper('res_accum')}({c}, {ctx.read('value')}); }}")


@lane_rule("PhaseGet")
def _phase_get(ctx: LaneContext, instr) -> None:
    ctx.resources.phase = True
    ctx.write("dst", "phase")


@lane_rule("PhaseAdv")
def _phase_adv(ctx: LaneContext, instr) -> None:
    ctx.resources.phase = True
    ctx.emit(f"phase = (phase + {instr.delta % atlas.PHASE_MODULUS}u) % {atlas.PHASE_MODULUS}u;")


@lane_rule("PhaseWrite")
def _phase_write(ctx: LaneContext, instr) -> None:
    ctx.resources.phase = True
    wt = ctx.read_type("src")
    reg = ctx.read("src")
    m = atlas.PHASE_MODULUS
    if wt.family == "word":
        ctx.emit(f"phase = {reg} % {m}u;")
    else:
        wrap = (1 << 32) % m
        ctx.emit(f"phase = (({reg}[1] % {m}u) * {wrap}u + ({reg}[0] % {m}u)) % {m}u;")
