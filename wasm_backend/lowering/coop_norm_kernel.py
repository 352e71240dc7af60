"""The WebAssembly functions of the normalization kernels: row passes in binary64 over f64x2.

Every element is widened exactly to f64 (F32 by ``f64x2.promote_low_f32x4``, F16/BF16 through f32), so the
statistics of an F32, F16 or BF16 row neither overflow nor underflow (f64 holds the square of any f32, and
``N * max_f32**2`` for any row an arena holds) and carry binary64 rounding, far inside the contract's f32
bound. F64 is binary64 arithmetic throughout, as the reference's: a row whose sum or squares pass f64's range
overflows there as it does in NumPy (the conformance suite asks for NumPy's NaN in those rows).

Functions, shared by every instruction of a module of one type (``n`` is a run-time count, so GroupNorm's
channel runs and LayerNorm's rows call the same code):

* ``norm_<kind>_<ty>(x, n, mu) -> f64``: a reduction over ``n`` elements from ``x``: ``sum`` of ``x``,
  ``dev2`` the sum of ``(x - mu)**2``, ``sq`` the sum of ``x**2``. Blocks of 8 elements in four f64x2
  accumulators, then one by one.
* ``norm_affine_<kind>_<ty>(out, x, n, gp, bp, mu, s, g, b)``: ``n`` outputs from ``x``: ``layer``
  ``((x - mu) * s) * gamma[i] + beta[i]`` (gamma at ``gp``, beta at ``bp``), ``rms`` ``(x * s) * weight[i]``
  (weight at ``gp``; no ``+ 0``, so a zero keeps its sign), ``channel`` ``((x - mu) * s) * g + b`` (one
  channel's scalars). Blocks of 4 elements (two f64x2), then one by one;
  each output rounded once from f64 to the type (F16/BF16 through f32). Element ``i`` is read before it is
  written, so ``out`` may be ``x``.

The formulas are the
reference's (exec_norm) in its order, so an F32 output differs from the reference's only through the mean and
variance's summation order.
"""

from __future__ import annotations

from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_gemm_kernel import cached_function
from .coop_ops import load_scalar, store_scalar

__all__ = ["REDUCE_KINDS", "AFFINE_KINDS", "reduce_function", "affine_function", "affine_f32_function",
           "VECTOR_TYPES", "advance"]

I32, F32, F64, V128 = ValType.I32, ValType.F32, ValType.F64, ValType.V128
REDUCE_KINDS = ("sum", "dev2", "sq")
AFFINE_KINDS = ("layer", "rms", "channel")
#: types with a vector path (4 elements in two f64x2); F16/BF16 run element by element
VECTOR_TYPES = frozenset({Type.F32, Type.F64})
#: the low 8 bytes of two v128 into one (two demoted f32x4 into four f32)
_LOW_HALVES = tuple(range(8)) + tuple(range(16, 24))


def _load_chunk(e, ty: Type, p: int, offset: int, lo: int, hi: int) -> None:
    """Elements 0-1 and 2-3 of the 4 at ``p + offset`` as f64x2 into ``lo`` and ``hi``."""
    if ty is Type.F32:
        for half, local in ((0, lo), (8, hi)):
            e.get(p).op("v128.load64_zero", offset + half).op("f64x2.promote_low_f32x4").set(local)
    else:
        e.get(p).op("v128.load", offset).set(lo)
        e.get(p).op("v128.load", offset + 16).set(hi)


def _store_chunk(e, ty: Type, p: int, lo: int, hi: int) -> None:
    """Store f64x2 ``lo`` and ``hi`` as the 4 elements at ``p`` (F32 rounded once)."""
    if ty is Type.F32:
        e.get(p).get(lo).op("f32x4.demote_f64x2_zero").get(hi).op("f32x4.demote_f64x2_zero")
        e.op("i8x16.shuffle", _LOW_HALVES).op("v128.store", 0)
    else:
        e.get(p).get(lo).op("v128.store", 0)
        e.get(p).get(hi).op("v128.store", 16)


def _load_one(m, e, ty: Type, p: int) -> None:
    """Push the element at ``p`` as an f64."""
    e.get(p)
    load_scalar(m, e, ty)
    if ty is not Type.F64:
        e.op("f64.promote_f32")


def reduce_function(m, ty: Type, kind: str) -> int:
    """The index of ``norm_<kind>_<ty>(x, n, mu) -> f64`` (see the module docstring)."""
    name = f"norm_{kind}_{ty.name.lower()}"
    index = m.functions.get(name)
    if index is not None:
        return index
    size = ty.size_bytes()
    fb, e = m.define(name, (I32, I32, F64), (F64,))
    x, n, mu = range(3)
    p, end, block_end = (fb.add_local(I32) for _ in range(3))
    total, value = fb.add_local(F64), fb.add_local(F64)
    acc = [fb.add_local(V128) for _ in range(4)]
    lo, hi, muv = fb.add_local(V128), fb.add_local(V128), fb.add_local(V128)

    def accumulate(local: int, a: int) -> None:
        """acc ``a`` += the term of the loaded ``local`` (squares by relaxed_madd: fused or not, both in the
        bound)."""
        if kind == "sum":
            e.get(local).get(a).op("f64x2.add").set(a)
            return
        if kind == "dev2":
            e.get(local).get(muv).op("f64x2.sub").set(local)
        e.get(local).get(local).get(a).op("f64x2.relaxed_madd").set(a)

    e.get(x).tee(p).get(n).i32(size).op("i32.mul").op("i32.add").set(end)
    e.get(mu).op("f64x2.splat").set(muv)
    for a in acc:
        e.f64(0.0).op("f64x2.splat").set(a)
    if ty in VECTOR_TYPES:
        e.get(n).i32(-8).op("i32.and").i32(size).op("i32.mul").get(x).op("i32.add").set(block_end)

        def block() -> None:
            for half in range(2):
                _load_chunk(e, ty, p, 4 * size * half, lo, hi)
                for j, local in enumerate((lo, hi)):
                    accumulate(local, acc[2 * half + j])

        e.while_below(p, block_end, 8 * size, block, labels=("blocks_done", "blocks"))
    e.get(acc[0]).get(acc[1]).op("f64x2.add").get(acc[2]).get(acc[3]).op("f64x2.add").op("f64x2.add").set(lo)
    e.get(lo).op("f64x2.extract_lane", 0).get(lo).op("f64x2.extract_lane", 1).op("f64.add").set(total)

    def one() -> None:
        _load_one(m, e, ty, p)
        e.set(value)
        if kind == "dev2":
            e.get(value).get(mu).op("f64.sub").tee(value).get(value).op("f64.mul")
        elif kind == "sq":
            e.get(value).get(value).op("f64.mul")
        else:
            e.get(value)
        e.get(total).op("f64.add").set(total)

    e.while_below(p, end, size, one, labels=("tail_done", "tail"))
    e.get(total)
    return fb.index


def affine_function(m, ty: Type, kind: str) -> int:
    """The index of ``norm_affine_<kind>_<ty>(out, x, n, gp, bp, mu, s, g, b)`` (see the module docstring)."""
    size = ty.size_bytes()
    per_element = kind in ("layer", "rms")

    def build(fb, e) -> None:
        out, x, n, gp, bp, mu, s, g, b = range(9)
        p, end, block_end = (fb.add_local(I32) for _ in range(3))
        lo, hi, glo, ghi, blo, bhi, muv, sv, gv, bv = (fb.add_local(V128) for _ in range(10))
        y, y32 = fb.add_local(F64), fb.add_local(F32)

        def formula(value, gamma, beta, vector: bool) -> None:
            """Push y from the pushers of x (loaded), gamma and beta (None: absent)."""
            prefix = "f64x2" if vector else "f64"
            value()
            if kind != "rms":
                e.get(muv if vector else mu).op(f"{prefix}.sub")
            e.get(sv if vector else s).op(f"{prefix}.mul")
            gamma()
            e.op(f"{prefix}.mul")
            if beta is not None:
                beta()
                e.op(f"{prefix}.add")

        e.get(x).tee(p).get(n).i32(size).op("i32.mul").op("i32.add").set(end)
        for scalar, vector in ((mu, muv), (s, sv), (g, gv), (b, bv)):
            e.get(scalar).op("f64x2.splat").set(vector)
        if ty in VECTOR_TYPES:
            e.get(n).i32(-4).op("i32.and").i32(size).op("i32.mul").get(x).op("i32.add").set(block_end)

            def block() -> None:
                _load_chunk(e, ty, p, 0, lo, hi)
                if per_element:
                    _load_chunk(e, ty, gp, 0, glo, ghi)
                    if kind == "layer":
                        _load_chunk(e, ty, bp, 0, blo, bhi)
                for local, gl, bl in ((lo, glo, blo), (hi, ghi, bhi)):
                    formula(lambda: e.get(local), lambda: e.get(gl if per_element else gv),
                            None if kind == "rms" else (lambda: e.get(bl if kind == "layer" else bv)), True)
                    e.set(local)
                _store_chunk(e, ty, out, lo, hi)
                advance(e, (out, gp, bp) if per_element else (out,), 4 * size)

            e.while_below(p, block_end, 4 * size, block, labels=("blocks_done", "blocks"))

        def one() -> None:
            formula(lambda: _load_one(m, e, ty, p),
                    (lambda: _load_one(m, e, ty, gp)) if per_element else (lambda: e.get(g)),
                    None if kind == "rms" else ((lambda: _load_one(m, e, ty, bp)) if kind == "layer"
                                                else (lambda: e.get(b))), False)
            e.set(y)
            e.get(out)
            if ty is Type.F64:
                e.get(y).op("f64.store", 0)
            else:
                e.get(y).op("f32.demote_f64").set(y32)
                store_scalar(m, e, ty, y32)
            advance(e, (out, gp, bp) if per_element else (out,), size)

        e.while_below(p, end, size, one, labels=("tail_done", "tail"))

    return cached_function(m, f"norm_affine_{kind}_{ty.name.lower()}", (I32,) * 5 + (F64,) * 4, build)


def advance(e, pointers: tuple, nbytes: int) -> None:
    """Add ``nbytes`` to each i32 local of ``pointers``."""
    for pointer in pointers:
        e.get(pointer).i32(nbytes).op("i32.add").set(pointer)


def affine_f32_function(m, kind: str) -> int:
    """The index of ``norm_affine_<kind>_f32x4(out, x, n, gp, bp, mu, s)`` (``mu``, ``s`` f32): the ``layer`` or
    ``rms`` pass of an F32 row in f32x4, ``((x - mu) * s) * gamma[i] + beta[i]`` / ``(x * s) * weight[i]``
    with four roundings. The caller takes it only for a row whose f64 statistics keep every step inside
    f32's normal range (``coop_norm``: then each rounding is relative and the contract's bound holds)."""

    def build(fb, e) -> None:
        out, x, n, gp, bp, mu, s = range(7)
        p, end, block_end = (fb.add_local(I32) for _ in range(3))
        muv, sv = fb.add_local(V128), fb.add_local(V128)

        def formula(load, prefix: str, mu_local: int, s_local: int) -> None:
            load(p)
            if kind == "layer":
                e.get(mu_local).op(f"{prefix}.sub")
            e.get(s_local).op(f"{prefix}.mul")
            load(gp)
            e.op(f"{prefix}.mul")
            if kind == "layer":
                load(bp)
                e.op(f"{prefix}.add")

        e.get(x).tee(p).get(n).i32(4).op("i32.mul").op("i32.add").set(end)
        e.get(mu).op("f32x4.splat").set(muv)
        e.get(s).op("f32x4.splat").set(sv)
        e.get(n).i32(-4).op("i32.and").i32(4).op("i32.mul").get(x).op("i32.add").set(block_end)
        pointers = (out, gp, bp) if kind == "layer" else (out, gp)    # (p: while_below's)

        # four elements a step while four are left, then one by one
        for limit, nbytes, prefix, memory, mu_local, s_local, label in (
                (block_end, 16, "f32x4", "v128", muv, sv, "blocks"), (end, 4, "f32", "f32", mu, s, "tail")):
            def step(memory=memory, prefix=prefix, mu_local=mu_local, s_local=s_local, nbytes=nbytes) -> None:
                e.get(out)
                formula(lambda at: e.get(at).op(f"{memory}.load", 0), prefix, mu_local, s_local)
                e.op(f"{memory}.store", 0)
                advance(e, pointers, nbytes)

            e.while_below(p, limit, nbytes, step, labels=(f"{label}_done", label))

    return cached_function(m, f"norm_affine_{kind}_f32x4", (I32,) * 5 + (F32, F32), build)
