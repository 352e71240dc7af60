"""SparseGEMM (CSR A times dense B, F32 and F64): the cooperative rule and its row kernels.

The step, as docs/semantics.md (Matrix kernels) and the reference say, before anything is written:

1. C, a_ptr and B are checked over their extents (handle, bounds, alignment), in operand order;
2. the value count ``a_ptr[m]`` is read and a_values and a_indices are checked over that many elements
   (a count past an allocation traps OUT_OF_BOUNDS, so nothing is read outside an array);
3. the CSR: the first ``i`` with ``a_ptr[i] < a_ptr[i-1]`` traps INVALID_SPARSE (operand a_ptr, value
   a_ptr[i], extent i, limit a_ptr[i-1]); then the first entry ``a_ptr[0] <= e < a_ptr[m]`` with
   ``a_indices[e] >= k`` (operand a_indices, value, extent e, limit k). Indices are scanned four at a time
   (``i32x4.ge_u``), the failing group again one by one for the first. A trap writes nothing.

Then each row i of C: ``alpha * sum_e a_values[e] * B[a_indices[e], :] + beta * C[i, :]`` over the row's
entries in order, the columns in chunks of ``CHUNK`` vectors kept in registers (then single vectors, then
scalars for the last columns), products added with ``relaxed_madd`` (one rounding where the engine fuses,
two elsewhere: the contract's bound holds for both). An empty row gives ``beta * C`` (0 when beta is 0: C
is not read then). With the pointers non-decreasing and the indices below k, every entry a row reads lies
in ``a_ptr[0] .. a_ptr[m]`` and every B row below k: inside the checked arrays.
"""

from __future__ import annotations

from atlas_web.errors import TrapCode
from atlas_web.isa.extents import matrix_extent
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from .coop_context import COOP_OK, CoopContext
from .coop_gemm_kernel import ELEMENTS, Element, cached_function
from .rules import cooperative_rule
from .trap_numbers import u32

__all__ = ["SPARSE_TYPES", "CHUNK"]

I32, I64, V128 = ValType.I32, ValType.I64, ValType.V128
SPARSE_TYPES = frozenset({Type.F32, Type.F64})
#: v128 accumulators per pass over a row's entries
CHUNK = 8


def _chunk(m, name: str, el: Element, vectors: int, ldb: int, alpha: float, beta: float) -> int:
    """``name(vals, idx, e0, e1, bcol, out, empty)``: ``vectors`` v128 of C's row at ``out`` (0: one scalar) from
    the entries e0 .. e1 and B's columns from ``bcol`` (B's row r at ``bcol + r * ldb`` bytes)."""
    scalar = vectors == 0

    def build(fb, e) -> None:
        vals, idx, e0, e1, bcol, out, empty = range(7)
        width = max(1, vectors)
        acc = [fb.add_local(el.valtype if scalar else V128) for _ in range(width)]
        s, row = fb.add_local(el.valtype if scalar else V128), fb.add_local(I32)
        load = f"{el.scalar}.load" if scalar else "v128.load"

        def entry() -> None:
            e.get(vals).get(e0).i32(el.size).op("i32.mul").op("i32.add").op(f"{el.scalar}.load", 0)
            if not scalar:
                e.op(f"{el.prefix}.splat")
            e.set(s)
            e.get(idx).get(e0).i32(4).op("i32.mul").op("i32.add").op("i32.load", 0).i32(ldb).op("i32.mul")
            e.get(bcol).op("i32.add").set(row)
            for j in range(width):
                if scalar:
                    e.get(s).get(row).op(load, 0).op(f"{el.scalar}.mul").get(acc[j]).op(f"{el.scalar}.add")
                else:
                    e.get(s).get(row).op(load, 16 * j).get(acc[j]).op(f"{el.prefix}.relaxed_madd")
                e.set(acc[j])

        e.while_below(e0, e1, 1, entry, labels=("entries_done", "entries"))
        kind = el.scalar if scalar else el.prefix
        for j in range(width):
            e.get(out)
            e.get(empty)
            with e.if_(blocktype=el.valtype if scalar else V128):
                e.op(f"{el.scalar}.const", 0.0)
                if not scalar:
                    e.op(f"{el.prefix}.splat")
                e.else_()
                e.get(acc[j]).op(f"{el.scalar}.const", alpha)
                if not scalar:
                    e.op(f"{el.prefix}.splat")
                e.op(f"{kind}.mul")
            if beta != 0.0:
                e.get(out).op(load, 16 * j).op(f"{el.scalar}.const", beta)
                if not scalar:
                    e.op(f"{el.prefix}.splat")
                e.op(f"{kind}.mul").op(f"{kind}.add")
            e.op("v128.store" if not scalar else f"{el.scalar}.store", 16 * j)

    return cached_function(m, name, (I32,) * 7, build)


def _driver(m, name: str, instr) -> int:
    """``name(c, vals, idx, ptr, b, lo, hi)``: rows lo .. hi of C (the CSR already checked)."""
    el = ELEMENTS[instr.ty]
    n = instr.n
    ldb, ldc = (instr.ldb or n) * el.size, (instr.ldc or n) * el.size
    alpha, beta = float(instr.alpha), float(instr.beta)
    widths = [(CHUNK, CHUNK * el.lanes), (1, el.lanes), (0, 1)]
    chunks = {v: _chunk(m, f"{name}_w{v}", el, v, ldb, alpha, beta) for v, _ in widths}

    def build(fb, e) -> None:
        c, vals, idx, ptr, b, lo, hi = range(7)
        i, col, out, e0, e1, empty = (fb.add_local(I32) for _ in range(6))
        e.get(lo).set(i)

        def row() -> None:
            e.get(ptr).get(i).i32(4).op("i32.mul").op("i32.add").tee(e0).op("i32.load", 4).set(e1)
            e.get(e0).op("i32.load", 0).tee(e0).get(e1).op("i32.eq").set(empty)
            e.get(c).get(i).i32(ldc).op("i32.mul").op("i32.add").set(out)
            e.i32(0).set(col)
            for vectors, columns in widths:
                label = f"w{vectors}"
                with e.block(f"{label}_done"):
                    with e.loop(label):
                        e.get(col).i32(columns).op("i32.add").i32(n).op("i32.gt_u").br_if(f"{label}_done")
                        e.get(vals).get(idx).get(e0).get(e1)
                        e.get(b).get(col).i32(el.size).op("i32.mul").op("i32.add")
                        e.get(out).get(empty).call(chunks[vectors])
                        e.get(out).i32(columns * el.size).op("i32.add").set(out)
                        e.get(col).i32(columns).op("i32.add").set(col)
                        e.br(label)

        e.while_below(i, hi, 1, row, labels=("rows_done", "rows"))

    return cached_function(m, name, (I32,) * 7, build)


@cooperative_rule("SparseGEMM", SPARSE_TYPES)
def _build(cc: CoopContext) -> None:
    instr, m, e = cc.instr, cc.m, cc.e
    driver = _driver(m, f"spgemm_kernel_{cc.index}", instr)
    mm, n, k = instr.m, instr.n, instr.k
    c = cc.array("c", instr.ty, matrix_extent(mm, n, instr.ldc))
    ptr = cc.array("a_ptr", Type.U32, mm + 1)
    b = cc.array("b", instr.ty, matrix_extent(k, n, instr.ldb))
    count = cc.local(I32)
    e.get(ptr).op("i32.load", 4 * mm).set(count)
    vals = cc.array("a_values", instr.ty, lambda: e.get(count).op("i64.extend_i32_u"))
    idx = cc.array("a_indices", Type.U32, lambda: e.get(count).op("i64.extend_i32_u"))
    _check_pointers(cc, ptr, mm)
    _check_indices(cc, ptr, idx, count, k)
    if mm and n:
        e.get(c).get(vals).get(idx).get(ptr).get(b).i32(0).i32(mm).call(driver)
    e.i32(COOP_OK)


def _check_pointers(cc: CoopContext, ptr: int, m: int) -> None:
    """The first i in 1..m with a_ptr[i] < a_ptr[i-1] traps INVALID_SPARSE."""
    e = cc.e
    i, at, value, previous, end = (cc.local(I32) for _ in range(5))
    e.i32(1).set(i)
    e.i32(m + 1).set(end)
    e.get(ptr).set(at)

    def step() -> None:
        e.get(at).op("i32.load", 0).tee(previous).get(at).op("i32.load", 4).tee(value).op("i32.gt_u")
        cc.trap_if(TrapCode.INVALID_SPARSE, (cc.operand("a_ptr"), 0, u32(value), u32(i), u32(previous)))
        e.get(at).i32(4).op("i32.add").set(at)   # (while_below steps i)

    e.while_below(i, end, 1, step, labels=("pointers_done", "pointers"))


def _check_indices(cc: CoopContext, ptr: int, idx: int, count: int, k: int) -> None:
    """The first entry a_ptr[0] <= e < count with a_indices[e] >= k traps INVALID_SPARSE: four at a time
    while none fails, then one by one from the failing group."""
    e = cc.e
    at, whole, value = (cc.local(I32) for _ in range(3))
    limit = cc.local(V128)
    e.i32(k).op("i32x4.splat").set(limit)
    e.get(ptr).op("i32.load", 0).set(at)
    e.get(count).get(at).op("i32.sub").i32(-4).op("i32.and").get(at).op("i32.add").set(whole)
    with e.block("groups_done"):
        with e.loop("groups"):
            e.get(at).get(whole).op("i32.ge_u").br_if("groups_done")
            e.get(idx).get(at).i32(4).op("i32.mul").op("i32.add").op("v128.load", 0).get(limit).op("i32x4.ge_u")
            e.op("v128.any_true").br_if("groups_done")
            e.get(at).i32(4).op("i32.add").set(at)
            e.br("groups")

    def one() -> None:
        e.get(idx).get(at).i32(4).op("i32.mul").op("i32.add").op("i32.load", 0).tee(value).i32(k).op("i32.ge_u")
        cc.trap_if(TrapCode.INVALID_SPARSE, (cc.operand("a_indices"), 0, u32(value), u32(at), k))

    e.while_below(at, count, 1, one, labels=("indices_done", "indices"))
