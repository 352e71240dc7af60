"""MathLibrary: emits math functions into a ModuleBuilder on first use, once per (op, shape).

Each function takes ``arity`` arguments of the shape's type and returns one
(v128 for ``f32x4``/``f64x2``, f32/f64 for the scalar shapes). How each shape
is built, by the op's routines (see ``registry``):

=========================  ==============================================================================
vector, routine for format  the routine's code, branch-free
f32x4, no f32 routine       promote both halves to f64x2, call the f64x2 function twice, demote, recombine
scalar, routine for format  splat, call the vector function, extract lane 0
f32, no f32 routine         promote, splat to f64x2, call the f64x2 function, extract lane 0, demote
=========================  ==============================================================================

Functions are named ``<prefix>.<op>.<shape>`` (for backtraces and the name
section) and are not exported. ``relaxed_simd=True`` lets the polynomial
steps use ``relaxed_madd`` (fused where the engine fuses; each op stays
within its published bound either way, which the tests check in both
forms); the default writes plain multiplies and adds only. ``emit_inline`` writes a vector routine
straight into a caller's function instead (no call; worth it in hot loops).
"""

from __future__ import annotations

from typing import Callable, Sequence

from atlas_web.errors import UnsupportedOperation

from ..encoding.module import FunctionBuilder, ModuleBuilder
from ..encoding.types import ValType
from . import ops_activation, ops_atan2, ops_exp, ops_log, ops_pow, ops_recip, ops_trig  # noqa: F401 - register
from .vec_builder import VecBuilder
from .registry import MATH_OPS, MathOp, math_op, run_routine
from .shapes import Shape, as_shape

__all__ = ["MathLibrary", "DEFAULT_PREFIX"]

DEFAULT_PREFIX = "atlas_math"

# i8x16.shuffle masks: the high two f32 lanes moved low; the low 8 bytes of each of two vectors
_HIGH_HALF_LOW = tuple(range(8, 16)) + tuple(range(8, 16))
_LOW_HALVES = tuple(range(0, 8)) + tuple(range(16, 24))


class MathLibrary:
    """The math functions of one module being built (see the module docstring).

    ``module`` must not receive function imports after the first emitted
    function (imports precede definitions in the index space). Raises
    UnsupportedOperation for an unknown op or shape.
    """

    def __init__(self, module: ModuleBuilder, *, prefix: str = DEFAULT_PREFIX, relaxed_simd: bool = False) -> None:
        self.module = module
        self.prefix = prefix
        self.relaxed_simd = relaxed_simd
        self._functions: dict[tuple[str, Shape], int] = {}
        self._helpers: dict[str, int] = {}

    @staticmethod
    def ops() -> tuple[str, ...]:
        """The op names, sorted."""
        return tuple(sorted(MATH_OPS))

    @staticmethod
    def arity(op: object) -> int:
        """How many arguments ``op``'s functions take."""
        return math_op(op).arity

    def function_name(self, op: object, shape: object) -> str:
        return f"{self.prefix}.{math_op(op).name}.{as_shape(shape).value}"

    def function(self, op: object, shape: object) -> int:
        """The function index of ``op`` in ``shape``, emitting it (and what it calls) on first use."""
        entry, sh = math_op(op), as_shape(shape)
        key = (entry.name, sh)
        if key not in self._functions:
            self._functions[key] = self._emit(entry, sh)
        return self._functions[key]

    @property
    def emitted(self) -> dict[tuple[str, Shape], int]:
        """(op, shape) -> function index of everything emitted so far (a copy)."""
        return dict(self._functions)

    def emit_inline(self, function: FunctionBuilder, op: object, shape: object, arg_locals: Sequence[int]) -> None:
        """Write ``op``'s vector routine into ``function``, reading its arguments from the v128 locals
        ``arg_locals`` and leaving the result on the stack (adds locals to ``function``).

        Raises UnsupportedOperation for a scalar shape or a widened f32 op (call ``function`` for those).
        """
        entry, sh = math_op(op), as_shape(shape)
        if not sh.is_vector or entry.widened(sh.format.name):
            raise UnsupportedOperation(entry.name, sh.value, "wasm",
                                       "only vector shapes with a routine of their own are written inline")
        if len(arg_locals) != entry.arity:
            raise UnsupportedOperation(entry.name, sh.value, "wasm",
                                       f"takes {entry.arity} argument(s), got {len(arg_locals)} locals")
        kb = VecBuilder(function, sh.format, self, relaxed_madd=self.relaxed_simd)
        kb.emit(run_routine(entry, kb, [kb.local(i) for i in arg_locals]))

    def helper(self, name: str, params: tuple[ValType, ...], results: tuple[ValType, ...],
               write_body: Callable[[FunctionBuilder], None]) -> int:
        """The index of helper function ``name`` (``<prefix>.helper.<name>``), written by ``write_body`` once."""
        if name not in self._helpers:
            fb = self.module.add_function(f"{self.prefix}.helper.{name}", list(params), list(results))
            self._helpers[name] = fb.index
            write_body(fb)
        return self._helpers[name]

    # --- emission --------------------------------------------------------------------------------------------

    def _new_function(self, entry: MathOp, shape: Shape) -> FunctionBuilder:
        return self.module.add_function(self.function_name(entry.name, shape), [shape.valtype] * entry.arity,
                                        [shape.valtype])

    def _emit(self, entry: MathOp, shape: Shape) -> int:
        fmt = shape.format.name
        if shape.is_vector and not entry.widened(fmt):
            return self._emit_routine(entry, shape)
        if shape.is_vector:
            return self._emit_widened_vector(entry)
        if not entry.widened(fmt):
            return self._emit_scalar(entry, shape)
        return self._emit_widened_scalar(entry)

    def _emit_routine(self, entry: MathOp, shape: Shape) -> int:
        fb = self._new_function(entry, shape)
        kb = VecBuilder(fb, shape.format, self, relaxed_madd=self.relaxed_simd)
        kb.emit(run_routine(entry, kb, [kb.local(i) for i in range(entry.arity)]))
        return fb.index

    def _emit_widened_vector(self, entry: MathOp) -> int:
        callee = self.function(entry.name, Shape.F64X2)
        fb = self._new_function(entry, Shape.F32X4)
        w = fb.code
        for half in ("low", "high"):
            for arg in range(entry.arity):
                w.local_get(arg)
                if half == "high":
                    w.local_get(arg).i8x16_shuffle(_HIGH_HALF_LOW)
                w.f64x2_promote_low_f32x4()
            w.call(callee).f32x4_demote_f64x2_zero()
        w.i8x16_shuffle(_LOW_HALVES)
        return fb.index

    def _emit_scalar(self, entry: MathOp, shape: Shape) -> int:
        callee = self.function(entry.name, shape.vector)
        fb = self._new_function(entry, shape)
        w = fb.code
        prefix = shape.vector.value
        for arg in range(entry.arity):
            w.local_get(arg).emit(f"{prefix}.splat")
        w.call(callee).emit(f"{prefix}.extract_lane", 0)
        return fb.index

    def _emit_widened_scalar(self, entry: MathOp) -> int:
        callee = self.function(entry.name, Shape.F64X2)
        fb = self._new_function(entry, Shape.F32)
        w = fb.code
        for arg in range(entry.arity):
            w.local_get(arg).f64_promote_f32().f64x2_splat()
        w.call(callee).f64x2_extract_lane(0).f32_demote_f64()
        return fb.index

