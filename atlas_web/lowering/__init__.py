"""What the code generators consume: control-flow graphs (``cfg``), and later structured
control flow, stages and liveness. Standard library only."""

from __future__ import annotations

from .cfg import (
    EXIT_NODE, BasicBlock, ControlFlowGraph, Loop, Procedure, Terminator, back_edges, build_cfg,
    control_dependences, dominates, immediate_dominators, immediate_post_dominators, is_reducible,
    natural_loops, predecessors_of, resolve_targets, reverse_postorder,
)

__all__ = [
    "EXIT_NODE", "BasicBlock", "ControlFlowGraph", "Loop", "Procedure", "Terminator", "back_edges", "build_cfg",
    "control_dependences", "dominates", "immediate_dominators", "immediate_post_dominators", "is_reducible",
    "natural_loops", "predecessors_of", "resolve_targets", "reverse_postorder",
]
