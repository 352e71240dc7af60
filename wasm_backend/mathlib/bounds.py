"""The published accuracy of the math library: ulp bounds per op and lane format, and where they hold.

``ULP_BOUNDS[(op, fmt)]`` is the largest distance, in representable values
of ``fmt``, between a result of the library and the correctly rounded
result, for every input in the op's ``DOCUMENTED_RANGE`` (special values are
exact and not counted). Scalar shapes compute with the vector code, so
``f32``/``f32x4`` share a bound, as do ``f64``/``f64x2``. F16 and BF16 go
through the f32 functions and are rounded afterwards by the backend, so
their error is at most this bound in f32 plus that final rounding.

The bounds are what tests assert (tests/wasm_mathlib) and what the measured
table (``measured.py``, ``benchmarks/wasm_mathlib_accuracy.py``) must stay
within. Against the Atlas reference backend (which evaluates in f64 with
NumPy and rounds once to the type), a tolerance has to add the reference's
own error to these bounds: up to 1 ulp for f32 (double rounding) and
NumPy's f64 error for f64 (a few ulp for tanh, pow, atan2 and the
formula-defined ops).
"""

from __future__ import annotations

from atlas_web.errors import UnsupportedOperation

from .shapes import LaneFormat, as_shape

__all__ = ["ULP_BOUNDS", "DOCUMENTED_RANGE", "ulp_bound"]

#: (op, lane format) -> largest distance to the correctly rounded result, in ulp of that format
ULP_BOUNDS: dict[tuple[str, str], int] = {
    (op, fmt): 1 for op in ("exp", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "sigmoid", "swish",
                            "gelu", "pow", "atan2", "rsqrt") for fmt in ("f32", "f64")
}
ULP_BOUNDS.update({("rcp", "f32"): 0, ("rcp", "f64"): 0})

#: op -> the inputs over which its bound holds (everything else: special values, exact per C99 Annex F)
DOCUMENTED_RANGE: dict[str, str] = {
    "exp": "all finite x (results overflow to inf and underflow through the subnormals to 0, rounded once)",
    "log": "all x > 0, subnormals included",
    "log2": "all x > 0, subnormals included",
    "log10": "all x > 0, subnormals included",
    "sin": "all finite x (Cody-Waite below 2**20, Payne-Hanek above)",
    "cos": "all finite x (Cody-Waite below 2**20, Payne-Hanek above)",
    "tan": "all finite x (Cody-Waite below 2**20, Payne-Hanek above)",
    "tanh": "all finite x",
    "sigmoid": "all finite x (results down to the subnormals)",
    "swish": "all finite x",
    "gelu": "all finite x (tanh form; 0.044715 and sqrt(2/pi) taken as exact reals)",
    "pow": "all finite x, y with a finite, nonzero real result (x < 0 only with integer y)",
    "atan2": "all finite y, x not both zero",
    "rcp": "all finite nonzero x",
    "rsqrt": "all finite x > 0",
}


def ulp_bound(op: object, shape: object) -> int:
    """The published ulp bound of ``op`` for ``shape`` (a Shape or its text; "f32"/"f64" name the formats too).

    Raises UnsupportedOperation for an unknown op or shape.
    """
    name = op.lower() if isinstance(op, str) else op
    fmt = shape.name if isinstance(shape, LaneFormat) else as_shape(shape).format.name
    try:
        return ULP_BOUNDS[(name, fmt)]  # type: ignore[index]
    except (KeyError, TypeError):
        known = ", ".join(sorted({o for o, _ in ULP_BOUNDS}))
        raise UnsupportedOperation(str(op), fmt, "wasm", f"no published ulp bound (ops: {known})") from None

