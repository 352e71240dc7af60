"""The rule tables of the WGSL code generator, filled by decorators in the ``rules_*`` modules.

``WGSL_LANE_RULES[name](ctx, instr)`` emits the per-lane code of one instruction (``ctx`` a
LaneContext). ``VALUE_RULES[(name, family)](w, wt, args, name)`` returns the WGSL expression
of a pure computation on already-read operand expressions (``w`` a CodeWriter, ``wt`` the
WgslType); the per-lane rules and the cooperative kernels share them. ``COMPARE_RULES[family]``
gives SETcc's boolean expression. A missing entry means UnsupportedOperation at compile time.
"""

from __future__ import annotations

from typing import Callable

from atlas_web.errors import UnsupportedOperation
from atlas_web.isa.types import Type

from .emitter import CodeWriter
from .types import TYPE_MAP, WgslType

__all__ = [
    "WGSL_LANE_RULES", "VALUE_RULES", "COMPARE_RULES", "lane_rule", "value_rule", "compare_rule", "value",
    "BACKEND_NAME", "unsupported",
]

BACKEND_NAME = "webgpu"

LaneRule = Callable[..., None]
ValueRule = Callable[[CodeWriter, WgslType, tuple, str], str]

#: instruction name -> per-lane rule
WGSL_LANE_RULES: dict[str, LaneRule] = {}
#: (instruction name, family) -> value rule
VALUE_RULES: dict[tuple[str, str], ValueRule] = {}
#: family -> SETcc rule (w, wt, condition, lhs, rhs) -> bool expression
COMPARE_RULES: dict[str, Callable] = {}


def lane_rule(*names: str):
    """Register a per-lane rule ``(ctx, instr) -> None`` for instructions ``names``."""
    def register(fn: LaneRule) -> LaneRule:
        for name in names:
            if name in WGSL_LANE_RULES:
                raise ValueError(f"two WGSL lane rules for {name}")
            WGSL_LANE_RULES[name] = fn
        return fn
    return register


def value_rule(*names: str, family: str):
    """Register a value rule ``(w, wt, args, name) -> expr`` for ``names`` on ``family``."""
    def register(fn: ValueRule) -> ValueRule:
        for name in names:
            if (name, family) in VALUE_RULES:
                raise ValueError(f"two WGSL value rules for {name} on {family}")
            VALUE_RULES[(name, family)] = fn
        return fn
    return register


def compare_rule(family: str):
    """Register SETcc's rule ``(w, wt, cond, lhs, rhs) -> bool expr`` for ``family``."""
    def register(fn):
        COMPARE_RULES[family] = fn
        return fn
    return register


def unsupported(name: str, ty: Type | None, detail: str = "") -> UnsupportedOperation:
    """The UnsupportedOperation of ``name`` on ``ty`` for this backend."""
    if ty is Type.F64 and not detail:
        detail = "WGSL has no 64-bit float type (route F64 programs to the wasm or cpu backend)"
    return UnsupportedOperation(name, ty, BACKEND_NAME, detail)


def value(w: CodeWriter, name: str, ty: Type, args: tuple) -> str:
    """The expression of instruction ``name`` on ``ty`` applied to ``args``; raises UnsupportedOperation."""
    wt = TYPE_MAP.get(ty)
    rule = VALUE_RULES.get((name, wt.family)) if wt is not None else None
    if rule is None:
        raise unsupported(name, ty)
    return rule(w, wt, tuple(args), name)
