"""Executor rule of TensorContract (docs/semantics.md, Tensor contraction): the executable form of the contract.

``a`` (``shape_a``) and ``b`` (``shape_b``) are row-major tensors; the output holds ``alpha * tensordot(a, b,
contract_dims) + beta * output`` with the output's axes ``a``'s unpaired axes in order, then ``b``'s. Computed
as GEMM's rule computes one product (``exec_matrix.gemm_values``: binary64 sums by ``np.einsum``, no BLAS zero
skipping, rounded once to the type; beta == 0 does not read the output; an empty sum gives ``beta * output``,
alpha not multiplied in) on ``a`` reordered to (free axes, paired axes) as an m x k matrix and ``b`` to (paired,
free) as k x n (atlas_web.isa.contraction.gemm_plan's orders; no pairs: k = 1, an outer product). The arrays are
checked over their whole extents in operand order before anything is written; the inputs are copied out first.
"""

from __future__ import annotations

import numpy as np

from ..isa.contraction import gemm_plan
from .exec_cooperative import CooperativeStep, checked_arrays
from .exec_matrix import gemm_values

__all__ = ["CONTRACT_RULES", "contract_values"]


def contract_values(ty, alpha: float, beta: float, a: np.ndarray, b: np.ndarray, shape_a: tuple, shape_b: tuple,
                    pairs: tuple, c: np.ndarray | None) -> np.ndarray:
    """The output (flat, in ``ty``'s dtype) of the contraction of the flat ``a`` and ``b`` (``c``: the output's
    old values, or None when beta == 0)."""
    plan = gemm_plan(shape_a, shape_b, pairs)
    a_matrix = a.reshape(shape_a).transpose(plan.a.order).reshape(plan.m, plan.k)
    b_matrix = b.reshape(shape_b).transpose(plan.b.order).reshape(plan.k, plan.n)
    old = None if c is None else c.reshape(plan.m, plan.n)
    return gemm_values(ty, alpha, beta, a_matrix, b_matrix, old).reshape(-1)


def _tensor_contract(step: CooperativeStep) -> None:
    instr = step.instr
    checked = checked_arrays(step)
    if checked["output"].array.elements == 0:
        return
    arrays = {name: array.read() for name, array in checked.items()}   # copies: the output is written last
    checked["output"].write(contract_values(instr.ty, instr.alpha, instr.beta, arrays["a"], arrays["b"],
                                            instr.shape_a, instr.shape_b, instr.contract_dims,
                                            arrays["output"] if instr.beta != 0 else None))


CONTRACT_RULES = {"TensorContract": _tensor_contract}
