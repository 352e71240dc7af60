"""The WebAssembly functions of QuantizedGEMM: int8 panels packed as i16 pairs, ``i32x4.dot_i16x8_s``, i32 sums.

acc[i, j] = sum_p op(A)[i, p] * op(B)[p, j] for i8 A and B, summed in i32 (wrapping: the order of the
additions does not change the sum modulo 2**32, so any blocking gives the reference's bits), then C as
docs/semantics.md says: F32 C = f32(acc) * scale, I8 C = sat8(round_half_even(f32(acc) * multiplier)) with
``scale = f32(a_scale * b_scale)`` and ``multiplier = f32(scale / c_scale)`` computed once by f32
instructions (wasm's: IEEE, nearest even) in the driver. The vector steps are exact: ``f32x4.convert_i32x4_s``
rounds to nearest even, ``f32x4.mul`` rounds once, ``f32x4.nearest`` rounds half to even,
``i32x4.trunc_sat_f32x4_s`` gives 0 for NaN and saturates infinities, and the two saturating narrows
(``i16x8.narrow_i32x4_s``, ``i8x16.narrow_i16x8_s``) clamp to -128..127.

Layout (GotoBLAS order, as ``coop_gemm_kernel``): the depth is taken in PAIRS. A block of B is packed as
slivers of ``nr`` columns: for each depth pair (p, p + 1), ``nr`` words each holding the i16 values
``B[p, j]``, ``B[p + 1, j]`` (sign-extended from i8; the second 0 past the depth, columns past the matrix
0); A as slivers of ``mr`` rows of the same pair words. One ``i32x4.dot_i16x8_s`` of a broadcast A word
and a B vector is 8 multiply-adds into 4 columns (products of two i8 fit i16 sums exactly: no
saturation); ``i32x4.add`` accumulates. The register tile is ``mr`` x ``nr`` of i32x4 accumulators.

The relaxed int8 dot (``i32x4.relaxed_dot_i8x16_i7x16_add_s``) is not used: its second operand must be
7-bit (an engine may read a negative value of it as unsigned), so it is not exact for i8 operands.

The depth is one block when k <= ``kc`` (B's panel packed once per column block, the sums requantized
straight from the registers); a longer depth runs blocks of ``kc`` (even) with the i32 partial sums of
the ``mc`` x ``nc`` block kept in the scratch between them (loop order: columns, rows, depth). Tiles cut
by the edge of C are written to a tile buffer and their valid corner copied out (``memory.copy``). The
driver ``name(a, b, c, scratch, lo, hi)`` computes rows ``lo .. hi`` (global-free: threads run disjoint
row ranges, each with scratch of its own); every read lies inside A and B (packing reads valid rows and
columns only) or the scratch.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_gemm_kernel import GemmShape, cached_function, min_into

__all__ = ["QTiling", "QTILING", "QShape", "qgemm_scratch_bytes", "build_qgemm_driver"]

I32, F32, V128 = ValType.I32, ValType.F32, ValType.V128
#: bytes of one packed pair word (two i16)
_WORD = 4


@dataclass(frozen=True)
class QTiling:
    """Register tile ``mr`` x ``nr`` (nr a multiple of 8), cache blocks ``mc`` (multiple of mr) x ``kc`` (even)
    x ``nc`` (multiple of nr)."""

    mr: int = 4
    nr: int = 16
    mc: int = 64
    kc: int = 1024
    nc: int = 256
    #: A's pair words broadcast by ``v128.load32_splat`` (else one v128 load per 4 rows and lane shuffles)
    splat: bool = False

    def tag(self) -> str:
        return f"{self.mr}x{self.nr}{'s' if self.splat else ''}"


#: measured in benchmarks/gemm_quantized.py (see there)
QTILING = QTiling()


@dataclass(frozen=True)
class QShape(GemmShape):
    """One QuantizedGEMM's compile-time shape: GemmShape's fields (``ty`` is C's type, I8 or F32; leading
    dimensions resolved; alpha and beta unused) and the three scales."""

    a_scale: float = 1.0
    b_scale: float = 1.0
    c_scale: float = 1.0

    @property
    def c_size(self) -> int:
        return self.ty.size_bytes()


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _depth_block(shape: QShape, t: QTiling) -> int:
    """The depth of one block (even, at least 2)."""
    return max(2, min(t.kc, _round_up(shape.k, 2)))


def _areas(shape: QShape, t: QTiling) -> tuple[int, int, int, int]:
    """Bytes of (packed B block, packed A block, i32 partial sums (0 for one depth block), tile buffer)."""
    pairs = _depth_block(shape, t) // 2
    nc = _round_up(max(1, min(t.nc, shape.n)), t.nr)
    mc = _round_up(max(1, min(t.mc, shape.m)), t.mr)
    partial = mc * nc * 4 if shape.k > t.kc else 0
    # A: 16 spare bytes, the micro-kernel's A load reads whole v128s
    return (_round_up(pairs * nc * _WORD, 16), _round_up(pairs * mc * _WORD, 16) + 16, partial,
            _round_up(t.mr * t.nr * shape.c_size, 16))


def qgemm_scratch_bytes(shape: QShape, tiling: QTiling | None = None) -> int:
    """Scratch bytes one driver call needs (16-byte multiple; ``tiling`` None: QTILING)."""
    return sum(_areas(shape, tiling or QTILING))


# ---- micro-kernel -------------------------------------------------------------------------------------------
#: the micro-kernel's mode bits: the sums start at zero (else from the partial buffer); the block is the last
#: of the depth (the sums are requantized to the output, else stored to the partial buffer)
FIRST, LAST = 1, 2


def _micro(m, t: QTiling, ty: Type) -> int:
    """``qgemm_micro_<tag>_<c>(pa, pb, pairs, part, part_ld, out, out_ld, mode, multiplier)``: one mr x nr tile
    from packed slivers ``pa`` and ``pb`` over ``pairs`` depth pairs."""

    def build(fb, e) -> None:
        pa, pb, pairs, part, part_ld, out, out_ld, mode, mult = range(9)
        nv = t.nr // 4
        acc = [[fb.add_local(V128) for _ in range(nv)] for _ in range(t.mr)]
        bv = [fb.add_local(V128) for _ in range(nv)]
        avec, av, vm = fb.add_local(V128), fb.add_local(V128), fb.add_local(V128)
        turns, row = fb.add_local(I32), fb.add_local(I32)
        a_step, b_step = t.mr * _WORD, t.nr * _WORD

        def over_rows(body) -> None:
            """body(i, j, row) for each accumulator; ``row`` walks the partial buffer's rows."""
            e.get(part).set(row)
            for i in range(t.mr):
                if i:
                    e.get(row).get(part_ld).op("i32.add").set(row)
                for j in range(nv):
                    body(i, j)

        e.get(mode).i32(FIRST).op("i32.and").op("i32.eqz")
        with e.if_():   # go on from the partial sums of the earlier depth blocks
            over_rows(lambda i, j: e.get(row).op("v128.load", 16 * j).set(acc[i][j]))
        e.get(pairs).tee(turns)
        with e.if_():
            with e.loop("pairs"):
                for j in range(nv):
                    e.get(pb).op("v128.load", 16 * j).set(bv[j])
                for i in range(t.mr):
                    if t.splat:
                        e.get(pa).op("v128.load32_splat", i * _WORD).set(av)
                    else:
                        if i % 4 == 0:
                            e.get(pa).op("v128.load", i * _WORD).set(avec)
                        lane = [(i % 4) * 4 + b for b in range(4)] * 4
                        e.get(avec).get(avec).op("i8x16.shuffle", bytes(lane)).set(av)
                    for j in range(nv):
                        e.get(acc[i][j]).get(av).get(bv[j]).op("i32x4.dot_i16x8_s").op("i32x4.add").set(acc[i][j])
                e.get(pa).i32(a_step).op("i32.add").set(pa)
                e.get(pb).i32(b_step).op("i32.add").set(pb)
                e.get(turns).i32(1).op("i32.sub").tee(turns).br_if("pairs")
        e.get(mode).i32(LAST).op("i32.and").op("i32.eqz")
        with e.if_():
            over_rows(lambda i, j: e.get(row).get(acc[i][j]).op("v128.store", 16 * j))
            e.op("return")
        e.get(mult).op("f32x4.splat").set(vm)
        for i in range(t.mr):
            if i:
                e.get(out).get(out_ld).op("i32.add").set(out)
            _requantize_row(e, ty, acc[i], vm, out)

    return cached_function(m, f"qgemm_micro_{t.tag()}_{ty.name.lower()}", (I32,) * 8 + (F32,), build)


def _requantize_row(e, ty: Type, row: list[int], vm: int, out: int) -> None:
    """Store one row of accumulators at ``out``: F32 f32(acc) * m; I8 the saturated nearest-even integers."""
    if ty is Type.F32:
        for j, value in enumerate(row):
            e.get(out).get(value).op("f32x4.convert_i32x4_s").get(vm).op("f32x4.mul").op("v128.store", 16 * j)
        return

    def narrowed(values: list[int]) -> None:   # 2 vectors of i32 -> 8 saturated i16 on the stack
        for value in values:
            e.get(value).op("f32x4.convert_i32x4_s").get(vm).op("f32x4.mul").op("f32x4.nearest")
            e.op("i32x4.trunc_sat_f32x4_s")
        e.op("i16x8.narrow_i32x4_s")

    for q in range(0, len(row), 4):   # 4 vectors of i32 -> 16 bytes; 2 -> 8
        e.get(out)
        narrowed(row[q:q + 2])
        if q + 4 <= len(row):
            narrowed(row[q + 2:q + 4])
            e.op("i8x16.narrow_i16x8_s").op("v128.store", 4 * q)
        else:
            e.op("v128.const", bytes(16)).op("i8x16.narrow_i16x8_s").op("i64x2.extract_lane", 0)
            e.op("i64.store", 4 * q)


# ---- macro-kernel --------------------------------------------------------------------------------------------
def _macro(m, t: QTiling, ty: Type) -> int:
    """``qgemm_macro_<tag>_<c>(pa, pb, pairs, part, part_ld, c, ldc, mb, nb, mode, multiplier, tile)``: the
    mb x nb block from the packed blocks, tile by tile (edge tiles of the last depth block through ``tile``)."""
    micro = _micro(m, t, ty)
    size = ty.size_bytes()

    def build(fb, e) -> None:
        pa, pb, pairs, part, part_ld, c, ldc, mb, nb, mode, mult, tile = range(12)
        ir, jr, rows, cols, pb_t, c_t, part_t, r = (fb.add_local(I32) for _ in range(8))
        tile_ld = t.nr * size
        e.i32(0).set(jr)

        def tile_body() -> None:
            min_into(e, rows, lambda: e.i32(t.mr), lambda: e.get(mb).get(ir).op("i32.sub"))
            e.get(c).get(ir).get(ldc).op("i32.mul").op("i32.add").get(jr).i32(size).op("i32.mul").op("i32.add")
            e.set(c_t)
            e.get(part).get(ir).get(part_ld).op("i32.mul").op("i32.add").get(jr).i32(4).op("i32.mul")
            e.op("i32.add").set(part_t)
            # a whole tile, or a block that is not the last of the depth (the partial buffer is padded)
            e.get(rows).i32(t.mr).op("i32.eq").get(cols).i32(t.nr).op("i32.eq").op("i32.and")
            e.get(mode).i32(LAST).op("i32.and").op("i32.eqz").op("i32.or")
            with e.if_():
                _call_micro(e, micro, pa, ir, pairs, pb_t, part_t, part_ld, c_t, ldc, mode, mult)
                e.else_()
                _call_micro(e, micro, pa, ir, pairs, pb_t, part_t, part_ld, tile, None, mode, mult, tile_ld)
                e.i32(0).set(r)

                def copy_row() -> None:
                    e.get(c_t).get(tile).get(cols).i32(size).op("i32.mul").op("memory.copy", 0, 0)
                    e.get(c_t).get(ldc).op("i32.add").set(c_t)
                    e.get(tile).i32(tile_ld).op("i32.add").set(tile)

                e.while_below(r, rows, 1, copy_row, labels=("copied", "copy"))
                e.get(tile).get(rows).i32(tile_ld).op("i32.mul").op("i32.sub").set(tile)

        def column_body() -> None:
            min_into(e, cols, lambda: e.i32(t.nr), lambda: e.get(nb).get(jr).op("i32.sub"))
            e.get(pb).get(jr).get(pairs).op("i32.mul").i32(_WORD).op("i32.mul").op("i32.add").set(pb_t)
            e.i32(0).set(ir)
            e.while_below(ir, mb, t.mr, tile_body, labels=("rows_done", "rows"))

        e.while_below(jr, nb, t.nr, column_body, labels=("cols_done", "cols"))

    params = (I32,) * 10 + (F32, I32)
    return cached_function(m, f"qgemm_macro_{t.tag()}_{ty.name.lower()}", params, build)


def _call_micro(e, micro: int, pa, ir, pairs, pb_t, part_t, part_ld, out, out_ld, mode, mult,
                out_ld_const: int | None = None) -> None:
    e.get(pa).get(ir).get(pairs).op("i32.mul").i32(_WORD).op("i32.mul").op("i32.add")
    e.get(pb_t).get(pairs).get(part_t).get(part_ld).get(out)
    if out_ld is None:
        e.i32(out_ld_const)
    else:
        e.get(out_ld)
    e.get(mode).get(mult).call(micro)


# ---- packing -------------------------------------------------------------------------------------------------
def _packer(m, name: str, width: int, rs: int, cs: int) -> int:
    """``name(src, dst, rows, depth)``: pack a rows x depth block of i8 (element (r, p) at ``src + r*rs +
    p*cs``, byte strides) as slivers of ``width`` rows: for each depth pair, ``width`` words of two i16 (the
    second 0 past the depth; rows past ``rows`` 0). Contiguous rows (``rs`` 1) with whole slivers of 16 and
    whole pairs go through v128 (interleave two depth rows, sign-extend)."""

    def build(fb, e) -> None:
        src, dst, rows, depth = range(4)
        r0, valid, p, q, whole = (fb.add_local(I32) for _ in range(5))
        line = width * _WORD
        e.get(depth).i32(-2).op("i32.and").set(whole)   # depth steps in whole pairs
        e.i32(0).set(r0)

        def word(r: int, second: bool) -> None:
            """Push the pair word of row r at q (``second``: the depth's second element exists)."""
            e.get(q).op("i32.load8_s", r * rs).i32(0xFFFF).op("i32.and")
            if second:
                e.get(q).op("i32.load8_s", r * rs + cs).i32(16).op("i32.shl").op("i32.or")

        def lines(body, count_push, labels) -> None:
            """For each pair below ``count_push()`` depth steps from p: body(), then advance q and dst."""
            end = fb.add_local(I32)
            count_push()
            e.set(end)

            def step() -> None:
                body()
                e.get(q).i32(2 * cs).op("i32.add").set(q)
                e.get(dst).i32(line).op("i32.add").set(dst)

            e.while_below(p, end, 2, step, labels=labels)

        def whole_line(second: bool) -> None:
            if rs == 1 and width % 16 == 0 and second:
                for g in range(width // 16):
                    e.get(q).op("v128.load", 16 * g).get(q).op("v128.load", 16 * g + cs)
                    _interleave_store(e, fb, dst, 64 * g)
                return
            for r in range(width):
                e.get(dst)
                word(r, second)
                e.op("i32.store", r * _WORD)

        def partial_line(second: bool) -> None:
            for r in range(width):
                e.get(dst).get(valid).i32(r).op("i32.gt_u")
                with e.if_(blocktype=I32):
                    word(r, second)
                    e.else_()
                    e.i32(0)
                e.op("i32.store", r * _WORD)

        def sliver(line_body) -> None:
            e.get(src).get(r0).i32(rs).op("i32.mul").op("i32.add").set(q)
            e.i32(0).set(p)
            lines(lambda: line_body(True), lambda: e.get(whole), ("pairs_done", "pairs"))
            lines(lambda: line_body(False), lambda: e.get(depth), ("odd_done", "odd"))   # the last, odd step

        def slivers() -> None:
            min_into(e, valid, lambda: e.i32(width), lambda: e.get(rows).get(r0).op("i32.sub"))
            e.get(valid).i32(width).op("i32.eq")
            with e.if_():
                sliver(whole_line)
                e.else_()
                sliver(partial_line)

        e.while_below(r0, rows, width, slivers, labels=("slivers_done", "slivers"))

    return cached_function(m, name, (I32,) * 4, build)


#: i8x16.shuffle lanes interleaving the low (high) 8 bytes of two vectors: x0 y0 x1 y1 ...
_LOW = bytes(b for i in range(8) for b in (i, 16 + i))
_HIGH = bytes(b for i in range(8, 16) for b in (i, 16 + i))


def _interleave_store(e, fb, dst: int, offset: int) -> None:
    """Two i8x16 on the stack (depth rows p and p + 1 of 16 columns) -> 16 pair words at dst + offset."""
    x, y = fb.add_local(V128), fb.add_local(V128)
    e.set(y).set(x)
    for k, lanes in enumerate((_LOW, _HIGH)):
        pairs = fb.add_local(V128)
        e.get(x).get(y).op("i8x16.shuffle", lanes).set(pairs)
        e.get(dst).get(pairs).op("i16x8.extend_low_i8x16_s").op("v128.store", offset + 32 * k)
        e.get(dst).get(pairs).op("i16x8.extend_high_i8x16_s").op("v128.store", offset + 32 * k + 16)


# ---- driver --------------------------------------------------------------------------------------------------
def build_qgemm_driver(m, name: str, shape: QShape, tiling: QTiling | None = None, *, export: bool = False) -> int:
    """Define ``name(a, b, c, scratch, lo, hi)``: QuantizedGEMM ``shape`` over rows ``lo .. hi`` of C (byte
    addresses of A's, B's and C's first element and of ``qgemm_scratch_bytes(shape, tiling)`` bytes of 16-byte
    aligned scratch; ``tiling`` None: QTILING). Returns its function index."""
    t = tiling or QTILING
    rs_a, cs_a = (1, shape.lda) if shape.trans_a else (shape.lda, 1)
    rs_b, cs_b = (shape.ldb, 1) if shape.trans_b else (1, shape.ldb)
    pack_a = _packer(m, f"{name}_pack_a", t.mr, rs_a, cs_a)
    pack_b = _packer(m, f"{name}_pack_b", t.nr, rs_b, cs_b)
    macro = _macro(m, t, shape.ty)
    pb_bytes, pa_bytes, part_bytes, _ = _areas(shape, t)
    kc = _depth_block(shape, t)
    blocks = max(1, -(-shape.k // kc))
    size = shape.c_size
    ldc_bytes = shape.ldc * size
    part_ld = _round_up(max(1, min(t.nc, shape.n)), t.nr) * 4

    def build(fb, e) -> None:
        a, b, c, scratch, lo, hi = range(6)
        jc, ic, pc, nb, mb, kb, mode = (fb.add_local(I32) for _ in range(7))
        multiplier = fb.add_local(F32)
        # the scale (F32 C) or the multiplier (I8 C): f32 steps, each rounded to nearest even
        e.f32(shape.a_scale).f32(shape.b_scale).op("f32.mul")
        if shape.ty is Type.I8:
            e.f32(shape.c_scale).op("f32.div")
        e.set(multiplier)

        def pack_b_block() -> None:
            e.get(b).get(jc).i32(rs_b).op("i32.mul").op("i32.add").get(pc).i32(cs_b).op("i32.mul").op("i32.add")
            e.get(scratch).get(nb).get(kb).call(pack_b)

        def depth_block() -> None:
            min_into(e, kb, lambda: e.i32(kc), lambda: e.i32(shape.k).get(pc).op("i32.sub"))
            if blocks > 1:
                pack_b_block()
            e.get(a).get(ic).i32(rs_a).op("i32.mul").op("i32.add").get(pc).i32(cs_a).op("i32.mul").op("i32.add")
            e.get(scratch).i32(pb_bytes).op("i32.add").get(mb).get(kb).call(pack_a)
            # mode: FIRST on the first block, LAST on the last
            e.get(pc).op("i32.eqz").get(pc).i32(kc).op("i32.add").i32(shape.k).op("i32.ge_u").i32(1).op("i32.shl")
            e.op("i32.or").set(mode)
            e.get(scratch).i32(pb_bytes).op("i32.add").get(scratch).get(kb).i32(1).op("i32.add").i32(1)
            e.op("i32.shr_u")                                                   # pairs
            e.get(scratch).i32(pb_bytes + pa_bytes).op("i32.add").i32(part_ld)
            e.get(c).get(ic).i32(ldc_bytes).op("i32.mul").op("i32.add").get(jc).i32(size).op("i32.mul").op("i32.add")
            e.i32(ldc_bytes).get(mb).get(nb).get(mode).get(multiplier)
            e.get(scratch).i32(pb_bytes + pa_bytes + part_bytes).op("i32.add").call(macro)

        def row_block() -> None:
            min_into(e, mb, lambda: e.i32(t.mc), lambda: e.get(hi).get(ic).op("i32.sub"))
            e.i32(0).set(pc)
            with e.loop("depth"):   # at least once: k == 0 still writes C from zero sums
                depth_block()
                e.get(pc).i32(kc).op("i32.add").tee(pc).i32(shape.k).op("i32.lt_u").br_if("depth")

        def column_block() -> None:
            min_into(e, nb, lambda: e.i32(t.nc), lambda: e.i32(shape.n).get(jc).op("i32.sub"))
            if blocks == 1:
                e.i32(0).set(pc)
                min_into(e, kb, lambda: e.i32(kc), lambda: e.i32(shape.k))
                pack_b_block()
            e.get(lo).set(ic)
            e.while_below(ic, hi, t.mc, row_block, labels=("rows_done", "rows"))

        n_end = fb.add_local(I32)
        e.i32(shape.n).set(n_end)
        e.i32(0).set(jc)
        e.while_below(jc, n_end, t.nc, column_block, labels=("columns_done", "columns"))

    return cached_function(m, name, (I32,) * 6, build, export=export)
