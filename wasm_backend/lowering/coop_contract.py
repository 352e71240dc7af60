"""TensorContract (F32, F64): the cooperative rule, one GEMM over reordered axes on the kernels of ``coop_gemm``.

``atlas_web.isa.contraction.gemm_plan`` says how the contraction is the m x k by k x n product of A ordered
(free axes, paired axes) and B ordered (paired, free): each operand is read in place where its stored order is
already that layout (the GEMM as is) or its transpose (the GEMM's ``trans_a``/``trans_b``), and is otherwise
copied into that order first, by loops generated from the (compile-time) shapes: axes of size 1 dropped,
axes contiguous in both orders merged, a contiguous innermost run moved with ``memory.copy``, bits unchanged.
The copies go to the per-launch scratch after the GEMM driver's own (``contract_scratch_bytes``: never a
user's buffer, sized at compile time). The output is the GEMM's C (m x n, packed), so alpha, beta, the
accumulation (``relaxed_madd``, blocked; the GEMV kernel where m or n is 1) and k == 0 are GEMM's.

The step checks output, a and b over their extents in operand order (as the reference) before anything is
written; an empty output reads and writes nothing more. Natively a product of at least PARALLEL_GEMM_THRESHOLD
multiply-adds runs its rows on the host's threads through ``env.parallel_gemm`` (``coop_gemm.THREADED_ROWS``: the
copies made once, each thread with packing scratch of its own), bit for bit as on one thread.
"""

from __future__ import annotations

from atlas_web.isa.contraction import OperandLayout, gemm_plan, size
from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_GEMM_THRESHOLD
from .coop_context import COOP_OK, CoopContext
from .coop_gemm import (
    THREADED_ROWS, build_driver, call_driver, driver_outputs, driver_scratch_bytes, gemm_kernel_name,
)
from .coop_gemm_kernel import GemmShape, round16
from .rules import cooperative_rule

__all__ = ["CONTRACT_TYPES", "contract_gemm_shape", "contract_scratch_bytes", "copy_loops", "contract_parallel",
           "contract_thread_scratch"]

I32 = ValType.I32
CONTRACT_TYPES = frozenset({Type.F32, Type.F64})


def contract_gemm_shape(instr) -> GemmShape:
    """The GEMM of ``instr``'s plan: packed leading dimensions (a copied operand is packed in the GEMM's
    order), C the packed m x n output, alpha 0 when k is 0 (the empty sum is not multiplied, as GEMM)."""
    plan = gemm_plan(instr.shape_a, instr.shape_b, instr.contract_dims)
    m, n, k = plan.m, plan.n, plan.k
    lda = max(1, m if plan.a.transposed else k)
    ldb = max(1, k if plan.b.transposed else n)
    return GemmShape(instr.ty, m, n, k, plan.a.transposed, plan.b.transposed, lda, ldb, max(1, n),
                     float(instr.alpha) if k else 0.0, float(instr.beta))


def _copy_sizes(instr) -> tuple[int, int]:
    """Scratch bytes of the copies of A and B (0 for an operand read in place), 16-byte multiples."""
    plan = gemm_plan(instr.shape_a, instr.shape_b, instr.contract_dims)
    size_bytes = instr.ty.size_bytes()
    return (round16(size(instr.shape_a) * size_bytes) if plan.a.copied else 0,
            round16(size(instr.shape_b) * size_bytes) if plan.b.copied else 0)


def contract_scratch_bytes(instr) -> int:
    """Per-launch scratch bytes: the GEMM driver's, then the copies of A and B."""
    return round16(driver_scratch_bytes(contract_gemm_shape(instr))) + sum(_copy_sizes(instr))


def copy_loops(shape: tuple, layout: OperandLayout, element: int) -> list[tuple[int, int]]:
    """The loops copying a tensor of ``shape`` into the axis order ``layout.order``, outermost first: (count,
    source stride in bytes); the destination is written in order. Axes of size 1 are dropped; an axis whose
    source stride is the next one's count times its stride is merged into it."""
    strides, step = [0] * len(shape), element
    for axis in range(len(shape) - 1, -1, -1):
        strides[axis], step = step, step * shape[axis]
    loops: list[tuple[int, int]] = []
    for axis in layout.order:
        if shape[axis] == 1:
            continue
        count, stride = shape[axis], strides[axis]
        if loops and loops[-1][1] == count * stride:
            loops[-1] = (loops[-1][0] * count, stride)
        else:
            loops.append((count, stride))
    return loops or [(1, element)]


def _emit_copy(cc: CoopContext, src: int, dst: int, loops: list[tuple[int, int]], element: int) -> None:
    """Copy through ``loops`` from the address in local ``src`` to the one in ``dst`` (dst is advanced)."""
    e = cc.e
    load, store = ("i32.load", "i32.store") if element == 4 else ("i64.load", "i64.store")

    def level(depth: int, start: int) -> None:
        count, stride = loops[depth]
        if depth == len(loops) - 1 and stride == element:   # a contiguous run
            e.get(dst).get(start).i32(count * element).op("memory.copy", 0, 0)
            e.get(dst).i32(count * element).op("i32.add").set(dst)
            return
        i, end, at = cc.local(I32), cc.local(I32), cc.local(I32)
        e.i32(0).set(i)
        e.i32(count).set(end)
        e.get(start).set(at)

        def body() -> None:
            if depth == len(loops) - 1:
                e.get(dst).get(at).op(load, 0).op(store, 0)
                e.get(dst).i32(element).op("i32.add").set(dst)
            else:
                level(depth + 1, at)
            e.get(at).i32(stride).op("i32.add").set(at)

        e.while_below(i, end, 1, body, labels=(f"copy_done_{depth}", f"copy_{depth}"))

    level(0, src)


@cooperative_rule("TensorContract", CONTRACT_TYPES, scratch=contract_scratch_bytes)
def _build(cc: CoopContext) -> None:
    instr = cc.instr
    e = cc.e
    checked = {array.name: cc.array(array.name, array.ty, array.elements) for array in array_operands(instr)}
    outputs = {array.name: array.elements for array in array_operands(instr)}["output"]
    if outputs == 0:
        e.i32(COOP_OK)
        return
    plan = gemm_plan(instr.shape_a, instr.shape_b, instr.contract_dims)
    shape = contract_gemm_shape(instr)
    element = instr.ty.size_bytes()
    scratch, cursor = cc.local(I32), cc.local(I32)
    cc.launch_base()
    e.i32(cc.launch.coop_scratch).op("i32.add").set(scratch)
    e.get(scratch).i32(round16(driver_scratch_bytes(shape))).op("i32.add").set(cursor)
    operands = {}
    for name, layout, tensor in (("a", plan.a, instr.shape_a), ("b", plan.b, instr.shape_b)):
        if not layout.copied:
            operands[name] = checked[name]
            continue
        start = operands[name] = cc.local(I32)
        e.get(cursor).set(start)
        _emit_copy(cc, checked[name], cursor, copy_loops(tensor, layout, element), element)
        e.get(start).i32(round16(size(tensor) * element)).op("i32.add").set(cursor)
    threaded = "parallel_gemm" in cc.m.imports and contract_parallel(instr) is not None
    driver = build_driver(cc.m, gemm_kernel_name(cc.index) if threaded else f"tcontract_kernel_{cc.index}", shape,
                          threaded)
    call_driver(cc, driver, (operands["a"], operands["b"], checked["output"]), scratch, driver_outputs(shape)[0],
                threaded)


def contract_parallel(instr) -> tuple[str, int, int] | None:
    """``("rows", outputs, step)``: the GEMM's rows (GEMV: outputs) over the threads when the product has at least
    PARALLEL_GEMM_THRESHOLD multiply-adds, as GEMM's; else None."""
    shape = contract_gemm_shape(instr)
    outputs, step = driver_outputs(shape)
    if shape.m * shape.n * shape.k >= PARALLEL_GEMM_THRESHOLD and outputs > step:
        return "rows", outputs, step
    return None


def contract_thread_scratch(instr) -> int:
    """Scratch bytes per thread: the GEMM driver's packing scratch (the copies of A and B are shared)."""
    return driver_scratch_bytes(contract_gemm_shape(instr))


THREADED_ROWS["TensorContract"] = (contract_parallel, contract_thread_scratch)
