"""The per-row functions of the attention kernels (``coop_attention``), F32 and F64 (``<t>``), SIMD128 over a row
with scalar tails.

* ``attention_online_row_<t>(s, count, state, o, dim)``: one query row's online-softmax step over the ``count``
  scores at ``s`` (a key block; ``state`` holds the row's running maximum and sum, two values): ``mx = max(s)``,
  ``m' = max(m, mx)`` (NaN propagates), ``shift = m'`` (0 while every score so far is -inf, so that ``exp(-inf -
  shift)`` is 0, not NaN), ``alpha = exp(m - shift)``, ``s[j] = exp(s[j] - shift)`` in place (the block's
  weights, read by the P.V product after), ``l' = alpha * l + sum_j s[j]``, and the row's output accumulator
  ``o`` (``dim`` values) times alpha. The same alpha scales the sum and the output, so its rounding cancels in
  their quotient. ``count`` 0 changes nothing.
* ``attention_axpy_<t>(p, v, o, count, dim)``: ``o += sum_{j < count} p[j] * v[j, :]`` (v rows of ``dim``): the
  product of a block's weights and values for one row, over the keys that row sees only (a hidden value is not
  read: its NaN does not reach the row).
* ``attention_scale_<t>(o, dim, factor)``: ``o *= factor``.

The exponentials are the math library's (its vector routine written inline, the scalar one for tails).
"""

from __future__ import annotations

from atlas_web.isa.enums import MapOperation
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_gemm_kernel import Element, cached_function
from .math_seam import math_function_for

__all__ = ["online_row", "axpy_rows", "scale_row"]

I32, V128 = ValType.I32, ValType.V128


class _Loop:
    """Vector-then-scalar loops over ``count`` elements of ``el`` with index local ``i``."""

    def __init__(self, fb, e, el: Element) -> None:
        self.fb, self.e, self.el = fb, e, el
        self.shift = el.size.bit_length() - 1
        self.i, self.end = fb.add_local(I32), fb.add_local(I32)

    def vectors_end(self, count: int) -> None:
        """end := count rounded down to whole vectors."""
        self.e.get(count).i32(-self.el.lanes).op("i32.and").set(self.end)

    def over(self, count: int, vector, scalar, label: str) -> None:
        """``vector()`` for each whole vector of ``count`` (a local), then ``scalar()`` for the rest; ``at(base)``
        pushes ``base + size * i`` meanwhile."""
        e = self.e
        e.i32(0).set(self.i)
        self.vectors_end(count)
        e.while_below(self.i, self.end, self.el.lanes, vector, labels=(f"{label}_vectors_done", f"{label}_vectors"))
        e.get(count).set(self.end)
        e.while_below(self.i, self.end, 1, scalar, labels=(f"{label}_tail_done", f"{label}_tail"))

    def at(self, base: int) -> None:
        self.e.get(base).get(self.i).i32(self.shift).op("i32.shl").op("i32.add")


def scale_row(m, el: Element) -> int:
    """``attention_scale_<t>(o, dim, factor)``."""
    p, s = el.prefix, el.scalar

    def build(fb, e) -> None:
        o, dim, factor = range(3)
        loop, splat = _Loop(fb, e, el), fb.add_local(V128)
        e.get(factor).op(f"{p}.splat").set(splat)

        def vector() -> None:
            loop.at(o)
            loop.at(o)
            e.op("v128.load", 0).get(splat).op(f"{p}.mul").op("v128.store", 0)

        def scalar() -> None:
            loop.at(o)
            loop.at(o)
            e.op(f"{s}.load", 0).get(factor).op(f"{s}.mul").op(f"{s}.store", 0)

        loop.over(dim, vector, scalar, "scale")

    return cached_function(m, f"attention_scale_{s}", (I32, I32, el.valtype), build)


def axpy_rows(m, el: Element) -> int:
    """``attention_axpy_<t>(p, v, o, count, dim)``."""
    vp, s = el.prefix, el.scalar

    def build(fb, e) -> None:
        p, v, o, count, dim = range(5)
        loop = _Loop(fb, e, el)
        j, row, weight, splat = fb.add_local(I32), fb.add_local(I32), fb.add_local(el.valtype), fb.add_local(V128)

        def vector() -> None:
            loop.at(o)
            loop.at(o)
            e.op("v128.load", 0)
            loop.at(row)
            e.op("v128.load", 0).get(splat).op(f"{vp}.mul").op(f"{vp}.add").op("v128.store", 0)

        def scalar() -> None:
            loop.at(o)
            loop.at(o)
            e.op(f"{s}.load", 0)
            loop.at(row)
            e.op(f"{s}.load", 0).get(weight).op(f"{s}.mul").op(f"{s}.add").op(f"{s}.store", 0)

        def one_key() -> None:
            e.get(p).get(j).i32(loop.shift).op("i32.shl").op("i32.add").op(f"{s}.load", 0).tee(weight)
            e.op(f"{vp}.splat").set(splat)
            e.get(v).get(j).get(dim).op("i32.mul").i32(loop.shift).op("i32.shl").op("i32.add").set(row)
            loop.over(dim, vector, scalar, "axpy")

        e.i32(0).set(j)
        e.while_below(j, count, 1, one_key, labels=("keys_done", "keys"))

    return cached_function(m, f"attention_axpy_{s}", (I32,) * 5, build)


def online_row(m, el: Element) -> int:
    """``attention_online_row_<t>(s, count, state, o, dim)`` (see the module docstring)."""
    compute = Type.F64 if el.scalar == "f64" else Type.F32
    exp = math_function_for(MapOperation.Exp, compute)
    scale = scale_row(m, el)
    vp, t, size = el.prefix, el.scalar, el.size

    def build(fb, e) -> None:
        s, count, state, o, dim = range(5)
        loop = _Loop(fb, e, el)
        acc, vec, shift_v = fb.add_local(V128), fb.add_local(V128), fb.add_local(V128)
        big, new, shift, alpha, total, x = (fb.add_local(el.valtype) for _ in range(6))
        e.get(count).op("i32.eqz")
        with e.if_():
            e.op("return")
        # the block's maximum
        e.op(f"{t}.const", float("-inf")).op(f"{vp}.splat").set(acc)

        def max_vector() -> None:
            loop.at(s)
            e.op("v128.load", 0).get(acc).op(f"{vp}.max").set(acc)

        def max_scalar() -> None:
            e.get(big)
            loop.at(s)
            e.op(f"{t}.load", 0).op(f"{t}.max").set(big)

        e.op(f"{t}.const", float("-inf")).set(big)
        e.i32(0).set(loop.i)
        loop.vectors_end(count)
        e.while_below(loop.i, loop.end, el.lanes, max_vector, labels=("max_vectors_done", "max_vectors"))
        for lane in range(el.lanes):
            e.get(big).get(acc).op(f"{vp}.extract_lane", lane).op(f"{t}.max").set(big)
        e.get(count).set(loop.end)
        e.while_below(loop.i, loop.end, 1, max_scalar, labels=("max_tail_done", "max_tail"))
        # m' = max(m, mx); shift = m' unless -inf (then 0); alpha = exp(m - shift)
        e.get(state).op(f"{t}.load", 0).get(big).op(f"{t}.max").set(new)
        e.op(f"{t}.const", 0.0).get(new).get(new).op(f"{t}.const", float("-inf")).op(f"{t}.eq").op("select")
        e.set(shift)
        e.get(state).op(f"{t}.load", 0).get(shift).op(f"{t}.sub")
        exp.scalar(m, e, compute)
        e.set(alpha)
        # the weights, in place, and their sum
        e.get(shift).op(f"{vp}.splat").set(shift_v)
        e.op(f"{t}.const", 0.0).op(f"{vp}.splat").set(acc)

        def exp_vector() -> None:
            loop.at(s)
            e.op("v128.load", 0).get(shift_v).op(f"{vp}.sub").set(vec)
            if not exp.inline(m, fb, compute, [vec]):
                e.get(vec)
                exp.vector(m, e, compute)
            e.set(vec)
            loop.at(s)
            e.get(vec).op("v128.store", 0)
            e.get(acc).get(vec).op(f"{vp}.add").set(acc)

        def exp_scalar() -> None:
            loop.at(s)
            e.op(f"{t}.load", 0).get(shift).op(f"{t}.sub")
            exp.scalar(m, e, compute)
            e.set(x)
            loop.at(s)
            e.get(x).op(f"{t}.store", 0)
            e.get(total).get(x).op(f"{t}.add").set(total)

        e.op(f"{t}.const", 0.0).set(total)
        e.i32(0).set(loop.i)
        loop.vectors_end(count)
        e.while_below(loop.i, loop.end, el.lanes, exp_vector, labels=("exp_vectors_done", "exp_vectors"))
        for lane in range(el.lanes):
            e.get(total).get(acc).op(f"{vp}.extract_lane", lane).op(f"{t}.add").set(total)
        e.get(count).set(loop.end)
        e.while_below(loop.i, loop.end, 1, exp_scalar, labels=("exp_tail_done", "exp_tail"))
        # l' = alpha * l + sum; m := m'; o *= alpha
        e.get(state).get(alpha).get(state).op(f"{t}.load", size).op(f"{t}.mul").get(total).op(f"{t}.add")
        e.op(f"{t}.store", size)
        e.get(state).get(new).op(f"{t}.store", 0)
        e.get(o).get(dim).get(alpha).call(scale)

    return cached_function(m, f"attention_online_row_{t}", (I32,) * 5, build)
