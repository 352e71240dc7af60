"""Timings across backends and sizes as an inline SVG line chart, drawn as text in Python.

One line per series (a backend, or the checks alone) and phase (a backend's
first launch dashed with hollow points, its warm launches solid with filled
points; the legend shows both), x the example size (evenly
spaced, sorted), y the time in milliseconds from 0 to a rounded top. A
series keeps its colour in every chart and session (SERIES_COLORS, then a
colour chosen from the name). Numbers are written out ("2,000", "1.5k"),
never in exponent form. Each point carries a ``<title>`` with its exact
value. Text is escaped; the SVG is self-contained (no script, no external
reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Sequence

__all__ = ["TimingPoint", "SERIES_COLORS", "OTHER_COLORS", "PHASE_FIRST", "PHASE_WARM", "series_color",
           "size_label", "ms_label", "timing_chart_svg", "nice_ceiling"]

#: the colour of each series the page shows, the same in every chart and session
SERIES_COLORS: dict[str, str] = {"wasm": "#1f77b4", "webgpu": "#d62728", "cpu": "#2ca02c", "checks only": "#7f7f7f"}
#: colours of other series, picked by a digest of the name (stable across sessions)
OTHER_COLORS: tuple[str, ...] = ("#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22")
#: a backend's first launch on a run (compilation included when the program is new there) and a warm launch
PHASE_FIRST = "first"
PHASE_WARM = "warm"
_WIDTH, _HEIGHT = 560, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 150, 16, 40
#: legend names longer than this are cut (the full name is in the tooltip)
_LEGEND_CHARS = 18


@dataclass(frozen=True)
class TimingPoint:
    """One measurement: the series (backend) it belongs to, the example size and the time in seconds."""

    series: str
    size: int
    seconds: float
    example: str = ""
    phase: str = PHASE_WARM


def series_color(name: str) -> str:
    """The colour of series ``name``: SERIES_COLORS, else one of OTHER_COLORS chosen by the name's bytes."""
    if name in SERIES_COLORS:
        return SERIES_COLORS[name]
    return OTHER_COLORS[sum(name.encode()) % len(OTHER_COLORS)]


def _plain(value: float, significant: int = 3) -> str:
    """``value`` in at most ``significant`` significant digits (whole numbers in full), never in exponent form."""
    if value == 0:
        return "0"
    digits = max(0, significant - 1 - math.floor(math.log10(abs(value))))
    text = f"{round(value, digits):,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def size_label(size: int) -> str:
    """An example size for an axis: 48, 1k, 1.5k, 20k, 1M, 2.5M (thousands and millions, no exponent)."""
    for unit, scale in (("M", 1_000_000), ("k", 1_000)):
        if size >= scale:
            return _plain(size / scale) + unit
    return str(size)


def ms_label(ms: float) -> str:
    """Milliseconds for an axis: 0, 0.25, 12.5, 187.5, 2,000 (no exponent)."""
    return _plain(ms, 4)

def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k that is >= ``value`` (1 for values <= 0)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= value * (1 - 1e-12):
            return step * power
    return 10.0 * power


def timing_chart_svg(points: Sequence[TimingPoint], *, title: str = "time (ms) by example size") -> str:
    """The SVG markup of ``points``; an empty chart that says so when there are none.

    Several points of one series and phase at one size are averaged.
    """
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="timing-chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
            f'width="{_WIDTH}" height="{_HEIGHT}" role="img" aria-label="{escape(title)}">')
    if not points:
        return (head + f'<text x="{_WIDTH / 2}" y="{_HEIGHT / 2}" text-anchor="middle" class="empty">'
                "no timings yet: press Run</text></svg>")
    lines = list(dict.fromkeys((p.series, p.phase) for p in points))
    sizes = sorted({p.size for p in points})
    sums: dict[tuple[tuple[str, str], int], list[float]] = {}
    for p in points:
        sums.setdefault(((p.series, p.phase), p.size), []).append(p.seconds * 1e3)
    means = {key: sum(values) / len(values) for key, values in sums.items()}
    top = nice_ceiling(max(means.values()))
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x_of(size: int) -> float:
        return _LEFT + (plot_w / 2 if len(sizes) == 1 else plot_w * sizes.index(size) / (len(sizes) - 1))

    def y_of(ms: float) -> float:
        return _TOP + plot_h * (1 - ms / top)

    parts = [head, f"<title>{escape(title)}</title>"]
    for i in range(5):
        ms = top * i / 4
        y = y_of(ms)
        parts.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{ms_label(ms)}</text>')
    for size in sizes:
        parts.append(f'<text x="{x_of(size):.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle" '
                     f'font-size="11">{size_label(size)}<title>{size}</title></text>')
    parts.append(f'<text x="{_LEFT + plot_w / 2}" y="{_HEIGHT - 6}" text-anchor="middle" font-size="11">'
                 f'{escape(title)}</text>')
    for index, line in enumerate(lines):
        name, phase = line
        color = series_color(name)
        dash = ' stroke-dasharray="5,4"' if phase == PHASE_FIRST else ""
        label = f"{name} ({phase})" if phase == PHASE_FIRST else name
        coords = [(x_of(size), y_of(means[(line, size)]), size) for size in sizes if (line, size) in means]
        if len(coords) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in coords)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{path}"/>')
        for x, y, size in coords:
            fill = "#fff" if phase == PHASE_FIRST else color
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{fill}" stroke="{color}" stroke-width="2" '
                         f'data-series="{escape(name)}" data-phase="{phase}" data-size="{size}"><title>'
                         f'{escape(label)}, size {size}: {means[(line, size)]:.3f} ms</title></circle>')
        legend_y = _TOP + 8 + 18 * index
        parts.append(f'<line x1="{_WIDTH - _RIGHT + 8}" y1="{legend_y - 2}" x2="{_WIDTH - _RIGHT + 26}" '
                     f'y2="{legend_y - 2}" stroke="{color}" stroke-width="3"{dash}/>')
        # the point's marker too: a chart of one size has no lines, only hollow (first) and filled (warm) points
        parts.append(f'<circle class="legend" cx="{_WIDTH - _RIGHT + 17}" cy="{legend_y - 2}" r="4" '
                     f'fill="{"#fff" if phase == PHASE_FIRST else color}" stroke="{color}" stroke-width="2"/>')
        shown = label if len(label) <= _LEGEND_CHARS else label[:_LEGEND_CHARS - 1] + "…"
        parts.append(f'<text x="{_WIDTH - _RIGHT + 30}" y="{legend_y + 2}" font-size="12">{escape(shown)}'
                     f'<title>{escape(label)}</title></text>')
    parts.append("</svg>")
    return "".join(parts)
