"""What the code generators consume: control-flow graphs (``cfg``), the lane graph with its stages,
segments and resume points (``stages``), structured control flow (``structure``), virtual
registers and liveness (``liveness``), and :func:`plan_program` bundling them (``plan``).
Standard library only."""

from __future__ import annotations

from .cfg import (
    EXIT_NODE, BasicBlock, ControlFlowGraph, Loop, Procedure, Terminator, back_edges, build_cfg,
    control_dependences, dominates, immediate_dominators, immediate_post_dominators, is_reducible,
    natural_loops, predecessors_of, resolve_targets, reverse_postorder,
)
from .liveness import RegisterAssignment, VirtualRegister, storage_type
from .plan import Boundary, CooperativeStep, LoweringPlan, Segment, plan_program
from .stages import ExitKind, LaneGraph, LaneNode, ResumeKind, ResumePoint, Stage
from . import structure

__all__ = [
    "EXIT_NODE", "BasicBlock", "ControlFlowGraph", "Loop", "Procedure", "Terminator", "back_edges", "build_cfg",
    "control_dependences", "dominates", "immediate_dominators", "immediate_post_dominators", "is_reducible",
    "natural_loops", "predecessors_of", "resolve_targets", "reverse_postorder",
    "plan_program", "LoweringPlan", "Segment", "Boundary", "CooperativeStep", "Stage", "ResumePoint", "ResumeKind",
    "LaneGraph", "LaneNode", "ExitKind", "VirtualRegister", "RegisterAssignment", "storage_type", "structure",
]
