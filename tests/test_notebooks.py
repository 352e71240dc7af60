"""The lab's notebooks (notebooks/), read natively: the kernel timings notebook's chart is readable.

tests/web/test_lab.py runs the notebooks in the browser; here the chart function of
kernel_timings.ipynb runs on made-up timings (it is pure Python: its cell's IPython display is not
run) and its SVG is read back.
"""

from __future__ import annotations

import ast
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"
#: an upper bound of the width of a character of the chart's 11 px sans-serif text
CHAR_WIDTH = 0.6 * 11


def notebook_function(notebook: str, name: str):
    """Function ``name`` defined in a code cell of ``notebook``, with the cell's imports (nothing else of
    the cell runs)."""
    cells = json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        tree = ast.parse("".join(cell["source"])) if cell["cell_type"] == "code" else None
        if tree and any(isinstance(node, ast.FunctionDef) and node.name == name for node in tree.body):
            keep = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name
                    or isinstance(node, ast.Import)]
            namespace: dict = {}
            exec(compile(ast.Module(keep, type_ignores=[]), notebook, "exec"), namespace)
            return namespace[name]
    raise AssertionError(f"{notebook} defines no function {name}")


def kernel_timings_svg() -> tuple[ET.Element, dict]:
    """The kernel timings chart of rates spanning wasm's and webgpu's (0.1 to 170 M elements/s), parsed."""
    sizes = [1 << 10, 1 << 13, 1 << 16]
    timings = {}
    for name, scale in (("wasm", 1.0), ("webgpu", 40.0)):
        for kernel, factor in (("add", 1.0), ("exp", 1.2), ("sum", 0.8)):
            for n in sizes:
                timings[(name, kernel, n)] = scale * factor * (0.25e-3 + n * 5e-9)
    rates = {key: n / seconds / 1e6 for key, seconds in timings.items() for n in [key[2]]}
    return ET.fromstring(notebook_function("kernel_timings.ipynb", "chart")(timings, sizes)), rates


def test_every_line_of_the_kernel_timings_chart_has_a_legend_entry_in_its_style():
    svg, _ = kernel_timings_svg()
    style = lambda node: (node.get("stroke"), node.get("stroke-dasharray"))  # noqa: E731
    lines = [style(node) for node in svg.iter(f"{SVG}polyline")]
    legend = {style(node) for node in svg.iter(f"{SVG}line") if node.get("stroke") != "#ddd"}
    assert len(lines) == len(set(lines)) == 6 and set(lines) <= legend, (lines, legend)


def test_the_kernel_timings_chart_labels_its_log_scale_and_its_text_fits():
    svg, rates = kernel_timings_svg()
    width = float(svg.get("width"))
    labels = []
    for text in svg.iter(f"{SVG}text"):
        anchor, x, content = text.get("text-anchor", "start"), float(text.get("x")), text.text or ""
        extent = {"start": (x, x + CHAR_WIDTH * len(content)), "middle": (x - CHAR_WIDTH * len(content) / 2,
                  x + CHAR_WIDTH * len(content) / 2), "end": (x - CHAR_WIDTH * len(content), x)}[anchor]
        assert 0 <= extent[0] and extent[1] <= width, (content, extent, width)
        try:
            labels.append(float(content.replace(",", "")))
        except ValueError:
            pass
    # the scale's labels are powers of ten spanning every rate
    assert labels and all(math.log10(label).is_integer() for label in labels), labels
    assert min(labels) <= min(rates.values()) and max(labels) >= max(rates.values()), (labels, rates)
