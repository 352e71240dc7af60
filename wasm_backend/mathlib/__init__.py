"""The vectorized transcendental math library the WebAssembly backend carries in its modules.

WebAssembly has no transcendental instructions, so every module that needs
one gets its own copy, emitted on demand: ``MathLibrary(module_builder)``
and ``.function(op, shape)`` return the index of a function (emitted once
per module, with what it calls). Ops: exp log log2 log10 sin cos tan tanh
sigmoid gelu swish pow atan2 rcp rsqrt (``ops()``); shapes: ``f32x4`` and
``f64x2`` (v128 -> v128) and the scalars ``f32``/``f64``.

Accuracy: ``ulp_bound(op, shape)`` is the published bound against the
correctly rounded result (``bounds``); ``measured_accuracy()`` the measured
maxima per op and shape (``measured``); ``accuracy_markdown()`` renders them
for docs/backends.md and docs/wasm-mathlib.md.

Importing this package needs the standard library only; ``harness`` and
``reference`` (tests, benchmarks) need NumPy, and ``reference`` and ``fit``
mpmath.
"""

from __future__ import annotations

from .bounds import DOCUMENTED_RANGE, ULP_BOUNDS, ulp_bound
from .library import DEFAULT_PREFIX, MathLibrary
from .measured import MEASURED, accuracy_markdown, measured_accuracy
from .registry import MATH_OPS, MathOp, math_routine, math_op
from .shapes import Shape, as_shape

__all__ = [
    "MathLibrary", "DEFAULT_PREFIX", "Shape", "as_shape", "MATH_OPS", "MathOp", "math_routine", "math_op",
    "ULP_BOUNDS", "DOCUMENTED_RANGE", "ulp_bound", "MEASURED", "measured_accuracy", "accuracy_markdown",
]
