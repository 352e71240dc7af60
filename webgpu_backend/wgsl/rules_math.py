"""Value rules of the transcendental instructions (and ParallelMapBinary's Pow and Atan2).

Each operation has two implementations: the WGSL builtin and ours (``lib_math``). Which one is
used is data: ``accuracy.IMPLEMENTATION`` (chosen from the measured table: ours wherever the
builtin is worse than 4 ulp on lavapipe). F16 and BF16 compute in f32 and round once at the end.
"""

from __future__ import annotations

from .accuracy import IMPLEMENTATION
from .emitter import CodeWriter
from .rules import value_rule
from .rules_float import finish
from .types import WgslType

__all__ = ["MATH_FUNCTIONS", "math_expression"]

#: operation -> (our helper, the WGSL builtin expression with {0}, {1} for the operands)
MATH_FUNCTIONS: dict[str, tuple[str, str]] = {
    "EXP": ("exp_f32", "exp({0})"),
    "LOG": ("log_f32", "log({0})"),
    "LOG2": ("log2_f32", "log2({0})"),
    "LOG10": ("log10_f32", "(log2({0}) * 0.30102999566398120)"),
    "SIN": ("sin_f32", "sin({0})"),
    "COS": ("cos_f32", "cos({0})"),
    "TAN": ("tan_f32", "tan({0})"),
    "TANH": ("tanh_f32", "tanh({0})"),
    "SIGMOID": ("sigmoid_f32", "(1.0 / (1.0 + exp(-{0})))"),
    "SWISH": ("swish_f32", "({0} / (1.0 + exp(-{0})))"),
    "GELU": ("gelu_f32", "({0} / (1.0 + exp(-1.5957691216057308 * ({0} + 0.044715 * {0} * {0} * {0}))))"),
    "POW": ("pow_f32", "pow({0}, {1})"),
    "ATAN2": ("atan2_f32", "atan2({0}, {1})"),
}


def math_expression(w: CodeWriter, name: str, args: tuple, implementation: str | None = None) -> str:
    """The f32 expression of transcendental ``name`` with the chosen (or given) implementation."""
    ours, builtin = MATH_FUNCTIONS[name]
    if (implementation or IMPLEMENTATION[name]) == "builtin":
        return builtin.format(*args)
    return f"{w.helper(ours)}({', '.join(args)})"


@value_rule(*MATH_FUNCTIONS, family="float")
def _math(w: CodeWriter, wt: WgslType, args: tuple, name: str) -> str:
    return finish(w, wt, math_expression(w, name, args))
