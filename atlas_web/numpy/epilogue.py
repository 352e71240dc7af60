"""Matmul epilogues (a pass of ``jit``'s fusion, after atlas_web/numpy/fusion.py): a GEMM whose result is
read only by the elementwise pass that follows it (``relu(x @ w + b)``: the bias add and the activation
fused into one pass by fusion.py) becomes one program, GemmEpilogueNode: the GEMM, then that pass over its
result, in one launch. The pass still reads C from memory (the GEMM instruction writes a whole matrix), so
what is saved is a launch and the pass's separate program, not C's traffic.

A GEMM step and its pass merge when the pass reads C as C is laid out (element e from element e, the
same count: C is one identity leaf), no step between them reads C or writes A, B or C, and the device runs
the GEMM instruction (``supports``): the merged step takes the pass's place. The values are those of the
two launches (the same instructions in the same order). Standard library only.
"""

from __future__ import annotations

from typing import Any, Callable

from .codegen_fused import EPILOGUE_MAX
from .fusion import Step
from .nodes import CoopMapNode, FusedMapNode, FusedReduceNode, GemmEpilogueNode, GemmNode, Leaf, MapNode, Term
from .shapes import row_major, size_of

__all__ = ["fuse_epilogues", "written_buffers"]

#: the GEMM rows' names by batch (GemmNode.batch 1: GEMM, else BatchedGEMM)
_GEMM_NAMES = {True: "GEMM", False: "BatchedGEMM"}


def _as_fused(step: Step) -> tuple[FusedMapNode, list] | None:
    """``step`` as a FusedMapNode and its operands (leaves', then outputs'): a fused pass itself, or one
    elementwise operation writing its whole output contiguously (fusion.py's one-member cluster)."""
    node = step.node
    if isinstance(node, FusedMapNode):
        return node, step.operands
    if isinstance(node, CoopMapNode):
        node = step.fallback
    if not isinstance(node, MapNode) or node.out_based or step.out is None or step.out[1] != 0:
        return None
    if node.out_strides != row_major(node.shape):
        return None
    leaves = tuple(Leaf(o.dtype, node.shape, o.strides, o.based) if o.strides is not None else Leaf(node.compute, None)
                   for o in node.inputs)
    term = Term(node.op, node.compute, node.out, tuple(range(len(leaves))))
    return FusedMapNode(size_of(node.shape), leaves, (term,), (len(leaves),)), [*step.operands, step.out]


def written_buffers(step: Step) -> set[int]:
    """Ids of the buffers ``step`` writes: its ``out``, or a fused pass's outputs (the operands after its
    leaves), or a GEMM epilogue's outputs and C (which its GEMM writes)."""
    node = step.node
    if isinstance(node, (FusedMapNode, FusedReduceNode)):
        return {id(v[0]) for v in step.operands[len(node.leaves):]}
    if isinstance(node, GemmEpilogueNode):
        return ({id(v[0]) for v in step.operands[2 + len(node.epilogue.leaves):]}
                | {id(step.operands[2 + node.c_leaf][0])})
    return set() if step.out is None else {id(step.out[0])}


def _reads(step: Step) -> set[int]:
    """Ids of the buffers ``step`` may read (a fused pass: its leaves'; otherwise every buffer operand)."""
    operands = step.operands[:len(step.node.leaves)] if isinstance(step.node, FusedMapNode) else step.operands
    return {id(v[0]) for v in operands if isinstance(v, tuple)}


def _merge(gemm: Step, consumer: Step) -> Step | None:
    """The merged step of ``gemm`` and ``consumer`` where the consumer's pass reads C as laid out."""
    fused = _as_fused(consumer)
    if fused is None:
        return None
    node, operands = fused
    c = gemm.out[0]
    at = [k for k, value in enumerate(operands[:len(node.leaves)]) if isinstance(value, tuple) and value[0] is c]
    g: GemmNode = gemm.node
    if len(at) != 1 or operands[at[0]][1] != 0 or not node.leaves[at[0]].identity \
            or node.count != g.batch * g.m * g.n or node.count > EPILOGUE_MAX \
            or any(value[0] is c for value in operands[len(node.leaves):]):
        return None
    merged = GemmEpilogueNode(g, node, at[0])
    what = f"{gemm.what} with the epilogue {'+'.join(t.op for t in node.terms)}"
    return Step(what, merged, None, [gemm.operands[0], gemm.operands[1], *operands], None)


def fuse_epilogues(steps: list[Step], supports: Callable[[str, Any], bool]) -> list[Step]:
    """``steps`` with each GEMM step merged into the elementwise pass that alone consumes its result (see
    the module docstring); ``supports(instruction, type)`` says whether the device runs the GEMM row."""
    out = list(steps)
    index = 0
    while index < len(out):
        step = out[index]
        if not isinstance(step.node, GemmNode) or step.out is None or step.out[1] != 0 \
                or not supports(_GEMM_NAMES[step.node.batch == 1], step.node.ty):
            index += 1
            continue
        c, inputs = id(step.out[0]), {id(v[0]) for v in step.operands if isinstance(v, tuple)}
        merged = None
        for later in range(index + 1, len(out)):
            if c in _reads(out[later]):
                merged = _merge(step, out[later])
                if merged is not None:
                    out[later] = merged
                    del out[index]
                break
            if written_buffers(out[later]) & (inputs | {c}):
                break
        if merged is None:
            index += 1
    return out
