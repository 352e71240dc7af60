"""The measured accuracy of the math library (data written by benchmarks/wasm_mathlib_accuracy.py --write).

``MEASURED[(op, shape)] = (max_ulp, points)``: the largest distance to the
correctly rounded result over ``points`` inputs of the op's sweep
(``sweeps.SWEEP_TEXT``), run under wasmtime. ``measured_accuracy()`` joins
it with the published bounds as rows of data; ``accuracy_markdown()``
renders the table that docs/wasm-mathlib.md carries and the backends doc
generator can include.
"""

from __future__ import annotations

from .bounds import DOCUMENTED_RANGE, ULP_BOUNDS
from .shapes import Shape

__all__ = ["MEASURED", "MEASURED_ENGINE", "measured_accuracy", "accuracy_markdown", "render_measured_module"]

# --- generated data (benchmarks/wasm_mathlib_accuracy.py --write) ------------------------------------------------
MEASURED_ENGINE = 'wasmtime 50.0.1'
MEASURED: dict[tuple[str, str], tuple[int, int]] = {
    ('atan2', 'f32'): (0, 1000000),
    ('atan2', 'f32x4'): (0, 1000000),
    ('atan2', 'f64'): (1, 50000),
    ('atan2', 'f64x2'): (1, 50000),
    ('cos', 'f32'): (0, 1087835),
    ('cos', 'f32x4'): (0, 1087835),
    ('cos', 'f64'): (1, 54710),
    ('cos', 'f64x2'): (1, 54710),
    ('exp', 'f32'): (1, 950136),
    ('exp', 'f32x4'): (1, 950136),
    ('exp', 'f64'): (1, 47636),
    ('exp', 'f64x2'): (1, 47636),
    ('gelu', 'f32'): (1, 950045),
    ('gelu', 'f32x4'): (1, 950045),
    ('gelu', 'f64'): (1, 47545),
    ('gelu', 'f64x2'): (1, 47545),
    ('log', 'f32'): (1, 800384),
    ('log', 'f32x4'): (1, 800384),
    ('log', 'f64'): (1, 41164),
    ('log', 'f64x2'): (1, 41164),
    ('log10', 'f32'): (0, 800384),
    ('log10', 'f32x4'): (0, 800384),
    ('log10', 'f64'): (1, 41164),
    ('log10', 'f64x2'): (1, 41164),
    ('log2', 'f32'): (0, 800384),
    ('log2', 'f32x4'): (0, 800384),
    ('log2', 'f64'): (1, 41164),
    ('log2', 'f64x2'): (1, 41164),
    ('pow', 'f32'): (0, 991947),
    ('pow', 'f32x4'): (0, 991947),
    ('pow', 'f64'): (1, 49810),
    ('pow', 'f64x2'): (1, 49810),
    ('rcp', 'f32'): (0, 900035),
    ('rcp', 'f32x4'): (0, 900035),
    ('rcp', 'f64'): (0, 45035),
    ('rcp', 'f64x2'): (0, 45035),
    ('rsqrt', 'f32'): (1, 900032),
    ('rsqrt', 'f32x4'): (1, 900032),
    ('rsqrt', 'f64'): (1, 45032),
    ('rsqrt', 'f64x2'): (1, 45032),
    ('sigmoid', 'f32'): (1, 950045),
    ('sigmoid', 'f32x4'): (1, 950045),
    ('sigmoid', 'f64'): (1, 47545),
    ('sigmoid', 'f64x2'): (1, 47545),
    ('sin', 'f32'): (0, 1087835),
    ('sin', 'f32x4'): (0, 1087835),
    ('sin', 'f64'): (1, 54710),
    ('sin', 'f64x2'): (1, 54710),
    ('swish', 'f32'): (1, 950045),
    ('swish', 'f32x4'): (1, 950045),
    ('swish', 'f64'): (1, 47545),
    ('swish', 'f64x2'): (1, 47545),
    ('tan', 'f32'): (0, 1087835),
    ('tan', 'f32x4'): (0, 1087835),
    ('tan', 'f64'): (1, 54710),
    ('tan', 'f64x2'): (1, 54710),
    ('tanh', 'f32'): (1, 900085),
    ('tanh', 'f32x4'): (1, 900085),
    ('tanh', 'f64'): (1, 45085),
    ('tanh', 'f64x2'): (1, 45085),
}
# --- end of generated data ---------------------------------------------------------------------------------------


def measured_accuracy() -> list[dict]:
    """One row per (op, shape): op, shape, bound (published ulp), measured (max ulp, None if not measured),
    points, strategy ("routine" or "widened to f64") and the documented range."""
    from .registry import MATH_OPS
    rows = []
    for op in sorted(MATH_OPS):
        for shape in Shape:
            fmt = shape.format.name
            measured, points = MEASURED.get((op, shape.value), (None, 0))
            rows.append({
                "op": op, "shape": shape.value, "bound": ULP_BOUNDS[(op, fmt)], "measured": measured,
                "points": points, "strategy": "widened to f64" if MATH_OPS[op].widened(fmt) else "routine",
                "range": DOCUMENTED_RANGE[op],
            })
    return rows


def accuracy_markdown() -> str:
    """The accuracy table in Markdown: one line per op, "measured max / published bound" per shape."""
    rows = measured_accuracy()
    shapes = [s.value for s in Shape]
    lines = [f"Max ulp error measured ({MEASURED_ENGINE}) / published bound, against correctly rounded results:",
             "",
             "| op | " + " | ".join(shapes) + " | points f32 / f64 | f32 computed | bound holds for |",
             "|---|" + "---|" * (len(shapes) + 3)]
    by_op: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_op.setdefault(row["op"], {})[row["shape"]] = row
    for op, cells in by_op.items():
        values = []
        for shape in shapes:
            row = cells[shape]
            shown = "-" if row["measured"] is None else str(row["measured"])
            values.append(f"{shown} / {row['bound']}")
        points = f"{cells['f32x4']['points']:,} / {cells['f64x2']['points']:,}"
        first = cells["f32x4"]
        lines.append(f"| {op} | " + " | ".join(values) + f" | {points} | {first['strategy']} | {first['range']} |")
    return "\n".join(lines) + "\n"


def render_measured_module(results: dict[tuple[str, str], tuple[int, int]], engine: str, source: str) -> str:
    """``source`` (this module's text) with the generated data replaced by ``results`` measured on ``engine``."""
    start = source.index("# --- generated data")
    end = source.index("# --- end of generated data")
    header = source[start:source.index("\n", start) + 1]
    body = [header, f"MEASURED_ENGINE = {engine!r}\n", "MEASURED: dict[tuple[str, str], tuple[int, int]] = {\n"]
    for (op, shape), (worst, points) in sorted(results.items()):
        body.append(f"    ({op!r}, {shape!r}): ({worst}, {points}),\n")
    body.append("}\n")
    return source[:start] + "".join(body) + source[end:]
