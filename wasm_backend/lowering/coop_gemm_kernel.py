"""The WebAssembly functions of a blocked GEMM: packing, a register-blocked v128 micro-kernel, cache blocking.

C[i, j] = alpha * sum_p A[i, p] * B[p, j] + beta * C[i, j] for i < m, j < n (row-major, leading
dimensions in elements, A and B possibly transposed), in the loop order of GotoBLAS/BLIS:

* for each block of ``nc`` columns and each block of ``kc`` depth, B's block is PACKED into scratch
  memory as slivers of ``nr`` columns (for each p, ``nr`` consecutive values; the last sliver padded with
  zeros), so the micro-kernel reads it with plain ``v128.load``\\ s whatever ``trans_b`` and ``ldb`` were;
* for each block of ``mc`` rows, A's block is packed as slivers of ``mr`` rows (for each p, ``mr``
  consecutive values, zero-padded), read with ``v128.load`` and broadcast lane by lane (``i8x16.shuffle``);
* the macro-kernel walks the packed blocks tile by tile; the micro-kernel keeps an ``mr`` x ``nr`` tile of
  C in ``mr * nr / lanes`` v128 locals over the ``kc`` products (``relaxed_madd``, or ``mul`` then ``add``),
  then writes ``alpha * acc (+ beta * C)``. Tiles cut by the edge of C run the same vector code on a
  tile buffer (C's valid part copied in when read, and back out), so tails cost no scalar loop over k.

The first depth block writes ``alpha * acc + beta * C`` (C not read when beta is 0: a NaN there does not
propagate); the later ones ``alpha * acc + 1 * C``. So each element is a sum of products in some order,
one or two roundings per product, within the contract's bound. ``k == 0`` runs one empty depth block
(C = alpha * 0 + beta * C). Everything any function reads lies inside the operands' extents (packing reads
valid rows and columns only) or in the scratch memory.

Functions, all small (V8's baseline compiler must take them: no unrolling beyond one k step times
``unroll``): per module and variant, ``gemm_micro_*``, ``gemm_macro_*`` and ``gemm_tile_copy_*``; per
instruction, its two packers (strides baked in as memory-argument offsets) and its driver
``name(a, b, c, scratch, lo, hi)`` over rows ``lo .. hi`` (global-free: threads may run it on disjoint row
ranges, each with its own scratch). ``scratch_bytes`` sizes the scratch from the shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_ops import load_scalar

__all__ = ["Element", "ELEMENTS", "Tiling", "DEFAULT_TILING", "TILINGS", "GemmShape", "scratch_bytes",
           "build_gemm_driver", "row_step", "round16"]

I32, V128 = ValType.I32, ValType.V128


@dataclass(frozen=True)
class Element:
    """The wasm spelling of one element type: scalar type, lanes per v128, instruction names."""

    valtype: ValType
    size: int
    prefix: str  # f32x4 / f64x2
    scalar: str  # f32 / f64

    @property
    def lanes(self) -> int:
        return 16 // self.size


ELEMENTS = {
    Type.F32: Element(ValType.F32, 4, "f32x4", "f32"),
    Type.F64: Element(ValType.F64, 8, "f64x2", "f64"),
}


@dataclass(frozen=True)
class Tiling:
    """Register tile ``mr`` x ``nr`` (nr a multiple of the lanes), cache blocks ``mc`` (a multiple of mr) x
    ``kc`` x ``nc`` (a multiple of nr), k steps per loop turn ``unroll`` (a power of two), and whether the
    micro-kernel uses ``relaxed_madd`` (fused where the engine has FMA) or ``mul`` then ``add``."""

    mr: int = 4
    nr: int = 16
    kc: int = 256
    mc: int = 64
    nc: int = 2048
    unroll: int = 2
    relaxed: bool = True

    def tag(self, el: Element) -> str:
        return f"{el.scalar}_{self.mr}x{self.nr}_k{self.kc}_u{self.unroll}_{'r' if self.relaxed else 'p'}"


#: measured (benchmarks/gemm.py, f32 512^3, best of 10, interleaved, loaded 2-core AMD EPYC at 2.45 GHz): in V8
#: (node 20) 4x16 relaxed 28 GFLOP/s, 8x8 26, 8x4 25, 4x12 22, 6x8 21, 4x8 19, 4x16 plain mul+add 18; unroll 2
#: over 1 or 4: 28 vs 24; kc 128..384 and mc 32..128 within noise. wasmtime (Cranelift) copies registers
#: around its destructive FMA form and gets 13-15 for every tile in the full GEMM (24 in the micro-kernel alone)
DEFAULT_TILING = Tiling()
#: the tiling of each element type: F64 with half the columns (f64x2: the same 16 accumulators)
TILINGS = {Type.F32: DEFAULT_TILING, Type.F64: Tiling(nr=8)}


@dataclass(frozen=True)
class GemmShape:
    """One GEMM's compile-time shape: element type (of C and of the arithmetic), sizes, transposes, leading
    dimensions (elements, already resolved from 0 = packed), alpha and beta; ``input_ty``: A's and B's element
    type when it differs (F16/BF16 inputs of an F32 GEMM: converted, exactly, while packing)."""

    ty: Type
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    lda: int
    ldb: int
    ldc: int
    alpha: float
    beta: float
    input_ty: Type | None = None

    @property
    def input_size(self) -> int:
        """Bytes of one element of A and B."""
        return (self.input_ty or self.ty).size_bytes()


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def round16(value: int) -> int:
    """``value`` (bytes) rounded up to a multiple of 16 (the alignment of every cooperative kernel's scratch
    regions)."""
    return _round_up(value, 16)


def scratch_bytes(shape: GemmShape, tiling: Tiling | None = None) -> int:
    """Bytes of scratch one driver call needs (packed B block, packed A block, one tile), 16-byte multiple
    (``tiling`` None: the type's, ``TILINGS``)."""
    tiling = tiling or TILINGS[shape.ty]
    size = ELEMENTS[shape.ty].size
    depth = max(1, min(tiling.kc, shape.k))
    pb = depth * _round_up(max(1, min(tiling.nc, shape.n)), tiling.nr) * size
    return _round_up(pb, 16) + _packed_a_bytes(shape, tiling) + _round_up(tiling.mr * tiling.nr * size, 16)


def _packed_a_bytes(shape: GemmShape, tiling: Tiling) -> int:
    """The packed A block's bytes, with 16 spare bytes (the micro-kernel's last A load may read past it)."""
    depth = max(1, min(tiling.kc, shape.k))
    return _round_up(depth * _round_up(max(1, min(tiling.mc, shape.m)), tiling.mr) * ELEMENTS[shape.ty].size, 16) + 16


def row_step(tiling: Tiling) -> int:
    """Row ranges given to threads start at multiples of this (whole register tiles)."""
    return tiling.mr


def cached_function(m, name: str, params: tuple, build, *, export: bool = False) -> int:
    """The index of function ``name`` of module ``m``, built by ``build(fb, e)`` on first use."""
    index = m.functions.get(name)
    if index is None:
        fb, e = m.define(name, params, (), export=export)
        build(fb, e)
        index = fb.index
    return index


def min_into(e, target: int, a_push, b_push) -> None:
    """target := min(a, b) (unsigned i32); ``a_push``/``b_push`` push the operands."""
    a_push()
    b_push()
    a_push()
    b_push()
    e.op("i32.lt_u").op("select").set(target)


# ---- micro-kernel -------------------------------------------------------------------------------------------
def micro_kernel(m, el: Element, t: Tiling) -> int:
    """``gemm_micro_<tag>(pa, pb, kc, c, ldc_bytes, alpha, beta, read_c)``: an mr x nr tile of C from packed
    slivers ``pa`` (kc x mr) and ``pb`` (kc x nr); C = alpha * acc + (read_c ? beta * C : 0)."""

    def build(fb, e) -> None:
        pa, pb, kc, c, ldc, alpha, beta, read = range(8)
        nv = t.nr // el.lanes
        acc = [[fb.add_local(V128) for _ in range(nv)] for _ in range(t.mr)]  # locals start at zero
        bv = [fb.add_local(V128) for _ in range(nv)]
        av = fb.add_local(V128)
        avec = fb.add_local(V128)
        turns = fb.add_local(I32)
        madd, mul, add = f"{el.prefix}.relaxed_madd", f"{el.prefix}.mul", f"{el.prefix}.add"
        a_step, b_step = t.mr * el.size, t.nr * el.size

        def step(u: int) -> None:
            for j in range(nv):
                e.get(pb).op("v128.load", u * b_step + 16 * j).set(bv[j])
            for i in range(t.mr):
                # one v128 load of A per lanes rows and lane broadcasts (pshufd): cheaper than load32_splat in
                # V8 and wasmtime. With mr not a multiple of the lanes the last load reads past the sliver
                # (the packed block has 16 spare bytes)
                if i % el.lanes == 0:
                    e.get(pa).op("v128.load", u * a_step + i * el.size).set(avec)
                lane = [(i % el.lanes) * el.size + b for b in range(el.size)] * el.lanes
                e.get(avec).get(avec).op("i8x16.shuffle", bytes(lane)).set(av)
                for j in range(nv):
                    if t.relaxed:
                        e.get(av).get(bv[j]).get(acc[i][j]).op(madd).set(acc[i][j])
                    else:
                        e.get(acc[i][j]).get(av).get(bv[j]).op(mul).op(add).set(acc[i][j])

        def k_loop(count_push, steps: int, label: str) -> None:
            count_push()
            e.tee(turns)
            with e.if_():
                with e.loop(label):
                    for u in range(steps):
                        step(u)
                    e.get(pa).i32(steps * a_step).op("i32.add").set(pa)
                    e.get(pb).i32(steps * b_step).op("i32.add").set(pb)
                    e.get(turns).i32(1).op("i32.sub").tee(turns).br_if(label)

        shift = t.unroll.bit_length() - 1
        if t.unroll > 1:
            k_loop(lambda: e.get(kc).i32(shift).op("i32.shr_u"), t.unroll, "unrolled")
            k_loop(lambda: e.get(kc).i32(t.unroll - 1).op("i32.and"), 1, "rest")
        else:
            k_loop(lambda: e.get(kc), 1, "rest")
        va, vb = fb.add_local(V128), fb.add_local(V128)
        e.get(alpha).op(f"{el.prefix}.splat").set(va)
        e.get(beta).op(f"{el.prefix}.splat").set(vb)
        e.get(read)
        with e.if_():
            _write_tile(e, el, t, acc, c, ldc, va, vb, read_c=True)
            e.else_()
            _write_tile(e, el, t, acc, c, ldc, va, vb, read_c=False)

    name = f"gemm_micro_{t.tag(el)}"
    return cached_function(m, name, (I32, I32, I32, I32, I32, el.valtype, el.valtype, I32), build)


def _write_tile(e, el: Element, t: Tiling, acc, c: int, ldc: int, va: int, vb: int, *, read_c: bool) -> None:
    mul, add = f"{el.prefix}.mul", f"{el.prefix}.add"
    for i, row in enumerate(acc):
        if i:
            e.get(c).get(ldc).op("i32.add").set(c)
        for j, value in enumerate(row):
            e.get(c).get(value).get(va).op(mul)
            if read_c:
                e.get(c).op("v128.load", 16 * j).get(vb).op(mul).op(add)
            e.op("v128.store", 16 * j)


# ---- tiles cut by the edge of C ------------------------------------------------------------------------------
def tile_copy(m, el: Element) -> int:
    """``gemm_tile_copy_<t>(c, ldc_bytes, tile, tile_ld_bytes, rows, cols, into_tile)``: copy the rows x cols
    corner between C and a tile buffer (into the tile when ``into_tile``, else back to C)."""

    def build(fb, e) -> None:
        c, ldc, tile, tld, rows, cols, into = range(7)
        i, j, src, dst = (fb.add_local(I32) for _ in range(4))
        e.i32(0).set(i)

        def row() -> None:
            e.get(into)
            with e.if_(blocktype=I32):
                e.get(c)
                e.else_()
                e.get(tile)
            e.set(src)
            e.get(into)
            with e.if_(blocktype=I32):
                e.get(tile)
                e.else_()
                e.get(c)
            e.set(dst)
            e.i32(0).set(j)
            e.while_below(j, cols, el.size, lambda: e.get(dst).get(j).op("i32.add").get(src).get(j).op("i32.add")
                          .op(f"{el.scalar}.load", 0).op(f"{el.scalar}.store", 0), labels=("cols_done", "col"))
            e.get(c).get(ldc).op("i32.add").set(c)
            e.get(tile).get(tld).op("i32.add").set(tile)

        e.get(cols).i32(el.size).op("i32.mul").set(cols)
        e.while_below(i, rows, 1, row, labels=("rows_done", "row"))

    return cached_function(m, f"gemm_tile_copy_{el.scalar}", (I32,) * 7, build)


# ---- macro-kernel --------------------------------------------------------------------------------------------
def macro_kernel(m, el: Element, t: Tiling) -> int:
    """``gemm_macro_<tag>(pa, pb, c, ldc_bytes, mb, nb, kb, alpha, beta, read_c, tile)``: C's mb x nb block
    from the packed blocks, tile by tile (edge tiles through the tile buffer ``tile``)."""
    micro = micro_kernel(m, el, t)
    copy = tile_copy(m, el)

    def build(fb, e) -> None:
        pa, pb, c, ldc, mb, nb, kb, alpha, beta, read, tile = range(11)
        ir, jr, rows, cols, pa_t, pb_t, c_t = (fb.add_local(I32) for _ in range(7))
        tile_ld = t.nr * el.size
        e.i32(0).set(jr)

        def tile_body() -> None:
            min_into(e, rows, lambda: e.i32(t.mr), lambda: e.get(mb).get(ir).op("i32.sub"))
            e.get(pa).get(ir).get(kb).op("i32.mul").i32(el.size).op("i32.mul").op("i32.add").set(pa_t)
            e.get(c).get(ir).get(ldc).op("i32.mul").op("i32.add").get(jr).i32(el.size).op("i32.mul").op("i32.add")
            e.set(c_t)
            e.get(rows).i32(t.mr).op("i32.eq").get(cols).i32(t.nr).op("i32.eq").op("i32.and")
            with e.if_():
                e.get(pa_t).get(pb_t).get(kb).get(c_t).get(ldc).get(alpha).get(beta).get(read).call(micro)
                e.else_()
                e.get(read)
                with e.if_():
                    e.get(c_t).get(ldc).get(tile).i32(tile_ld).get(rows).get(cols).i32(1).call(copy)
                e.get(pa_t).get(pb_t).get(kb).get(tile).i32(tile_ld).get(alpha).get(beta).get(read).call(micro)
                e.get(c_t).get(ldc).get(tile).i32(tile_ld).get(rows).get(cols).i32(0).call(copy)

        def column_body() -> None:
            min_into(e, cols, lambda: e.i32(t.nr), lambda: e.get(nb).get(jr).op("i32.sub"))
            e.get(pb).get(jr).get(kb).op("i32.mul").i32(el.size).op("i32.mul").op("i32.add").set(pb_t)
            e.i32(0).set(ir)
            e.while_below(ir, mb, t.mr, tile_body, labels=("rows_done", "rows"))

        e.while_below(jr, nb, t.nr, column_body, labels=("cols_done", "cols"))

    params = (I32,) * 7 + (el.valtype, el.valtype, I32, I32)
    return cached_function(m, f"gemm_macro_{t.tag(el)}", params, build)


# ---- packing -------------------------------------------------------------------------------------------------
def _packer(m, name: str, el: Element, width: int, rs: int, cs: int, input_ty: Type | None = None) -> int:
    """``name(src, dst, rows, depth)``: pack a rows x depth block (element (r, p) at ``src + r*rs + p*cs``,
    strides in bytes) as slivers of ``width`` rows: for each p, ``width`` consecutive values, the last sliver
    padded with zeros. Whole slivers load with constant offsets (``v128`` copies when rows are contiguous).
    ``input_ty`` (F16/BF16): the source's element type, each value converted to ``el``'s type (exact)."""

    def load_element(e, offset: int) -> None:  # the address on the stack -> one value of el's type
        if input_ty is None:
            e.op(f"{el.scalar}.load", offset)
            return
        if offset:
            e.i32(offset).op("i32.add")
        load_scalar(m, e, input_ty)

    def build(fb, e) -> None:
        src, dst, rows, depth = range(4)
        r0, valid, p, q = (fb.add_local(I32) for _ in range(4))
        line = width * el.size
        e.i32(0).set(r0)

        def over_lines(copy_line, labels: tuple[str, str]) -> None:
            """For each depth step of the sliver at r0: ``copy_line()`` (from q to dst), then advance both."""
            e.get(src).get(r0).i32(rs).op("i32.mul").op("i32.add").set(q)

            def step() -> None:
                copy_line()
                e.get(q).i32(cs).op("i32.add").set(q)
                e.get(dst).i32(line).op("i32.add").set(dst)

            e.i32(0).set(p)
            e.while_below(p, depth, 1, step, labels=labels)

        def whole_line() -> None:
            if rs == el.size and input_ty is None:
                offset = 0
                for chunk, load, store in ((16, "v128.load", "v128.store"), (8, "i64.load", "i64.store"),
                                           (4, "i32.load", "i32.store")):
                    while line - offset >= chunk:
                        e.get(dst).get(q).op(load, offset).op(store, offset)
                        offset += chunk
                return
            for r in range(width):
                e.get(dst).get(q)
                load_element(e, r * rs)
                e.op(f"{el.scalar}.store", r * el.size)

        def partial_line() -> None:  # rows past ``valid`` are zeros
            for r in range(width):
                e.get(dst).get(valid).i32(r).op("i32.gt_u")
                with e.if_(blocktype=el.valtype):
                    e.get(q)
                    load_element(e, r * rs)
                    e.else_()
                    e.op(f"{el.scalar}.const", 0.0)
                e.op(f"{el.scalar}.store", r * el.size)

        def sliver() -> None:
            min_into(e, valid, lambda: e.i32(width), lambda: e.get(rows).get(r0).op("i32.sub"))
            e.get(valid).i32(width).op("i32.eq")
            with e.if_():
                over_lines(whole_line, ("whole_done", "whole"))
                e.else_()
                over_lines(partial_line, ("part_done", "part"))

        e.while_below(r0, rows, width, sliver, labels=("slivers_done", "slivers"))

    return cached_function(m, name, (I32,) * 4, build)


# ---- driver --------------------------------------------------------------------------------------------------
def build_gemm_driver(m, name: str, shape: GemmShape, tiling: Tiling | None = None, *,
                      export: bool = False) -> int:
    """Define ``name(a, b, c, scratch, lo, hi)``: the GEMM of ``shape`` over rows ``lo .. hi`` of C (byte
    addresses of element 0 of A, B, C and of ``scratch_bytes(shape, tiling)`` bytes of 16-byte aligned scratch
    memory; ``tiling`` None: the type's). Returns its function index (``export``: exported under ``name``)."""
    el = ELEMENTS[shape.ty]
    t = tiling or TILINGS[shape.ty]
    size, given = el.size, shape.input_size
    # element (i, p) of A at a + i*rs_a + p*cs_a; element (j, p) of B (column j, depth p) at b + j*rs_b + p*cs_b
    rs_a, cs_a = (given, shape.lda * given) if shape.trans_a else (shape.lda * given, given)
    rs_b, cs_b = (shape.ldb * given, given) if shape.trans_b else (given, shape.ldb * given)
    pack_a = _packer(m, f"{name}_pack_a", el, t.mr, rs_a, cs_a, shape.input_ty)
    pack_b = _packer(m, f"{name}_pack_b", el, t.nr, rs_b, cs_b, shape.input_ty)
    macro = macro_kernel(m, el, t)
    depth = max(1, min(t.kc, shape.k))
    pb_bytes = _round_up(depth * _round_up(max(1, min(t.nc, shape.n)), t.nr) * size, 16)
    pa_bytes = _packed_a_bytes(shape, t)
    ldc_bytes = shape.ldc * size
    scalar_const = f"{el.scalar}.const"

    def build(fb, e) -> None:
        a, b, c, scratch, lo, hi = range(6)
        jc, pc, ic, nb, kb, mb = (fb.add_local(I32) for _ in range(6))

        def row_block() -> None:
            min_into(e, mb, lambda: e.i32(t.mc), lambda: e.get(hi).get(ic).op("i32.sub"))
            e.get(a).get(ic).i32(rs_a).op("i32.mul").op("i32.add").get(pc).i32(cs_a).op("i32.mul").op("i32.add")
            e.get(scratch).i32(pb_bytes).op("i32.add").get(mb).get(kb).call(pack_a)
            e.get(scratch).i32(pb_bytes).op("i32.add").get(scratch)
            e.get(c).get(ic).i32(ldc_bytes).op("i32.mul").op("i32.add").get(jc).i32(size).op("i32.mul").op("i32.add")
            e.i32(ldc_bytes).get(mb).get(nb).get(kb).op(scalar_const, shape.alpha)
            # the first depth block scales C by beta (not read when beta is 0), the later ones add to it
            e.get(pc)
            with e.if_(blocktype=el.valtype):
                e.op(scalar_const, 1.0)
                e.else_()
                e.op(scalar_const, shape.beta)
            if shape.beta != 0.0:
                e.i32(1)
            else:
                e.get(pc).i32(0).op("i32.ne")
            e.get(scratch).i32(pb_bytes + pa_bytes).op("i32.add").call(macro)

        def depth_block() -> None:
            min_into(e, kb, lambda: e.i32(t.kc), lambda: e.i32(shape.k).get(pc).op("i32.sub"))
            e.get(b).get(jc).i32(rs_b).op("i32.mul").op("i32.add").get(pc).i32(cs_b).op("i32.mul").op("i32.add")
            e.get(scratch).get(nb).get(kb).call(pack_b)
            e.get(lo).set(ic)
            e.while_below(ic, hi, t.mc, row_block, labels=("rows_done", "rows"))

        def column_block() -> None:
            min_into(e, nb, lambda: e.i32(t.nc), lambda: e.i32(shape.n).get(jc).op("i32.sub"))
            e.i32(0).set(pc)
            with e.loop("depth"):  # at least once: k == 0 still writes C = alpha * 0 + beta * C
                depth_block()
                e.get(pc).i32(t.kc).op("i32.add").tee(pc).i32(shape.k).op("i32.lt_u").br_if("depth")

        n_end = fb.add_local(I32)
        e.i32(shape.n).set(n_end)
        e.i32(0).set(jc)
        e.while_below(jc, n_end, t.nc, column_block, labels=("columns_done", "columns"))

    return cached_function(m, name, (I32,) * 6, build, export=export)
