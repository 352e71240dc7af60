"""Timings across backends and sizes as an inline SVG line chart, drawn as text in Python.

One line per series (a backend, or the checks alone), x the example size
(evenly spaced, sorted), y the time in milliseconds from 0 to a rounded top.
Each point carries a ``<title>`` with its exact value. Text is escaped; the
SVG is self-contained (no script, no external reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Sequence

__all__ = ["TimingPoint", "SERIES_COLORS", "timing_chart_svg", "nice_ceiling"]

#: line colours, one per series in order of first appearance (repeating)
SERIES_COLORS: tuple[str, ...] = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")
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


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k that is >= ``value`` (1 for values <= 0)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= value * (1 - 1e-12):
            return step * power
    return 10.0 * power


def _label(ms: float) -> str:
    return f"{ms:.3g}"


def timing_chart_svg(points: Sequence[TimingPoint], *, title: str = "time (ms) by example size") -> str:
    """The SVG markup of ``points``; an empty chart that says so when there are none.

    Several points of one series at one size are averaged.
    """
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="timing-chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
            f'width="{_WIDTH}" height="{_HEIGHT}" role="img" aria-label="{escape(title)}">')
    if not points:
        return (head + f'<text x="{_WIDTH / 2}" y="{_HEIGHT / 2}" text-anchor="middle" class="empty">'
                "no timings yet: press Run</text></svg>")
    series = list(dict.fromkeys(p.series for p in points))
    sizes = sorted({p.size for p in points})
    sums: dict[tuple[str, int], list[float]] = {}
    for p in points:
        sums.setdefault((p.series, p.size), []).append(p.seconds * 1e3)
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
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{_label(ms)}</text>')
    for size in sizes:
        parts.append(f'<text x="{x_of(size):.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle" '
                     f'font-size="11">{size}</text>')
    parts.append(f'<text x="{_LEFT + plot_w / 2}" y="{_HEIGHT - 6}" text-anchor="middle" font-size="11">'
                 f'{escape(title)}</text>')
    for index, name in enumerate(series):
        color = SERIES_COLORS[index % len(SERIES_COLORS)]
        coords = [(x_of(size), y_of(means[(name, size)]), size) for size in sizes if (name, size) in means]
        if len(coords) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in coords)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        for x, y, size in coords:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}" data-series="{escape(name)}" '
                         f'data-size="{size}"><title>{escape(name)}, size {size}: '
                         f'{means[(name, size)]:.3f} ms</title></circle>')
        legend_y = _TOP + 8 + 18 * index
        parts.append(f'<rect x="{_WIDTH - _RIGHT + 12}" y="{legend_y - 8}" width="12" height="12" fill="{color}"/>')
        shown = name if len(name) <= _LEGEND_CHARS else name[:_LEGEND_CHARS - 1] + "…"
        parts.append(f'<text x="{_WIDTH - _RIGHT + 30}" y="{legend_y + 2}" font-size="12">{escape(shown)}'
                     f'<title>{escape(name)}</title></text>')
    parts.append("</svg>")
    return "".join(parts)
