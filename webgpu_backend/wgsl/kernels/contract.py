"""TensorContract's kernel (F32): the GEMM shader of ``gemm`` on the plan of ``atlas_web.isa.contraction``.

The contraction is the m x k by k x n product of A ordered (free axes, paired axes) and B ordered (paired, free).
An operand whose stored order is that layout or its transpose is read as a matrix (packed leading dimension,
the GEMM's trans flag); any other is gathered while its slices are staged: op(X)[row, col] is found from row's
and col's coordinates along the operand's own axes (``GemmSpec.gather_a``/``gather_b``: sizes and strides known
when the shader is made, axes of size 1 left out), so no copy and no scratch is needed. The output is C (m x n,
packed); alpha, beta, k == 0 and the accumulation are the GEMM kernel's. Standard library only.
"""

from __future__ import annotations

from atlas_web.isa.contraction import OperandLayout, gemm_plan
from atlas_web.isa.types import Type

from . import DeviceLimits, Dispatch, KernelPlan, register
from .binding import ROLE_BINDINGS, shared_sources
from .gemm import GemmKernel, GemmSpec, f32_bits, gemm_workgroups

__all__ = ["contract_spec", "TensorContractKernel"]


def _gather(shape: tuple, layout: OperandLayout, rows: int) -> tuple | None:
    """(row axes, column axes) of an operand read through ``layout`` whose first ``rows`` axes of
    ``layout.order`` make the rows; None when it is read as a matrix."""
    if not layout.copied:
        return None
    strides, step = [0] * len(shape), 1
    for axis in range(len(shape) - 1, -1, -1):
        strides[axis], step = step, step * shape[axis]
    pick = [(shape[axis], strides[axis]) for axis in layout.order]
    return (tuple(p for p, axis in zip(pick[:rows], layout.order[:rows]) if shape[axis] != 1),
            tuple(p for p, axis in zip(pick[rows:], layout.order[rows:]) if shape[axis] != 1))


def contract_spec(instr, sources: tuple[str, str] = ("ro", "ro"), guarded: bool = True) -> GemmSpec:
    """The GEMM shader spec of TensorContract ``instr``."""
    plan = gemm_plan(instr.shape_a, instr.shape_b, instr.contract_dims)
    m, n, k = plan.m, plan.n, plan.k
    pairs = len(instr.contract_dims)
    lda = max(1, m if plan.a.transposed else k)
    ldb = max(1, k if plan.b.transposed else n)
    return GemmSpec(1, m, n, k, plan.a.transposed, plan.b.transposed, lda, ldb, max(1, n), 0, 0, 0,
                    f32_bits(instr.alpha), f32_bits(instr.beta), sources, guarded, False,
                    gather_a=_gather(instr.shape_a, plan.a, len(instr.shape_a) - pairs),
                    gather_b=_gather(instr.shape_b, plan.b, pairs))


class TensorContractKernel(GemmKernel):
    """TensorContract (F32) as one GEMM shader."""

    instruction = "TensorContract"

    def supports(self, operation, ty) -> bool:
        return ty is Type.F32

    def plan(self, instr, operands: dict, device: DeviceLimits) -> KernelPlan:
        spec = contract_spec(instr, shared_sources(operands))
        fields = {role: operands[role][1] for role in ("dst", "src_a", "src_b")}
        return KernelPlan((Dispatch(spec, ROLE_BINDINGS, gemm_workgroups(spec, device.max_groups)),), fields)

    def listing(self, instr):
        return [("tcontract", contract_spec(instr))]


register(TensorContractKernel())
