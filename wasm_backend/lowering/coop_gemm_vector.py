"""GEMV: the GEMMs with m == 1 or n == 1, bandwidth-bound, as their own kernel (no packing, no padded tiles).

One output vector (C's column when n == 1, C's row when m == 1) is a matrix M times a vector v, in one of two
forms by how M is stored:

* ``dot``: M's rows run along the depth (A when n == 1, Bᵀ when m == 1 and trans_b): each output is a dot
  product, DOT_ROWS rows at a time in f32x4 / f64x2 accumulators along the depth, a scalar tail, then a
  horizontal sum;
* ``axpy``: M's rows run along the outputs (Aᵀ stored k x m when n == 1 and trans_a, B when m == 1): the sums
  of a block of AXPY_BLOCK outputs stay in the scratch while M's row segments stream past in depth order,
  AXPY_ROWS rows per pass (sums += v[p] * M[p, block] for each, in p order), vectors then a scalar tail.

A vector that is not contiguous (a column of B, or of a transposed A) is first copied into the scratch. Each
block's sums go to a small buffer in the scratch and are written to C as ``alpha * sum + beta * C`` (C not
read when beta is 0), so every element is a sum of products in some order (one rounding per product with
``relaxed_madd``, two with mul + add) within the contract's bound, and ``k == 0`` gives ``alpha * 0 + beta *
C``. The driver ``name(a, b, c, scratch, lo, hi)`` computes outputs ``lo .. hi`` (global-free: threads may run
disjoint ranges with their own scratch, ``gemv_scratch_bytes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..encoding.types import ValType
from .coop_gemm_kernel import ELEMENTS, Element, GemmShape, cached_function

__all__ = ["GemvPlan", "gemv_plan", "gemv_scratch_bytes", "gemv_output_step", "build_gemv_driver",
           "AXPY_BLOCK", "AXPY_ROWS", "DOT_ROWS"]

I32, V128 = ValType.I32, ValType.V128
#: outputs per axpy block: their sums stay in the scratch (8 KiB of f32: in L1) while M's rows stream past
AXPY_BLOCK = 2048
#: rows of M per pass over an axpy block (one load and store of the sums per AXPY_ROWS products)
AXPY_ROWS = 4
#: rows per dot block (measured 4096x4096 f32, best of 12, loaded machine: 8 rows 0.45-0.71x NumPy, 4 rows 0.60,
#: 12 or 16 rows 0.30-0.34: registers run out)
DOT_ROWS = 8


@dataclass(frozen=True)
class GemvPlan:
    """How a GEMV shape runs: ``form`` (dot / axpy), the matrix operand (``"a"``/``"b"``), its stride in bytes
    between outputs (dot) or depth steps (axpy), the vector's stride in bytes, the outputs and C's stride
    between them (bytes)."""

    form: str
    matrix: str
    matrix_stride: int
    vector_stride: int
    outputs: int
    out_stride: int


def gemv_plan(shape: GemmShape) -> GemvPlan | None:
    """The GEMV plan of ``shape``, or None when neither m nor n is 1 (or A and B need converting: the blocked
    kernel converts them once, while packing)."""
    if shape.input_ty is not None:
        return None
    size = ELEMENTS[shape.ty].size
    if shape.n == 1:  # C's column = A (m x k) times B's column
        vector_stride = size if shape.trans_b else shape.ldb * size
        form = "axpy" if shape.trans_a else "dot"
        return GemvPlan(form, "a", shape.lda * size, vector_stride, shape.m, shape.ldc * size)
    if shape.m == 1:  # C's row = A's row times B (k x n)
        vector_stride = shape.lda * size if shape.trans_a else size
        form = "dot" if shape.trans_b else "axpy"
        return GemvPlan(form, "b", shape.ldb * size, vector_stride, shape.n, size)
    return None


def gemv_output_step(shape: GemmShape, plan: GemvPlan) -> int:
    """Output ranges handed to threads start at multiples of this: an output takes the same block code (fused
    vector or unfused scalar steps) whatever range it is in, so the bits do not depend on the thread count."""
    return ELEMENTS[shape.ty].lanes if plan.form == "axpy" else DOT_ROWS


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def gemv_scratch_bytes(shape: GemmShape) -> int:
    """Scratch bytes of one driver call: the vector's copy and one block of sums."""
    el = ELEMENTS[shape.ty]
    return _round_up(max(1, shape.k) * el.size, 16) + _round_up(max(AXPY_BLOCK, DOT_ROWS) * el.size, 16)


def _madd(e, el: Element, relaxed: bool, a: int, b_push, acc: int) -> None:
    """acc := a * b + acc (v128 locals; ``b_push`` pushes b)."""
    if relaxed:
        e.get(a)
        b_push()
        e.get(acc).op(f"{el.prefix}.relaxed_madd").set(acc)
    else:
        e.get(acc).get(a)
        b_push()
        e.op(f"{el.prefix}.mul").op(f"{el.prefix}.add").set(acc)


def _dot_rows(m, el: Element, rows: int, relaxed: bool) -> int:
    """``gemv_dot<rows>_<t>(mat, stride, vec, k, out)``: out[r] = sum_p mat[r*stride + p] * vec[p]."""

    def build(fb, e) -> None:
        mat, stride, vec, k, out = range(5)
        acc = [fb.add_local(V128) for _ in range(rows)]
        tail = [fb.add_local(el.valtype) for _ in range(rows)]
        row = [fb.add_local(I32) for _ in range(rows)]
        vv, p, whole = fb.add_local(V128), fb.add_local(I32), fb.add_local(I32)
        for r in range(rows):
            e.get(mat)
            if r:
                e.get(stride).i32(r).op("i32.mul").op("i32.add")
            e.set(row[r])
        e.get(k).i32(-el.lanes).op("i32.and").i32(el.size).op("i32.mul").set(whole)  # bytes of whole vectors
        e.i32(0).set(p)

        def vector_step() -> None:
            e.get(vec).get(p).op("i32.add").op("v128.load", 0).set(vv)
            for r in range(rows):
                _madd(e, el, relaxed, vv, lambda r=r: e.get(row[r]).get(p).op("i32.add").op("v128.load", 0), acc[r])

        e.while_below(p, whole, 16, vector_step, labels=("vectors_done", "vectors"))
        end = fb.add_local(I32)
        e.get(k).i32(el.size).op("i32.mul").set(end)

        def scalar_step() -> None:
            for r in range(rows):
                e.get(row[r]).get(p).op("i32.add").op(f"{el.scalar}.load", 0)
                e.get(vec).get(p).op("i32.add").op(f"{el.scalar}.load", 0)
                e.op(f"{el.scalar}.mul").get(tail[r]).op(f"{el.scalar}.add").set(tail[r])

        e.while_below(p, end, el.size, scalar_step, labels=("scalars_done", "scalars"))
        for r in range(rows):
            e.get(out)
            for lane in range(el.lanes):
                e.get(acc[r]).op(f"{el.prefix}.extract_lane", lane)
                if lane:
                    e.op(f"{el.scalar}.add")
            e.get(tail[r]).op(f"{el.scalar}.add").op(f"{el.scalar}.store", r * el.size)

    name = f"gemv_dot{rows}_{el.scalar}_{'r' if relaxed else 'p'}"
    return cached_function(m, name, (I32,) * 5, build)


def _axpy_rows(m, el: Element, rows: int, relaxed: bool) -> int:
    """``gemv_axpy<rows>_<t>(mat, ld, vec, sums, width)``: sums[j] += vec[r] * mat[r*ld + j] for r < rows, in r
    order, j < width (whole vectors, then scalars): one pass over ``rows`` contiguous row segments of M."""

    def build(fb, e) -> None:
        mat, ld, vec, sums, width = range(5)
        splats = [fb.add_local(V128) for _ in range(rows)]
        scalars = [fb.add_local(el.valtype) for _ in range(rows)]
        row = [fb.add_local(I32) for _ in range(rows)]
        acc, j, whole, end = fb.add_local(V128), fb.add_local(I32), fb.add_local(I32), fb.add_local(I32)
        for r in range(rows):
            e.get(vec).op(f"{el.scalar}.load", r * el.size).tee(scalars[r]).op(f"{el.prefix}.splat").set(splats[r])
            e.get(mat)
            if r:
                e.get(ld).i32(r).op("i32.mul").op("i32.add")
            e.set(row[r])
        e.get(width).i32(-el.lanes).op("i32.and").i32(el.size).op("i32.mul").set(whole)
        e.get(width).i32(el.size).op("i32.mul").set(end)
        e.i32(0).set(j)

        def vector_step() -> None:
            e.get(sums).get(j).op("i32.add").op("v128.load", 0).set(acc)
            for r in range(rows):
                _madd(e, el, relaxed, splats[r], lambda r=r: e.get(row[r]).get(j).op("i32.add").op("v128.load", 0), acc)
            e.get(sums).get(j).op("i32.add").get(acc).op("v128.store", 0)

        def scalar_step() -> None:
            e.get(sums).get(j).op("i32.add")
            e.get(sums).get(j).op("i32.add").op(f"{el.scalar}.load", 0)
            for r in range(rows):
                e.get(row[r]).get(j).op("i32.add").op(f"{el.scalar}.load", 0).get(scalars[r]).op(f"{el.scalar}.mul")
                e.op(f"{el.scalar}.add")
            e.op(f"{el.scalar}.store", 0)

        e.while_below(j, whole, 16, vector_step, labels=("vectors_done", "vectors"))
        e.while_below(j, end, el.size, scalar_step, labels=("scalars_done", "scalars"))

    name = f"gemv_axpy{rows}_{el.scalar}_{'r' if relaxed else 'p'}"
    return cached_function(m, name, (I32,) * 5, build)


def build_gemv_driver(m, name: str, shape: GemmShape, plan: GemvPlan, *, relaxed: bool = True,
                      export: bool = False) -> int:
    """Define ``name(a, b, c, scratch, lo, hi)``: outputs ``lo .. hi`` of the GEMV ``plan`` of ``shape`` (byte
    addresses of element 0 of A, B, C and of ``gemv_scratch_bytes(shape)`` bytes of 16-byte aligned scratch).
    Returns its function index."""
    el = ELEMENTS[shape.ty]
    size = el.size
    vec_bytes = _round_up(max(1, shape.k) * size, 16)
    scalar = el.scalar

    def build(fb, e) -> None:
        a, b, c, scratch, lo, hi = range(6)
        mat, vec = (a, b) if plan.matrix == "a" else (b, a)
        o, q, out_at, width, sums = (fb.add_local(I32) for _ in range(5))
        e.get(scratch).i32(vec_bytes).op("i32.add").set(sums)
        if plan.vector_stride != size:  # a strided vector: copied to the scratch, contiguous
            e.i32(0).set(q)
            end = fb.add_local(I32)
            e.i32(shape.k).set(end)
            e.while_below(q, end, 1, lambda: (
                e.get(scratch).get(q).i32(size).op("i32.mul").op("i32.add")
                .get(vec).get(q).i32(plan.vector_stride).op("i32.mul").op("i32.add").op(f"{scalar}.load", 0)
                .op(f"{scalar}.store", 0)), labels=("copy_done", "copy"))
            e.get(scratch).set(vec)
        e.get(lo).set(o)
        if plan.form == "dot":
            _dot_driver(m, e, el, shape, plan, relaxed, mat, vec, c, o, hi, out_at, sums)
            return
        rows = {r: _axpy_rows(m, el, r, relaxed) for r in (AXPY_ROWS, 1)}

        def block() -> None:
            e.get(hi).get(o).op("i32.sub").i32(AXPY_BLOCK).get(hi).get(o).op("i32.sub").i32(AXPY_BLOCK)
            e.op("i32.lt_u").op("select").set(width)
            e.get(sums).i32(0).get(width).i32(size).op("i32.mul").op("memory.fill", 0)
            e.i32(0).set(q)
            for r, function in rows.items():
                def pass_(r=r, function=function) -> None:
                    e.get(mat).get(o).i32(size).op("i32.mul").op("i32.add").get(q).i32(plan.matrix_stride)
                    e.op("i32.mul").op("i32.add").i32(plan.matrix_stride)
                    e.get(vec).get(q).i32(size).op("i32.mul").op("i32.add").get(sums).get(width).call(function)
                    e.get(q).i32(r).op("i32.add").set(q)

                with e.block(f"r{r}_done"):
                    with e.loop(f"r{r}"):
                        e.get(q).i32(r).op("i32.add").i32(shape.k).op("i32.gt_u").br_if(f"r{r}_done")
                        pass_()
                        e.br(f"r{r}")
            _write_loop(e, fb, el, shape, plan, c, o, out_at, sums, width)

        e.while_below(o, hi, AXPY_BLOCK, block, labels=("blocks_done", "blocks"))

    return cached_function(m, name, (I32,) * 6, build, export=export)


def _dot_driver(m, e, el: Element, shape: GemmShape, plan: GemvPlan, relaxed: bool, mat: int, vec: int, c: int,
                o: int, hi: int, out_at: int, sums: int) -> None:
    """Outputs ``o .. hi`` as dot products, DOT_ROWS at a time, then one at a time."""
    for width in (DOT_ROWS, 1):
        function = _dot_rows(m, el, width, relaxed)
        label = f"w{width}"
        with e.block(f"{label}_done"):
            with e.loop(label):
                e.get(o).i32(width).op("i32.add").get(hi).op("i32.gt_u").br_if(f"{label}_done")
                e.get(mat).get(o).i32(plan.matrix_stride).op("i32.mul").op("i32.add").i32(plan.matrix_stride)
                e.get(vec).i32(shape.k).get(sums).call(function)
                _write_sums(e, el, shape, plan, c, o, out_at, sums, width)
                e.get(o).i32(width).op("i32.add").set(o)
                e.br(label)


def _write_loop(e, fb, el: Element, shape: GemmShape, plan: GemvPlan, c: int, o: int, out_at: int, sums: int,
                width: int) -> None:
    """C[o + j] = alpha * sums[j] (+ beta * C[o + j]) for j < width (a loop; C's stride applied)."""
    scalar = el.scalar
    j, at = fb.add_local(ValType.I32), fb.add_local(ValType.I32)
    e.get(c).get(o).i32(plan.out_stride).op("i32.mul").op("i32.add").set(out_at)
    e.get(sums).set(at)
    e.i32(0).set(j)

    def one() -> None:
        e.get(out_at)
        e.get(at).op(f"{scalar}.load", 0).op(f"{scalar}.const", shape.alpha).op(f"{scalar}.mul")
        if shape.beta != 0.0:
            e.get(out_at).op(f"{scalar}.load", 0).op(f"{scalar}.const", shape.beta).op(f"{scalar}.mul")
            e.op(f"{scalar}.add")
        e.op(f"{scalar}.store", 0)
        e.get(out_at).i32(plan.out_stride).op("i32.add").set(out_at)
        e.get(at).i32(el.size).op("i32.add").set(at)

    e.while_below(j, width, 1, one, labels=("write_done", "write"))


def _write_sums(e, el: Element, shape: GemmShape, plan: GemvPlan, c: int, o: int, out_at: int, sums: int,
                width: int) -> None:
    """C[o + q] = alpha * sums[q] (+ beta * C[o + q]) for q < width (C's stride between outputs applied)."""
    scalar = el.scalar
    e.get(c).get(o).i32(plan.out_stride).op("i32.mul").op("i32.add").set(out_at)
    for j in range(width):
        e.get(out_at)
        e.get(sums).op(f"{scalar}.load", j * el.size).op(f"{scalar}.const", shape.alpha).op(f"{scalar}.mul")
        if shape.beta != 0.0:
            e.get(out_at).op(f"{scalar}.load", j * plan.out_stride).op(f"{scalar}.const", shape.beta)
            e.op(f"{scalar}.mul").op(f"{scalar}.add")
        e.op(f"{scalar}.store", j * plan.out_stride)
