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
MEASURED_ENGINE = "wasmtime 50.0.1"
MEASURED: dict[tuple[str, str], tuple[int, int]] = {
}
# --- end of generated data ---------------------------------------------------------------------------------------


def measured_accuracy() -> list[dict]:
    """One row per (op, shape): op, shape, bound (published ulp), measured (max ulp, None if not measured),
    points, strategy ("kernel" or "widened to f64") and the documented range."""
    from .registry import MATH_OPS
    rows = []
    for op in sorted(MATH_OPS):
        for shape in Shape:
            fmt = shape.format.name
            measured, points = MEASURED.get((op, shape.value), (None, 0))
            rows.append({
                "op": op, "shape": shape.value, "bound": ULP_BOUNDS[(op, fmt)], "measured": measured,
                "points": points, "strategy": "widened to f64" if MATH_OPS[op].widened(fmt) else "kernel",
                "range": DOCUMENTED_RANGE[op],
            })
    return rows


def accuracy_markdown() -> str:
    """The accuracy table in Markdown: one line per op, measured/bound per shape."""
    rows = measured_accuracy()
    shapes = [s.value for s in Shape]
    lines = ["| op | " + " | ".join(f"{s} max / bound" for s in shapes) + " | f32 computed | range |",
             "|---|" + "---|" * (len(shapes) + 2)]
    by_op: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_op.setdefault(row["op"], {})[row["shape"]] = row
    for op, cells in by_op.items():
        values = []
        for shape in shapes:
            row = cells[shape]
            shown = "-" if row["measured"] is None else str(row["measured"])
            values.append(f"{shown} / {row['bound']}")
        strategy = cells["f32x4"]["strategy"]
        lines.append(f"| {op} | " + " | ".join(values) + f" | {strategy} | {cells['f32x4']['range']} |")
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
