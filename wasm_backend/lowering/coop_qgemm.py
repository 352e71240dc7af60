"""QuantizedGEMM (C of type I8 or F32 from i8 A and B): the cooperative rule, on ``coop_qgemm_kernel``.

The cooperative function checks C, A and B over their extents (the table's, in operand order: handle,
bounds, alignment; a trap writes nothing) and runs the driver ``gemm_kernel_<index>(a, b, c, scratch, lo,
hi)`` over all rows of C. The packing scratch is the per-launch area's (``cooperative_rule(..., scratch=...)``).
Natively, a product of at least ``thread_policy.PARALLEL_GEMM_THRESHOLD`` multiply-adds is cut into row
ranges (whole register tiles) run on the host's threads through ``env.parallel_gemm``, as GEMM's
(``coop_gemm.THREADED_ROWS``); every element is the same exact integer sum on any thread, so the bits do not
depend on the thread count.
"""

from __future__ import annotations

from atlas_web.isa.extents import array_operands
from atlas_web.isa.types import Type

from ..encoding.types import ValType
from ..thread_policy import PARALLEL_GEMM_THRESHOLD
from .coop_context import COOP_OK, CoopContext
from .coop_gemm import THREADED_ROWS, gemm_kernel_name
from .coop_qgemm_kernel import QTILING, QShape, build_qgemm_driver, qgemm_scratch_bytes
from .rules import cooperative_rule

__all__ = ["QGEMM_TYPES", "qgemm_shape", "qgemm_parallel", "qgemm_scratch"]

I32 = ValType.I32
#: the types of C the kernel writes
QGEMM_TYPES = frozenset({Type.I8, Type.F32})


def qgemm_shape(instr) -> QShape:
    """The kernel's shape of a QuantizedGEMM (leading dimensions 0 resolved to packed)."""
    m, n, k = instr.m, instr.n, instr.k
    lda = instr.lda or (m if instr.trans_a else k)
    ldb = instr.ldb or (k if instr.trans_b else n)
    return QShape(instr.ty, m, n, k, bool(instr.trans_a), bool(instr.trans_b), lda, ldb, instr.ldc or n, 1.0, 0.0,
                  Type.I8, a_scale=float(instr.a_scale), b_scale=float(instr.b_scale), c_scale=float(instr.c_scale))


def qgemm_parallel(instr) -> tuple[str, int, int] | None:
    """``("rows", m, mr)`` when the product is large enough for the threads, else None."""
    if instr.m * instr.n * instr.k >= PARALLEL_GEMM_THRESHOLD and instr.m > QTILING.mr:
        return "rows", instr.m, QTILING.mr
    return None


def qgemm_scratch(instr) -> int:
    """Scratch bytes the driver of ``instr`` needs (per thread)."""
    return qgemm_scratch_bytes(qgemm_shape(instr))


@cooperative_rule("QuantizedGEMM", QGEMM_TYPES, scratch=qgemm_scratch)
def _build(cc: CoopContext) -> None:
    instr, m, e = cc.instr, cc.m, cc.e
    threaded = "parallel_gemm" in m.imports and qgemm_parallel(instr) is not None
    driver = build_qgemm_driver(m, gemm_kernel_name(cc.index), qgemm_shape(instr), export=threaded)
    # checked in operand order (c, a, b), as the reference checks them: the first bad one traps
    checked = {array.name: cc.array(array.name, array.ty, array.elements) for array in array_operands(instr)}
    a, b, c = checked["a"], checked["b"], checked["c"]
    scratch = cc.local(I32)
    cc.launch_base()
    e.i32(cc.launch.coop_scratch).op("i32.add").set(scratch)
    if threaded:
        e.i32(cc.index).get(a).get(b).get(c).call(m.host("parallel_gemm")).op("i32.eqz")
        with e.if_():
            e.i32(COOP_OK).op("return")
    e.get(a).get(b).get(c).get(scratch).i32(0).i32(instr.m).call(driver)
    e.i32(COOP_OK)


THREADED_ROWS["QuantizedGEMM"] = (qgemm_parallel, qgemm_scratch)
