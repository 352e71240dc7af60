"""Plugs the vectorized math library (``wasm_backend.mathlib``) into the code generator's seam.

For every op the library's registry holds, a ``MathFunction`` is registered in ``math_seam`` whose
emitters call the library's function for the shape (``f32``/``f64`` scalars, ``f32x4``/``f64x2``
vectors); the functions are added to the module being built on first use, through one
``MathLibrary`` per module (``ModuleContext.math_library``). When the library cannot be imported,
nothing is registered and the transcendental operations stay unsupported.
"""

from __future__ import annotations

from atlas_web.isa.types import Type

from .math_seam import MATH_FUNCTIONS, MathFunction, register_math_function

__all__ = ["register_library_functions"]

_SCALAR_SHAPES = {Type.F32: "f32", Type.F64: "f64"}
_VECTOR_SHAPES = {Type.F32: "f32x4", Type.F64: "f64x2"}


def _caller(op: str, shapes: dict):
    def emit(m, e, ty: Type) -> None:
        e.call(m.math_library().function(op, shapes[ty]))
    emit.__name__ = f"call_{op}"
    return emit


def _inliner(op: str):
    def inline(m, fb, ty: Type, arg_locals) -> bool:
        from atlas_web.errors import UnsupportedOperation
        try:
            m.math_library().emit_inline(fb, op, _VECTOR_SHAPES[ty], arg_locals)
        except UnsupportedOperation:
            return False
        return True
    return inline


def register_library_functions() -> list[str]:
    """Register every op of the math library that the seam does not know yet; returns their names."""
    try:
        from ..mathlib.library import MathLibrary
    except ImportError:
        return []
    added = []
    for op in MathLibrary.ops():
        if op in MATH_FUNCTIONS:
            continue
        register_math_function(MathFunction(op, MathLibrary.arity(op), frozenset({Type.F32, Type.F64}),
                                            _caller(op, _SCALAR_SHAPES), _caller(op, _VECTOR_SHAPES),
                                            inline=_inliner(op)))
        added.append(op)
    return added


register_library_functions()
