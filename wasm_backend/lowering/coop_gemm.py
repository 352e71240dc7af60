"""GEMM, BatchedGEMM and MixedPrecisionGEMM: the cooperative rules, on the kernels of ``coop_gemm_kernel``.

The cooperative function checks A, B and C over their extents (the table's, ``array_operands``: handle,
bounds, alignment, in operand order) and runs the kernel's driver ``gemm_kernel_<index>(a, b, c, scratch,
lo, hi)`` over all rows of C (a GEMV shape, m or n 1: over its outputs, ``coop_gemm_vector``), once per
batch item (item ``i`` at ``i * stride`` elements; a stride of 0 means packed: the stored rows times the
leading dimension). The packing scratch is part of the per-launch area (``LaunchLayout.coop_scratch``),
sized at compile time from the largest GEMM of the program (``cooperative_rule(..., scratch=...)``): never
a user's buffer or pool, and never grown at run time.

A module compiled for several threads imports ``env.parallel_gemm(instruction, a, b, c) -> status``: for a
GEMM item of at least ``thread_policy.PARALLEL_GEMM_THRESHOLD`` multiply-adds the host runs the exported
driver over row ranges (multiples of the register tile's rows, or of a GEMV's block step) on its threads;
for a BatchedGEMM whose items are smaller but add up to the threshold, over ranges of whole items. Each
range gets scratch of its own taken from the arena (once per launch); the host answers 1 when it has no
scratch to give, and the module then runs it in one call. Every element of C is computed by the same code
on whichever thread computes it, so the bits do not depend on the thread count.

Types: F32 and F64 (f32x4 / f64x2); MixedPrecisionGEMM's F16/BF16 A and B are converted to f32 (exactly)
while packed, and run the F32 kernel. Element sums are in C's type with one rounding per product
(relaxed_madd, fused where the engine has FMA) or two (mul, add); the contract's bound holds for both.
"""

from __future__ import annotations

from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_GEMM_THRESHOLD
from .coop_context import COOP_OK, CoopContext
from .coop_gemm_kernel import (
    DEFAULT_TILING, ELEMENTS, TILINGS, GemmShape, build_gemm_driver, round16, row_step, scratch_bytes,
)
from .coop_gemm_vector import build_gemv_driver, gemv_output_step, gemv_plan, gemv_scratch_bytes
from .module_context import HOST_IMPORTS
from .rules import cooperative_rule

__all__ = ["GEMM_TYPES", "GEMM_ROWS", "THREADED_ROWS", "gemm_shape", "gemm_kernel_name", "parallel_gemm_wanted",
           "gemm_parallel", "gemm_scratch_bytes", "threaded_gemm", "build_driver", "driver_outputs",
           "driver_scratch_bytes", "call_driver", "DriverContext", "threaded_units", "unit_block_bytes",
           "units_parallel"]

I32 = ValType.I32
#: the element types the kernel computes
GEMM_TYPES = frozenset(ELEMENTS)

HOST_IMPORTS.setdefault("parallel_gemm", ((I32,) * 4, (I32,)))


def _element_types(instr) -> dict[str, Type]:
    """The element type of each matrix operand (the table's: C's is the arithmetic's)."""
    return {array.name: array.ty for array in array_operands(instr)}


def gemm_shape(instr) -> GemmShape:
    """The kernel's shape of a GEMM, BatchedGEMM or MixedPrecisionGEMM instruction (leading dimensions 0 resolved
    to packed; alpha 0 when k is 0; A's and B's type as ``input_ty`` where it is not C's)."""
    m, n, k = instr.m, instr.n, instr.k
    types = _element_types(instr)
    lda = instr.lda or (m if instr.trans_a else k)
    ldb = instr.ldb or (k if instr.trans_b else n)
    ldc = instr.ldc or n
    # k == 0: C = beta * C, as the reference: alpha times the empty sum is not formed (alpha = inf gives no NaN,
    # a negative alpha no -0), so the kernel's alpha * 0 is made +0 * 0
    alpha = float(instr.alpha) if k else 0.0
    return GemmShape(types["c"], m, n, k, bool(instr.trans_a), bool(instr.trans_b), lda, ldb, ldc, alpha,
                     float(instr.beta), None if types["a"] is types["c"] else types["a"])


def gemm_kernel_name(index: int) -> str:
    """The export name of the driver of the GEMM at instruction ``index``."""
    return f"gemm_kernel_{index}"


def _outputs(instr) -> tuple[int, int]:
    """driver_outputs of the instruction's shape."""
    return driver_outputs(gemm_shape(instr))


def driver_outputs(shape: GemmShape) -> tuple[int, int]:
    """(the rows of C the driver's ``lo .. hi`` range over, the step range starts are multiples of): for a GEMV
    shape (m or n is 1) the outputs of ``coop_gemm_vector``, else C's rows in whole register tiles."""
    plan = gemv_plan(shape)
    if plan is not None:
        return plan.outputs, gemv_output_step(shape, plan)
    return shape.m, row_step(TILINGS[shape.ty])


def gemm_parallel(instr) -> tuple[str, int, int] | None:
    """How the GEMM ``instr`` is cut over threads: ``("rows", outputs, step)`` (each batch item's rows or GEMV
    outputs, when an item has at least PARALLEL_GEMM_THRESHOLD multiply-adds), ``("items", batch, 1)`` (whole
    items, when only their total reaches it), or None (one thread)."""
    items, _ = _items(instr)
    per_item = instr.m * instr.n * instr.k
    outputs, step = _outputs(instr)
    if per_item >= PARALLEL_GEMM_THRESHOLD and outputs > step:
        return "rows", outputs, step
    if items > 1 and per_item * items >= PARALLEL_GEMM_THRESHOLD:
        return "items", items, 1
    return None


def parallel_gemm_wanted(parallel: bool, instr) -> bool:
    """Whether the GEMM-like ``instr`` (a row of THREADED_ROWS) of a module compiled for several threads may call
    ``env.parallel_gemm``."""
    rule = THREADED_ROWS.get(instr.INFO.name)
    return parallel and rule is not None and rule[0](instr) is not None


def threaded_gemm(instr) -> tuple[int, int, int]:
    """(the count its ``lo .. hi`` ranges cover, range step, scratch bytes per thread) of a THREADED_ROWS
    instruction that ``parallel_gemm_wanted``."""
    cut, scratch = THREADED_ROWS[instr.INFO.name]
    return (*cut(instr)[1:], scratch(instr))


def _items(instr) -> tuple[int, tuple[int, int, int]]:
    """(batch items, BYTE strides of A, B, C between items) of a GEMM (one item) or BatchedGEMM; a stride of 0
    means packed: the stored rows times the leading dimension (the row's ``matrices`` extent)."""
    if not hasattr(instr, "batch"):
        return 1, (0, 0, 0)
    shape = gemm_shape(instr)
    packed = ((shape.k if shape.trans_a else shape.m) * shape.lda, (shape.n if shape.trans_b else shape.k) * shape.ldb,
              shape.m * shape.ldc)
    strides = (instr.stride_a, instr.stride_b, instr.stride_c)
    sizes = (shape.input_size, shape.input_size, shape.ty.size_bytes())
    return instr.batch, tuple((stride or item) * size for stride, item, size in zip(strides, packed, sizes))


def gemm_scratch_bytes(instr) -> int:
    """Scratch bytes the kernel of ``instr`` needs in the per-launch area (per thread)."""
    return driver_scratch_bytes(gemm_shape(instr))


def driver_scratch_bytes(shape: GemmShape) -> int:
    """Scratch bytes the driver of ``shape`` (build_driver) needs."""
    return scratch_bytes(shape) if gemv_plan(shape) is None else gemv_scratch_bytes(shape)


def build_driver(m, name: str, shape: GemmShape, export: bool) -> int:
    """The driver ``name(a, b, c, scratch, lo, hi)`` of ``shape`` (the GEMV kernel for m or n 1, else the blocked
    one) over C's rows (GEMV: outputs) ``lo .. hi``; returns its function index."""
    plan = gemv_plan(shape)
    if plan is None:
        return build_gemm_driver(m, name, shape, export=export)
    return build_gemv_driver(m, name, shape, plan, relaxed=DEFAULT_TILING.relaxed, export=export)


def _items_function(m, name: str, driver: int, outputs: int, strides: tuple[int, int, int], export: bool) -> int:
    """``name(a, b, c, scratch, lo, hi)``: the driver over all of its rows for batch items ``lo .. hi``."""
    fb, e = m.define(name, (I32,) * 6, (), export=export)
    a, b, c, scratch, lo, hi = range(6)
    item = fb.add_local(I32)
    e.get(lo).set(item)

    def one_item() -> None:
        for pointer, stride in zip((a, b, c), strides):
            e.get(pointer).get(item).i32(stride).op("i32.mul").op("i32.add")
        e.get(scratch).i32(0).i32(outputs).call(driver)

    e.while_below(item, hi, 1, one_item, labels=("items_done", "items"))
    return fb.index


def _build(cc: CoopContext) -> None:
    instr = cc.instr
    m = cc.m
    cut = gemm_parallel(instr) if "parallel_gemm" in m.imports else None
    mode = cut[0] if cut else None
    name = gemm_kernel_name(cc.index)
    driver = build_driver(m, name if mode == "rows" else f"{name}_item", gemm_shape(instr), mode == "rows")
    outputs = _outputs(instr)[0]
    items, strides = _items(instr)
    all_items = _items_function(m, name if mode == "items" else f"{name}_items", driver, outputs, strides,
                                mode == "items")
    # checked in operand order (c, a, b), as the reference checks them: the first bad one traps
    checked = {array.name: cc.array(array.name, array.ty, array.elements) for array in array_operands(instr)}
    a, b, c = checked["a"], checked["b"], checked["c"]
    e = cc.e
    scratch = cc.local(I32)
    cc.launch_base()
    e.i32(cc.launch.coop_scratch).op("i32.add").set(scratch)
    if mode == "rows":  # item by item, each item's rows over the threads
        item, count = cc.local(I32), cc.local(I32)
        e.i32(0).set(item)
        e.i32(items).set(count)

        def one_item() -> None:
            e.i32(cc.index).get(a).get(b).get(c).call(m.host("parallel_gemm"))
            with e.if_():  # 1: the host had no scratch for its threads
                e.get(a).get(b).get(c).get(scratch).i32(0).i32(outputs).call(driver)
            for pointer, stride in zip((a, b, c), strides):
                e.get(pointer).i32(stride).op("i32.add").set(pointer)

        e.while_below(item, count, 1, one_item, labels=("items_done", "items"))
        e.i32(COOP_OK)
        return
    if mode == "items":  # whole items over the threads
        e.i32(cc.index).get(a).get(b).get(c).call(m.host("parallel_gemm")).op("i32.eqz")
        with e.if_():
            e.i32(COOP_OK).op("return")
    e.get(a).get(b).get(c).get(scratch).i32(0).i32(items).call(all_items)
    e.i32(COOP_OK)


def call_driver(cc: CoopContext, driver: int, operands: tuple[int, int, int], scratch: int, count: int,
                threaded: bool) -> None:
    """Emit the run of ``driver(a, b, c, scratch, lo, hi)`` over ``0 .. count`` and COOP_OK: when ``threaded`` (the
    module imports ``env.parallel_gemm`` and the driver is exported as ``gemm_kernel_<index>``) through the host,
    which runs ranges of it on its threads (each range with scratch of its own), else, or when the host had no
    scratch for them, in one call with ``scratch``. ``operands`` and ``scratch``: i32 locals."""
    e = cc.e
    a, b, c = operands
    if threaded:
        e.i32(cc.index).get(a).get(b).get(c).call(cc.m.host("parallel_gemm")).op("i32.eqz")
        with e.if_():
            e.i32(COOP_OK).op("return")
    e.get(a).get(b).get(c).get(scratch).i32(0).i32(count).call(driver)
    e.i32(COOP_OK)


class DriverContext:
    """What a kernel emitter takes from a CoopContext (``m``, ``e``, ``instr``, ``index``, ``local``), for the body
    of a driver function ``fb`` instead of the cooperative function."""

    def __init__(self, cc: CoopContext, fb, e) -> None:
        self.m, self.e, self.instr, self.index, self.fb = cc.m, e, cc.instr, cc.index, fb

    def local(self, valtype: ValType, name: str | None = None) -> int:
        return self.fb.add_local(valtype, name)


def unit_block_bytes(count: int) -> int:
    """The bytes of the parameter block of ``threaded_units`` for ``count`` arrays (16-byte multiple)."""
    return round16(4 * count)


def threaded_units(cc: CoopContext, arrays: dict[str, int], count: int, threaded: bool, emit) -> None:
    """Emit a kernel that runs over ``count`` independent units (rows, heads) as the driver
    ``gemm_kernel_<index>(block, 0, 0, scratch, lo, hi)`` run by ``call_driver``: the addresses of ``arrays``
    (name -> i32 local of the cooperative function, checked) are stored in a parameter block at the start of the
    per-launch scratch (``unit_block_bytes`` of them; the one-thread run's scratch follows it), the driver loads
    them into locals of its own and ``emit(ctx, pointers, scratch, lo, hi)`` writes its body (a DriverContext,
    name -> local, and the i32 locals of its scratch and unit range). Every unit is computed by the same code on
    any thread, so the bits do not depend on the thread count."""
    m, e = cc.m, cc.e
    names = list(arrays)
    fb, body = m.define(gemm_kernel_name(cc.index), (I32,) * 6, (), export=threaded)
    block, _, _, scratch, lo, hi = range(6)
    pointers = {}
    for k, name in enumerate(names):
        pointers[name] = fb.add_local(I32)
        body.get(block).op("i32.load", 4 * k).set(pointers[name])
    emit(DriverContext(cc, fb, body), pointers, scratch, lo, hi)
    params, zero, own = cc.local(I32), cc.local(I32), cc.local(I32)
    cc.launch_base()
    e.i32(cc.launch.coop_scratch).op("i32.add").set(params)
    for k, name in enumerate(names):
        e.get(params).get(arrays[name]).op("i32.store", 4 * k)
    e.get(params).i32(unit_block_bytes(len(names))).op("i32.add").set(own)
    e.i32(0).set(zero)
    call_driver(cc, fb.index, (params, zero, zero), own, count, threaded)


def units_parallel(units: int, work: int, threshold: int) -> tuple[str, int, int] | None:
    """``("rows", units, 1)`` when there are several units and ``work`` reaches ``threshold``, else None."""
    return ("rows", units, 1) if units > 1 and work >= threshold else None


#: the rows this kernel runs (each may call ``env.parallel_gemm``) -> the types (of the row) it compiles for
GEMM_ROWS = {"GEMM": GEMM_TYPES, "BatchedGEMM": GEMM_TYPES, "MixedPrecisionGEMM": (Type.F16, Type.BF16)}
#: every row whose kernel may call ``env.parallel_gemm`` (the host runs its exported driver ``gemm_kernel_<index>(a,
#: b, c, scratch, lo, hi)`` over ranges) -> (instr -> ``(mode, count, step)`` or None: how it is cut, instr ->
#: scratch bytes per range); other kernel modules (``coop_qgemm``) add their rows
THREADED_ROWS: dict = {}
for _name, _types in GEMM_ROWS.items():
    cooperative_rule(_name, _types, scratch=gemm_scratch_bytes)(_build)
    THREADED_ROWS[_name] = (gemm_parallel, gemm_scratch_bytes)

