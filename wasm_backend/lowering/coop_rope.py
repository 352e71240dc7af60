"""RoPE (F32, F64): the cooperative rule and its kernel, SIMD128 over each row's pairs.

The cooperative function checks output, input and freqs over their extents (in operand order: handle, bounds,
alignment; a trap writes nothing), then, token by token (``s < seq_len``):

1. the token's table, in the per-launch scratch: for each pair ``p``, ``theta = (position + s) * freqs[p]``
   computed in f64 (exact for the f32 freqs of any position below 2**29), its cos and sin by the math library's
   f64 routines (Cody-Waite / Payne-Hanek reduction, ~1 ulp), rounded once to the element type. Half-split rows
   keep ``cos[p]`` and ``sin[p]``; interleaved rows ``C[2p] = C[2p+1] = cos[p]``, ``S[2p] = -sin[p]``,
   ``S[2p+1] = sin[p]``;
2. every row of the token (``batch x heads`` of them, ``head_dim`` elements each): half-split, a vector of
   ``x1 = x[p..]`` and one of ``x2 = x[p + half..]`` give ``x1*c - x2*s`` and ``x1*s + x2*c``; interleaved,
   ``y = x*C + swap(x)*S`` with ``swap`` exchanging the two elements of each pair (one ``i8x16.shuffle``), which
   is the same products and sum. Scalar tails finish what is not a whole vector.

Each output element is two products and a sum of f32 (f64) values: within the contract's bound (docs/semantics.md,
Attention kernels). Every element of a row is read before it is written, so the output may be the input (in
place). The scratch holds one token's table: ``2 * head_dim`` elements. F16 and BF16 compute in f32: each item's
rows of the token are converted (exactly) into the scratch, rotated there by the F32 code and rounded once to the
type on the way out.
"""

from __future__ import annotations

from atlas_web.isa.enums import MapOperation
from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .coop_gemm_kernel import ELEMENTS, Element
from .coop_ops import load_scalar, store_scalar
from .math_seam import math_function_for
from .rules import cooperative_rule

__all__ = ["ROPE_TYPES", "rope_scratch"]

I32, F64, V128 = ValType.I32, ValType.F64, ValType.V128
ROPE_TYPES = frozenset({Type.F16, Type.BF16, Type.F32, Type.F64})
_HALVES = (Type.F16, Type.BF16)
#: the byte shuffle exchanging the elements of each pair, by element size
_SWAP = {4: (4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11), 8: (*range(8, 16), *range(8))}


def _compute(ty: Type) -> Type:
    return Type.F64 if ty is Type.F64 else Type.F32


def rope_scratch(instr) -> int:
    """Scratch bytes: one token's table (two arrays of head_dim elements of the compute type), and for F16/BF16
    one token's rows of one item in f32."""
    size = _compute(instr.ty).size_bytes()
    rows = instr.heads * instr.head_dim * 4 if instr.ty in _HALVES else 0
    return max(16, 2 * instr.head_dim * size + rows)


def _table(cc: CoopContext, el: Element, freqs: int, table: int, token: int) -> None:
    """Fill the token's table (see the module docstring) at ``table``: cos/C first, sin/S ``head_dim`` elements
    after. Two pairs per step through the math library's f64x2 routines, a last odd pair through the scalar
    ones."""
    instr, e, m = cc.instr, cc.e, cc.m
    half, size, s = instr.head_dim // 2, el.size, el.scalar
    sin, cos = (math_function_for(op, Type.F64) for op in (MapOperation.Sin, MapOperation.Cos))
    p, end = cc.local(I32), cc.local(I32)
    theta, c, sn = cc.local(F64), cc.local(el.valtype), cc.local(el.valtype)
    angles, cosines, sines_v = cc.local(V128), cc.local(V128), cc.local(V128)
    sines = instr.head_dim * size

    def narrow() -> None:
        if el.scalar == "f32":
            e.op("f32.demote_f64")

    def push_theta() -> None:
        """theta of pair p, in f64: (position + s) * freqs[p]."""
        e.get(token).op("f64.convert_i32_u").f64(float(instr.position)).op("f64.add")   # exact: both < 2**33
        e.get(freqs).get(p).i32(instr.ty.size_bytes()).op("i32.mul").op("i32.add")
        load_scalar(m, e, instr.ty)   # F16/BF16: to f32, exactly
        if el.scalar == "f32":
            e.op("f64.promote_f32")
        e.op("f64.mul")

    def store(k: int) -> None:
        """Store c and sn as pair p + k's entries."""
        if instr.interleaved:   # C[2p] = C[2p+1] = c, S[2p] = -s, S[2p+1] = s
            for lane, sign in ((0, -1), (1, 1)):
                at = 2 * k * size + lane * size
                e.get(table).get(p).i32(2 * size).op("i32.mul").op("i32.add").get(c).op(f"{s}.store", at)
                e.get(table).get(p).i32(2 * size).op("i32.mul").op("i32.add").get(sn)
                if sign < 0:
                    e.op(f"{s}.neg")
                e.op(f"{s}.store", sines + at)
        else:
            e.get(table).get(p).i32(size).op("i32.mul").op("i32.add").get(c).op(f"{s}.store", k * size)
            e.get(table).get(p).i32(size).op("i32.mul").op("i32.add").get(sn).op(f"{s}.store", sines + k * size)

    def two_pairs() -> None:
        push_theta()
        e.op("f64x2.splat")
        e.get(p).i32(1).op("i32.add").set(p)     # pair p + 1's angle, then p back
        push_theta()
        e.op("f64x2.replace_lane", 1).set(angles)
        e.get(p).i32(1).op("i32.sub").set(p)
        e.get(angles)
        cos.vector(m, e, Type.F64)
        e.set(cosines)
        e.get(angles)
        sin.vector(m, e, Type.F64)
        e.set(sines_v)
        for k in (0, 1):
            e.get(cosines).op("f64x2.extract_lane", k)
            narrow()
            e.set(c)
            e.get(sines_v).op("f64x2.extract_lane", k)
            narrow()
            e.set(sn)
            store(k)

    def one_pair() -> None:
        push_theta()
        e.set(theta)
        e.get(theta)
        cos.scalar(m, e, Type.F64)
        narrow()
        e.set(c)
        e.get(theta)
        sin.scalar(m, e, Type.F64)
        narrow()
        e.set(sn)
        store(0)

    e.i32(0).set(p)
    e.i32(half & ~1).set(end)
    e.while_below(p, end, 2, two_pairs, labels=("pair_vectors_done", "pair_vectors"))
    e.i32(half).set(end)
    e.while_below(p, end, 1, one_pair, labels=("pairs_done", "pairs"))


def _rotate_rows(cc: CoopContext, el: Element, src: int, dst: int, table: int, rows: int) -> None:
    """Rotate ``rows`` consecutive rows of head_dim elements from ``src`` into ``dst`` with the table."""
    instr, e = cc.instr, cc.e
    dim, size, p_, s = instr.head_dim, el.size, el.prefix, el.scalar
    half, lanes, sines = dim // 2, el.lanes, dim * size
    row, end, i, limit = (cc.local(I32) for _ in range(4))
    x, y, c, sn = (cc.local(V128) for _ in range(4))
    a, b = cc.local(el.valtype), cc.local(el.valtype)

    def at(base: int, offset_elements: int = 0) -> None:
        """Push ``base + row*dim*size + (i + offset_elements)*size``."""
        e.get(base).get(row).i32(dim * size).op("i32.mul").op("i32.add")
        e.get(i).i32(size).op("i32.mul").op("i32.add")
        if offset_elements:
            e.i32(offset_elements * size).op("i32.add")

    def table_at() -> None:
        e.get(table).get(i).i32(size).op("i32.mul").op("i32.add")

    def half_vector() -> None:
        at(src)
        e.op("v128.load", 0).set(x)
        at(src, half)
        e.op("v128.load", 0).set(y)
        table_at()
        e.op("v128.load", 0).set(c)
        table_at()
        e.op("v128.load", sines).set(sn)
        at(dst)
        e.get(x).get(c).op(f"{p_}.mul").get(y).get(sn).op(f"{p_}.mul").op(f"{p_}.sub").op("v128.store", 0)
        at(dst, half)
        e.get(x).get(sn).op(f"{p_}.mul").get(y).get(c).op(f"{p_}.mul").op(f"{p_}.add").op("v128.store", 0)

    def half_scalar() -> None:
        at(src)
        e.op(f"{s}.load", 0).set(a)
        at(src, half)
        e.op(f"{s}.load", 0).set(b)
        at(dst)
        e.get(a)
        table_at()
        e.op(f"{s}.load", 0).op(f"{s}.mul").get(b)
        table_at()
        e.op(f"{s}.load", sines).op(f"{s}.mul").op(f"{s}.sub").op(f"{s}.store", 0)
        at(dst, half)
        e.get(a)
        table_at()
        e.op(f"{s}.load", sines).op(f"{s}.mul").get(b)
        table_at()
        e.op(f"{s}.load", 0).op(f"{s}.mul").op(f"{s}.add").op(f"{s}.store", 0)

    def interleaved_vector() -> None:
        at(src)
        e.op("v128.load", 0).set(x)
        at(dst)
        e.get(x)
        table_at()
        e.op("v128.load", 0).op(f"{p_}.mul")
        e.get(x).get(x).op("i8x16.shuffle", _SWAP[size])
        table_at()
        e.op("v128.load", sines).op(f"{p_}.mul").op(f"{p_}.add").op("v128.store", 0)

    def interleaved_scalar() -> None:   # one pair: y0 = x0*C + x1*S, y1 = x1*C' + x0*S'
        at(src)
        e.op(f"{s}.load", 0).set(a)
        at(src, 1)
        e.op(f"{s}.load", 0).set(b)
        for first, second, k in ((a, b, 0), (b, a, 1)):
            at(dst, k)
            e.get(first)
            table_at()
            e.op(f"{s}.load", k * size).op(f"{s}.mul").get(second)
            table_at()
            e.op(f"{s}.load", sines + k * size).op(f"{s}.mul").op(f"{s}.add").op(f"{s}.store", 0)

    span = dim if instr.interleaved else half
    vector, scalar, step = (interleaved_vector, interleaved_scalar, 2) if instr.interleaved else \
        (half_vector, half_scalar, 1)

    def one_row() -> None:
        e.i32(0).set(i)
        e.i32(span - span % lanes).set(limit)
        e.while_below(i, limit, lanes, vector, labels=("vectors_done", "vectors"))
        e.i32(span).set(limit)
        e.while_below(i, limit, step, scalar, labels=("tail_done", "tail"))

    e.i32(0).set(row)
    e.i32(rows).set(end)
    e.while_below(row, end, 1, one_row, labels=("rows_done", "rows"))


def _convert(cc: CoopContext, src: int, dst: int, count: int, *, into_f32: bool) -> None:
    """Copy ``count`` elements from ``src`` to ``dst``: F16/BF16 to f32 (exact), or f32 to the type (rounded
    once)."""
    e, m, ty = cc.e, cc.m, cc.instr.ty
    i, end, value = cc.local(I32), cc.local(I32), cc.local(ValType.F32)
    narrow, wide = (src, dst) if into_f32 else (dst, src)

    def one() -> None:
        at = {narrow: lambda: e.get(narrow).get(i).i32(1).op("i32.shl").op("i32.add"),
              wide: lambda: e.get(wide).get(i).i32(2).op("i32.shl").op("i32.add")}
        if into_f32:
            at[dst]()
            at[src]()
            load_scalar(m, e, ty)
            e.op("f32.store", 0)
        else:
            at[src]()
            e.op("f32.load", 0).set(value)
            at[dst]()
            store_scalar(m, e, ty, value)

    e.i32(0).set(i)
    e.i32(count).set(end)
    e.while_below(i, end, 1, one, labels=(f"convert_{into_f32}_done", f"convert_{into_f32}"))


@cooperative_rule("RoPE", ROPE_TYPES, scratch=rope_scratch)
def build_rope(cc: CoopContext) -> None:
    instr, e = cc.instr, cc.e
    checked = {array.name: cc.array(array.name, array.ty, array.elements) for array in array_operands(instr)}
    rows = instr.batch * instr.heads
    if rows * instr.seq_len * instr.head_dim == 0:
        e.i32(COOP_OK)
        return
    el = ELEMENTS[_compute(instr.ty)]
    table, token, end, item, items = (cc.local(I32) for _ in range(5))
    src, dst, rows_f32 = cc.local(I32), cc.local(I32), cc.local(I32)
    cc.launch_base()
    e.i32(cc.launch.coop_scratch).op("i32.add").tee(table).i32(2 * instr.head_dim * el.size).op("i32.add")
    e.set(rows_f32)
    count = instr.heads * instr.head_dim
    row_bytes = count * instr.ty.size_bytes()   # one token of one item: heads rows

    def one_token() -> None:
        _table(cc, el, checked["freqs"], table, token)
        e.i32(0).set(item)

        def one_item() -> None:   # item b's token s: heads rows at ((b*seq_len + s) * heads) * head_dim
            for base, into in ((checked["input"], src), (checked["output"], dst)):
                e.get(base).get(item).i32(instr.seq_len).op("i32.mul").get(token).op("i32.add")
                e.i32(row_bytes).op("i32.mul").op("i32.add").set(into)
            if instr.ty in _HALVES:
                _convert(cc, src, rows_f32, count, into_f32=True)
                _rotate_rows(cc, el, rows_f32, rows_f32, table, instr.heads)
                _convert(cc, rows_f32, dst, count, into_f32=False)
            else:
                _rotate_rows(cc, el, src, dst, table, instr.heads)

        e.while_below(item, items, 1, one_item, labels=("items_done", "items"))

    e.i32(instr.batch).set(items)
    e.i32(0).set(token)
    e.i32(instr.seq_len).set(end)
    e.while_below(token, end, 1, one_token, labels=("tokens_done", "tokens"))
    e.i32(COOP_OK)
