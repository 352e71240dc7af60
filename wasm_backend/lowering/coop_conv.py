"""Conv2D (F32, F64; F16, BF16 computed in f32): the cooperative rule, as im2col chunks multiplied by the GEMM kernel of ``coop_gemm_kernel``.

The cooperative function checks output, input, kernel and bias over their extents (in operand order: handle,
bounds, alignment; a trap writes nothing), then for each batch item b and group g computes the group's output
channels, ``cout_g x (out_h*out_w)`` consecutive values of the NCHW output, as the product

    output[b, g] = W_g @ cols          W_g: the group's kernel rows, cout_g x K (K = cin_g*kernel_h*kernel_w,
                                       row-major as the kernel is stored: no copy)

where ``cols`` (K x out_h*out_w, im2col) is built in the per-launch scratch a chunk of whole output rows at a time
(about ``CHUNK_COLUMNS`` columns: the chunk's K x columns block stays in cache while the GEMM packs it):
row (c, p, q) of a chunk holds, for each output position (i, j) of its rows, input[b, g*cin_g + c, i*stride_h -
padding_h + p*dilation_h, j*stride_w - padding_w + q*dilation_w], or 0 outside the input (``memory.fill``;
with stride_w 1 the valid run is one ``memory.copy``). The chunk's product is the GEMM driver's
``(kernel, cols, output, scratch, 0, cout_g)`` with ldb the chunk's columns and ldc out_h*out_w; with a bias the
output rows are first filled with bias[o] and the GEMM adds to them (beta 1), else beta 0 (the output is not
read). So each output is a sum of products in some order plus the bias, one or two roundings per product
(the GEMM's), within the contract's bound; the padding's zeros take part in the products (0 * inf = NaN, as
the reference). Natively, from PARALLEL_GEMM_THRESHOLD multiply-adds, each group's output channels are cut in whole
register tiles over the host's threads (``coop_gemm.threaded_units``, ``env.parallel_gemm``): each thread builds
the im2col chunks in scratch of its own and multiplies its channels' rows, the same code per output: the bits of
one thread.

F16 and BF16 compute in f32: im2col converts the input (exactly) into f32 columns, the kernel is converted once per
launch into scratch, the GEMM writes a group's output rows in f32 into scratch (the bias converted in first), and
those are rounded once to the type into the output.
"""

from __future__ import annotations

from atlas_web.isa.extents import array_operands, conv_out
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_GEMM_THRESHOLD
from .coop_context import COOP_OK, CoopContext
from .coop_gemm import THREADED_ROWS, threaded_units, unit_block_bytes
from .coop_gemm_kernel import (
    ELEMENTS, TILINGS, GemmShape, build_gemm_driver, cached_function, row_step, scratch_bytes,
)
from .coop_gemm_vector import gemv_plan
from .coop_ops import load_scalar, store_scalar
from .rules import cooperative_rule

__all__ = ["CONV_TYPES", "CHUNK_COLUMNS", "ConvShape", "conv_scratch_bytes", "build_conv_driver", "conv_parallel",
           "conv_launch_scratch"]

I32 = ValType.I32
CONV_TYPES = frozenset({Type.F16, Type.BF16, Type.F32, Type.F64})
_HALVES = (Type.F16, Type.BF16)
#: the im2col chunk's target width (output positions), in whole output rows
CHUNK_COLUMNS = 512


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


class ConvShape:
    """The compile-time numbers of one Conv2D instruction."""

    def __init__(self, instr) -> None:
        #: the stored type, its bytes; the compute type (F32 for F16/BF16), its bytes
        self.stored, self.store = instr.ty, instr.ty.size_bytes()
        self.half = instr.ty in _HALVES
        self.ty = Type.F32 if self.half else instr.ty
        self.size = self.ty.size_bytes()
        self.batch, self.cin, self.cout, self.groups = instr.batch, instr.in_channels, instr.out_channels, instr.groups
        self.h, self.w, self.kh, self.kw = instr.height, instr.width, instr.kernel_h, instr.kernel_w
        self.sh, self.sw, self.ph, self.pw = instr.stride_h, instr.stride_w, instr.padding_h, instr.padding_w
        self.dh, self.dw = instr.dilation_h, instr.dilation_w
        self.bias = bool(instr.has_bias)
        self.oh = conv_out(self.h, self.ph, self.dh, self.kh, self.sh)
        self.ow = conv_out(self.w, self.pw, self.dw, self.kw, self.sw)
        self.cin_g, self.cout_g = self.cin // self.groups, self.cout // self.groups
        self.k = self.cin_g * self.kh * self.kw
        self.chunk_rows = max(1, min(self.oh, CHUNK_COLUMNS // max(1, self.ow)))
        self.tail_rows = self.oh % self.chunk_rows

    def gemm(self, rows: int) -> GemmShape:
        """The GEMM of a chunk of ``rows`` output rows: C (cout_g x rows*ow, ldc oh*ow) = W_g @ cols."""
        n = rows * self.ow
        return GemmShape(self.ty, self.cout_g, n, self.k, False, False, max(1, self.k), n, self.oh * self.ow,
                         1.0 if self.k else 0.0, 1.0 if self.bias else 0.0)

    @property
    def cols_bytes(self) -> int:
        return _round_up(max(1, self.k * self.chunk_rows * self.ow * self.size), 16)

    @property
    def kernel_bytes(self) -> int:
        """F16/BF16: the whole kernel in f32 (else 0)."""
        return _round_up(self.cout * self.k * 4, 16) if self.half else 0

    @property
    def rows_bytes(self) -> int:
        """F16/BF16: one group's output rows in f32 (else 0)."""
        return _round_up(self.cout_g * self.oh * self.ow * 4, 16) if self.half else 0


def conv_scratch_bytes(instr) -> int:
    """Scratch bytes: the im2col chunk, the f32 kernel and output rows (F16/BF16), then the GEMM's packing
    scratch."""
    shape = ConvShape(instr)
    return shape.cols_bytes + shape.kernel_bytes + shape.rows_bytes + scratch_bytes(shape.gemm(shape.chunk_rows))


def _im2col(m, name: str, s: ConvShape) -> int:
    """``name(src, dst, row0, rows)``: the K x rows*ow im2col block of output rows row0 .. row0+rows of one item's
    group (``src``: its first input channel) at ``dst`` (row-major, rows*ow columns)."""
    size, store = s.size, s.store
    plane = s.h * s.w * store

    def build(fb, e) -> None:
        src, dst, row0, rows = range(4)
        c, t, y, out, line, end_c = (fb.add_local(I32) for _ in range(6))
        e.get(dst).set(out)
        e.i32(0).set(c)
        e.i32(s.cin_g).set(end_c)

        def one_channel() -> None:
            for p in range(s.kh):
                for q in range(s.kw):
                    xoff = q * s.dw - s.pw                    # x = j*sw + xoff
                    # valid j: 0 <= j*sw + xoff < w, i.e. jlo <= j < jhi (ceiling divisions)
                    jlo = 0 if xoff >= 0 else min(s.ow, -(xoff // s.sw))
                    jhi = max(jlo, min(s.ow, -(-(s.w - xoff) // s.sw) if s.w > xoff else 0))
                    one_tap(p, xoff, jlo, jhi)

        def one_tap(p: int, xoff: int, jlo: int, jhi: int) -> None:
            e.i32(0).set(t)

            def one_row() -> None:
                # y = (row0 + t)*sh - ph + p*dh; outside 0 .. h: a row of zeros
                e.get(row0).get(t).op("i32.add").i32(s.sh).op("i32.mul").i32(p * s.dh - s.ph).op("i32.add").tee(y)
                e.i32(s.h).op("i32.ge_u")
                with e.if_():
                    e.get(out).i32(0).i32(s.ow * size).op("memory.fill", 0)
                    e.else_()
                    e.get(src).get(c).i32(plane).op("i32.mul").op("i32.add").get(y).i32(s.w * store).op("i32.mul")
                    e.op("i32.add").set(line)
                    if jlo:
                        e.get(out).i32(0).i32(jlo * size).op("memory.fill", 0)
                    if jhi > jlo:
                        _copy_run(m, e, s, out, line, xoff, jlo, jhi, fb)
                    if jhi < s.ow:
                        e.get(out).i32(jhi * size).op("i32.add").i32(0).i32((s.ow - jhi) * size).op("memory.fill", 0)
                e.get(out).i32(s.ow * size).op("i32.add").set(out)

            e.while_below(t, rows, 1, one_row, labels=("rows_done", "rows"))
            # `out` walked rows*ow values: the tap's row of cols is complete (rows of cols are rows*ow long)

        e.while_below(c, end_c, 1, one_channel, labels=("channels_done", "channels"))

    return cached_function(m, name, (I32,) * 4, build)


def _copy_run(m, e, s: ConvShape, out: int, line: int, xoff: int, jlo: int, jhi: int, fb) -> None:
    """out[jlo .. jhi] = line[j*sw + xoff] (a memory.copy when sw is 1 and nothing is converted, else an element
    loop: F16/BF16 converted to f32, exactly)."""
    size, store, scalar = s.size, s.store, ELEMENTS[s.ty].scalar
    if s.sw == 1 and not s.half:
        e.get(out).i32(jlo * size).op("i32.add").get(line).i32((jlo + xoff) * size).op("i32.add")
        e.i32((jhi - jlo) * size).op("memory.copy", 0, 0)
        return
    j, end, source = fb.add_local(I32), fb.add_local(I32), fb.add_local(I32)
    e.i32(jlo).set(j)
    e.i32(jhi).set(end)
    e.get(line).i32(xoff * store).op("i32.add").set(source)   # element x of the line at source + (x - xoff)*store

    def one() -> None:
        e.get(out).get(j).i32(size).op("i32.mul").op("i32.add")
        e.get(source).get(j).i32(s.sw * store).op("i32.mul").op("i32.add")
        load_scalar(m, e, s.stored)
        e.op(f"{scalar}.store", 0)

    e.while_below(j, end, 1, one, labels=("run_done", "run"))


def _fill_bias(m, e, fb, s: ConvShape, out: int, bias: int, lo: int, hi: int) -> None:
    """output rows lo .. hi (of cout_g rows of oh*ow values of the compute type from ``out``, which is advanced)
    := bias[o] of each row (``bias``: the group's first, of the stored type)."""
    scalar = ELEMENTS[s.ty].scalar
    o, i, end_i = (fb.add_local(I32) for _ in range(3))
    v = fb.add_local(ELEMENTS[s.ty].valtype)
    e.get(lo).set(o)
    e.get(out).get(lo).i32(s.oh * s.ow * s.size).op("i32.mul").op("i32.add").set(out)
    e.i32(s.oh * s.ow).set(end_i)

    def one_channel() -> None:
        e.get(bias).get(o).i32(s.store).op("i32.mul").op("i32.add")
        load_scalar(m, e, s.stored)
        e.set(v)
        e.i32(0).set(i)

        def one() -> None:
            e.get(out).get(i).i32(s.size).op("i32.mul").op("i32.add").get(v).op(f"{scalar}.store", 0)

        e.while_below(i, end_i, 1, one, labels=("bias_done", "bias"))
        e.get(out).i32(s.oh * s.ow * s.size).op("i32.add").set(out)

    e.while_below(o, hi, 1, one_channel, labels=("bias_channels_done", "bias_channels"))


def build_conv_driver(m, name: str, instr, *, export: bool = False) -> int:
    """Define ``name(output, input, kernel, bias, scratch, first, end, lo, hi)``: Conv2D ``instr`` over items first ..
    end (item = b*groups + g), each item's output channels lo .. hi of its group (0 .. out_channels/groups: all;
    byte addresses of the arrays' element 0 and of ``conv_scratch_bytes(instr)`` bytes of 16-byte aligned scratch;
    ``bias`` unused without has_bias). Returns its function index (``export``: exported)."""
    s = ConvShape(instr)
    im2col = _im2col(m, f"{name}_im2col", s)
    full = build_gemm_driver(m, f"{name}_gemm", s.gemm(s.chunk_rows))
    tail = build_gemm_driver(m, f"{name}_gemm_tail", s.gemm(s.tail_rows)) if s.tail_rows else None

    def build(fb, e) -> None:
        output, input_, kernel, bias_base, scratch, item, end_item, lo, hi = range(9)
        cols, gemm_scratch, src, a, out, t, rows, end_t, out_rows, bias = (fb.add_local(I32) for _ in range(10))
        kernel32, rows32 = fb.add_local(I32), fb.add_local(I32)
        e.get(scratch).tee(cols).i32(s.cols_bytes).op("i32.add").tee(kernel32).i32(s.kernel_bytes).op("i32.add")
        e.tee(rows32).i32(s.rows_bytes).op("i32.add").set(gemm_scratch)
        e.i32(s.oh).set(end_t)
        if s.half:   # the kernel in f32, once
            _convert(m, e, fb, s, kernel, kernel32, lambda: e.i32(s.cout * s.k), to_compute=True)

        def one_item() -> None:   # item = b*groups + g: the input, kernel rows, output rows and bias of group g of b
            g = lambda: e.get(item).i32(s.groups).op("i32.rem_u")   # noqa: E731
            e.get(input_).get(item).i32(s.cin_g * s.h * s.w * s.store).op("i32.mul").op("i32.add").set(src)
            e.get(kernel32 if s.half else kernel)
            g()
            e.i32(s.cout_g * s.k * s.size).op("i32.mul").op("i32.add").set(a)
            if s.half:   # the group's rows in f32 scratch, rounded into the output at the end
                e.get(rows32).set(out)
            else:
                e.get(output).get(item).i32(s.cout_g * s.oh * s.ow * s.size).op("i32.mul").op("i32.add").set(out)
            if s.bias:
                e.get(bias_base)
                g()
                e.i32(s.cout_g * s.store).op("i32.mul").op("i32.add").set(bias)
                e.get(out).set(out_rows)
                _fill_bias(m, e, fb, s, out_rows, bias, lo, hi)
            e.i32(0).set(t)

            def gemm(driver: int) -> None:
                e.get(a).get(cols).get(out).get(t).i32(s.ow * s.size).op("i32.mul").op("i32.add")
                e.get(gemm_scratch).get(lo).get(hi).call(driver)

            def one_chunk() -> None:
                e.get(end_t).get(t).op("i32.sub").set(rows)
                e.get(rows).i32(s.chunk_rows).op("i32.gt_u")
                with e.if_():
                    e.i32(s.chunk_rows).set(rows)
                e.get(src).get(cols).get(t).get(rows).call(im2col)
                if tail is None:
                    gemm(full)
                    return
                e.get(rows).i32(s.chunk_rows).op("i32.eq")
                with e.if_():
                    gemm(full)
                    e.else_()
                    gemm(tail)

            e.while_below(t, end_t, s.chunk_rows, one_chunk, labels=("chunks_done", "chunks"))
            if s.half:   # rows lo .. hi of the group's f32 rows, rounded into the output
                e.get(output).get(item).i32(s.cout_g * s.oh * s.ow * s.store).op("i32.mul").op("i32.add")
                e.get(lo).i32(s.oh * s.ow * s.store).op("i32.mul").op("i32.add").set(out_rows)
                e.get(rows32).get(lo).i32(s.oh * s.ow * 4).op("i32.mul").op("i32.add").set(out)
                _convert(m, e, fb, s, out, out_rows,
                         lambda: e.get(hi).get(lo).op("i32.sub").i32(s.oh * s.ow).op("i32.mul"), to_compute=False)

        e.while_below(item, end_item, 1, one_item, labels=("items_done", "items"))

    return cached_function(m, name, (I32,) * 9, build, export=export)


def _convert(m, e, fb, s: ConvShape, src: int, dst: int, count, *, to_compute: bool) -> None:
    """``count()`` (it pushes the number) values from local address ``src`` to ``dst``: stored type (F16/BF16) to
    f32 (exact), or f32 rounded once to the stored type."""
    i, end = fb.add_local(I32), fb.add_local(I32)
    value = fb.add_local(ValType.F32)
    e.i32(0).set(i)
    count()
    e.set(end)

    def one() -> None:
        if to_compute:
            e.get(dst).get(i).i32(2).op("i32.shl").op("i32.add")
            e.get(src).get(i).i32(s.store).op("i32.mul").op("i32.add")
            load_scalar(m, e, s.stored)
            e.op("f32.store", 0)
        else:
            e.get(src).get(i).i32(2).op("i32.shl").op("i32.add").op("f32.load", 0).set(value)
            e.get(dst).get(i).i32(s.store).op("i32.mul").op("i32.add")
            store_scalar(m, e, s.stored, value)

    e.while_below(i, end, 1, one, labels=("convert_done", "convert"))


def conv_parallel(instr) -> tuple[str, int, int] | None:
    """``("rows", out_channels/groups, step)``: each group's output channels over the threads in whole register tiles
    of GEMM's kernel (every thread builds the im2col chunks it multiplies), when the products take at least
    PARALLEL_GEMM_THRESHOLD multiply-adds and a group has more channels than a tile (not the GEMV kernel of one
    channel a group); else None."""
    s = ConvShape(instr)
    shape = s.gemm(s.chunk_rows)
    step = row_step(TILINGS[s.ty])
    work = s.batch * s.cout * s.oh * s.ow * s.k
    if gemv_plan(shape) is not None or s.cout_g <= step or work < PARALLEL_GEMM_THRESHOLD:
        return None
    return "rows", s.cout_g, step


def conv_launch_scratch(instr) -> int:
    """Per-launch scratch: the driver's parameter block, then one thread's conv_scratch_bytes."""
    return unit_block_bytes(len(array_operands(instr))) + conv_scratch_bytes(instr)


@cooperative_rule("Conv2D", CONV_TYPES, scratch=conv_launch_scratch)
def _build(cc: CoopContext) -> None:
    instr = cc.instr
    s = ConvShape(instr)
    # checked in operand order (output, input, kernel, bias), as the reference checks them: the first bad one traps
    checked = {array.name: cc.array(array.name, array.ty, array.elements) for array in array_operands(instr)}
    if s.batch * s.cout * s.oh * s.ow == 0:
        cc.e.i32(COOP_OK)
        return
    driver = build_conv_driver(cc.m, f"conv_{cc.index}", instr)
    threaded = "parallel_gemm" in cc.m.imports and conv_parallel(instr) is not None

    def rows(ctx, pointers: dict, scratch: int, lo: int, hi: int) -> None:
        e = ctx.e
        for name in ("output", "input", "kernel", "bias"):
            e.get(pointers[name])
        e.get(scratch).i32(0).i32(s.batch * s.groups).get(lo).get(hi).call(driver)

    threaded_units(cc, checked, s.cout_g, threaded, rows)


THREADED_ROWS["Conv2D"] = (conv_parallel, conv_scratch_bytes)
