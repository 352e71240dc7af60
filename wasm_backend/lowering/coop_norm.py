"""LayerNorm, RMSNorm, BatchNorm and GroupNorm: the cooperative rules, on the row passes of ``coop_norm_kernel``.

Each cooperative function checks the arrays over their extents (the table's, ``array_operands``: handle,
bounds, alignment, in operand order, so a trap carries the reference's numbers and writes nothing), returns
at once when the output is empty, then walks the statistics groups (compile-time counts and strides):

* LayerNorm: per row, ``mu = sum / n``, ``v = dev2 / n``, ``s = 1 / sqrt(v + eps)``, then the ``layer``
  affine pass with gamma and beta;
* RMSNorm: per row, ``s = 1 / sqrt(sq / n + eps)``, then the ``rms`` pass with weight;
* GroupNorm: per group of an item (``channels / groups * spatial`` consecutive elements) LayerNorm's
  statistics, then the ``channel`` pass once per channel of the group with its gamma and beta;
* BatchNorm: per item and channel, ``s = 1 / sqrt(variance[c] + eps)`` and the ``channel`` pass with
  ``mu = mean[c]`` (no statistics).

All in binary64, in the reference's order (docs/semantics.md, Normalization kernels; ``coop_norm_kernel``
says why that keeps every finite F32, F16 and BF16 row in range). The groups are the units of a driver
(``coop_gemm.threaded_units``): natively a launch of at least PARALLEL_MAP_THRESHOLDS["math library"] elements runs
ranges of groups on the host's threads through ``env.parallel_gemm``, each group by the same code: the bits of one
thread.
"""

from __future__ import annotations

from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import FLOAT_TYPES, Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_MAP_THRESHOLDS
from .coop_context import COOP_OK, CoopContext
from .coop_gemm import THREADED_ROWS, threaded_units, unit_block_bytes, units_parallel
from .coop_norm_kernel import advance, affine_f32_function, affine_function, reduce_function
from .coop_ops import load_scalar
from .rules import cooperative_rule

__all__ = ["NORM_TYPES", "norm_parallel", "norm_scratch"]

I32, F64 = ValType.I32, ValType.F64
#: every float type of the rows (F32, F16 and BF16 widened to f64)
NORM_TYPES = frozenset(FLOAT_TYPES)


class _Norm:
    """The driver of one normalization instruction being written: ``ctx`` its DriverContext, ``arrays`` the
    locals of the array addresses, ``lo`` and ``hi`` those of its range of statistics groups."""

    def __init__(self, ctx, arrays: dict, lo: int, hi: int) -> None:
        self.cc, self.e, self.m, self.instr = ctx, ctx.e, ctx.m, ctx.instr
        self.ty = ty = ctx.instr.ty
        self.size = ty.size_bytes()
        self.arrays, self.lo, self.hi = arrays, lo, hi
        self.mu, self.v, self.s, self.g, self.b = (ctx.local(F64) for _ in range(5))

    def reduce(self, kind: str, x: int, n: int) -> None:
        """Push ``norm_<kind>`` over ``n`` (a constant) elements from local ``x``, with this row's mu."""
        self.e.get(x).i32(n).get(self.mu).call(reduce_function(self.m, self.ty, kind))

    def statistics(self, x: int, n: int, centred: bool) -> None:
        """mu (0 when not ``centred``) and s of the ``n`` elements from local ``x``."""
        e = self.e
        e.f64(0.0).set(self.mu)
        if centred:
            self.reduce("sum", x, n)
            e.f64(float(n)).op("f64.div").set(self.mu)
            self.reduce("dev2", x, n)
        else:
            self.reduce("sq", x, n)
        e.f64(float(n)).op("f64.div").set(self.v)
        e.get(self.v)
        self.inverse_deviation()

    def inverse_deviation(self) -> None:
        """s := 1 / sqrt(v + eps) for the variance v on the stack."""
        e = self.e
        e.f64(float(self.instr.eps)).op("f64.add").op("f64.sqrt").set(self.s)
        e.f64(1.0).get(self.s).op("f64.div").set(self.s)

    def affine(self, kind: str, out: int, x: int, n: int, gp: int | None, bp: int | None) -> None:
        """The ``kind`` pass over ``n`` elements from local ``x`` to ``out`` (F32 rows: in f32x4 where
        ``f32_safe``)."""
        e = self.e
        if self.ty is Type.F32 and kind != "channel":
            self.f32_safe(n)
            with e.if_():
                e.get(out).get(x).i32(n).get(gp).get(bp if bp is not None else gp)
                e.get(self.mu).op("f32.demote_f64").get(self.s).op("f32.demote_f64")
                e.call(affine_f32_function(self.m, kind))
                e.else_()
                self.affine_f64(kind, out, x, n, gp, bp)
            return
        self.affine_f64(kind, out, x, n, gp, bp)

    def f32_safe(self, n: int) -> None:
        """Push whether the row's f32 pass keeps every step normal: 2**-120 <= s <= 2**120 (s rounds
        relatively), n * v <= 2**250 (|x - mu| <= sqrt(n * v) <= 2**125: no overflow) and mu 0 or
        |mu| >= 2**-100 (mu rounds relatively). False for a NaN: such rows take the f64 pass."""
        e = self.e
        e.get(self.s).f64(2.0 ** -120).op("f64.ge").get(self.s).f64(2.0 ** 120).op("f64.le").op("i32.and")
        e.get(self.v).f64(float(n)).op("f64.mul").f64(2.0 ** 250).op("f64.le").op("i32.and")
        e.get(self.mu).op("f64.abs").f64(2.0 ** -100).op("f64.ge").get(self.mu).f64(0.0).op("f64.eq")
        e.op("i32.or").op("i32.and")

    def affine_f64(self, kind: str, out: int, x: int, n: int, gp: int | None, bp: int | None) -> None:
        e = self.e
        e.get(out).get(x).i32(n)
        (e.get(gp) if gp is not None else e.i32(0))
        (e.get(bp) if bp is not None else e.i32(0))
        for local in (self.mu, self.s, self.g, self.b):
            e.get(local)
        e.call(affine_function(self.m, self.ty, kind))

    def load_element(self, base: str, index: int) -> None:
        """Push element ``index`` (an i32 local) of array ``base`` as an f64."""
        e = self.e
        e.get(self.arrays[base]).get(index).i32(self.size).op("i32.mul").op("i32.add")
        load_scalar(self.m, e, self.ty)
        if self.ty is not Type.F64:
            e.op("f64.promote_f32")

    def groups(self, elements: int, body) -> None:
        """``body(q, x, out)`` for the driver's groups q in lo..hi of ``elements`` elements each, with x and out
        pointing at group q's (the body advances them past it)."""
        e = self.e
        q, x, out = self.cc.local(I32), self.cc.local(I32), self.cc.local(I32)
        for pointer, base in ((x, "input"), (out, "output")):
            e.get(self.arrays[base]).get(self.lo).i32(elements * self.size).op("i32.mul").op("i32.add").set(pointer)
        e.get(self.lo).set(q)
        e.while_below(q, self.hi, 1, lambda: body(q, x, out), labels=("groups_done", "groups"))


def _group_shape(instr) -> tuple[int, int]:
    """(statistics groups, elements per group) of a normalization instruction."""
    name = instr.INFO.name
    if name in ("LayerNorm", "RMSNorm"):
        return instr.rows, instr.n
    if name == "GroupNorm":
        return instr.batch * instr.groups, instr.channels // instr.groups * instr.spatial
    return instr.batch * instr.channels, instr.spatial


def norm_parallel(instr) -> tuple[str, int, int] | None:
    """``("rows", groups, 1)``: ranges of statistics groups over the threads when the launch has at least
    PARALLEL_MAP_THRESHOLDS["math library"] elements (three passes an element, as Softmax; BatchNorm, one affine
    pass an element and no statistics: the "arithmetic" threshold, as LayerScale), else None."""
    groups, elements = _group_shape(instr)
    cost = "arithmetic" if instr.INFO.name == "BatchNorm" else "math library"
    return units_parallel(groups, groups * elements, PARALLEL_MAP_THRESHOLDS[cost])


def norm_scratch(instr) -> int:
    """Per-launch scratch: the driver's parameter block (the arrays' addresses); the groups need none."""
    return unit_block_bytes(len(array_operands(instr))) + 16


def _rule(name: str):
    def register(build):
        @cooperative_rule(name, NORM_TYPES, scratch=norm_scratch)
        def run(cc: CoopContext) -> None:
            instr = cc.instr
            arrays = {a.name: cc.array(a.name, a.ty, a.elements) for a in array_operands(instr)}
            if next(a.elements for a in array_operands(instr) if a.name == "output") == 0:
                cc.e.i32(COOP_OK)
                return
            threaded = "parallel_gemm" in cc.m.imports and norm_parallel(instr) is not None
            threaded_units(cc, arrays, _group_shape(instr)[0], threaded,
                           lambda ctx, pointers, _scratch, lo, hi: build(_Norm(ctx, pointers, lo, hi)))

        THREADED_ROWS[name] = (norm_parallel, lambda instr: 16)
        return build
    return register


@_rule("LayerNorm")
def _layer_norm(norm: _Norm) -> None:
    n = norm.instr.n

    def row(q, x, out) -> None:
        norm.statistics(x, n, centred=True)
        norm.affine("layer", out, x, n, norm.arrays["gamma"], norm.arrays["beta"])
        advance(norm.e, (x, out), n * norm.size)

    norm.groups(n, row)


@_rule("RMSNorm")
def _rms_norm(norm: _Norm) -> None:
    n = norm.instr.n

    def row(q, x, out) -> None:
        norm.statistics(x, n, centred=False)
        norm.affine("rms", out, x, n, norm.arrays["weight"], None)
        advance(norm.e, (x, out), n * norm.size)

    norm.groups(n, row)


@_rule("GroupNorm")
def _group_norm(norm: _Norm) -> None:
    instr, e = norm.instr, norm.e
    per_group, spatial = instr.channels // instr.groups, instr.spatial
    channel, last = norm.cc.local(I32), norm.cc.local(I32)

    def group(q, x, out) -> None:
        norm.statistics(x, per_group * spatial, centred=True)
        # the group's first channel: (q mod groups) * per_group
        e.get(q).i32(instr.groups).op("i32.rem_u").i32(per_group).op("i32.mul").tee(channel)
        e.i32(per_group).op("i32.add").set(last)

        def one_channel() -> None:
            norm.load_element("gamma", channel)
            e.set(norm.g)
            norm.load_element("beta", channel)
            e.set(norm.b)
            norm.affine("channel", out, x, spatial, None, None)
            advance(e, (x, out), spatial * norm.size)

        e.while_below(channel, last, 1, one_channel, labels=("channels_done", "channels"))

    norm.groups(per_group * spatial, group)


@_rule("BatchNorm")
def _batch_norm(norm: _Norm) -> None:
    instr, e = norm.instr, norm.e
    channel = norm.cc.local(I32)

    def item_channel(q, x, out) -> None:
        e.get(q).i32(instr.channels).op("i32.rem_u").set(channel)
        norm.load_element("mean", channel)
        e.set(norm.mu)
        norm.load_element("variance", channel)
        norm.inverse_deviation()
        norm.load_element("gamma", channel)
        e.set(norm.g)
        norm.load_element("beta", channel)
        e.set(norm.b)
        norm.affine("channel", out, x, instr.spatial, None, None)
        advance(e, (x, out), instr.spatial * norm.size)

    norm.groups(instr.spatial, item_channel)
