"""Inline SVG bar charts for the HTML report: rows in, an `<svg>` string out.

Hand-written SVG keeps the report one self-contained file with no script and
no chart library. Every label is escaped here; callers pass raw strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

LABEL_WIDTH = 190
PLOT_WIDTH = 420
VALUE_WIDTH = 160
ROW_HEIGHT = 26
BAR_HEIGHT = 16
TOP = 28
WIDTH = LABEL_WIDTH + PLOT_WIDTH + VALUE_WIDTH


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: float | None
    """Delta in -1..1 (`delta_chart`) or a rate in 0..1 (`rate_chart`); None draws no bar."""
    caption: str
    """Text right of the plot (the formatted value, a verdict, `2/4`)."""
    tone: str
    """A CSS class suffix: `regressed`, `improved`, `unchanged`, `inconclusive`, `pass`, `fail`."""


def delta_chart(bars: Sequence[Bar], *, element_id: str, title: str) -> str:
    """Diverging bars around a zero axis: left for a drop, right for a gain."""
    centre = LABEL_WIDTH + PLOT_WIDTH / 2
    half = PLOT_WIDTH / 2 - 4
    body: list[str] = [
        _axis(centre, len(bars)),
        _tick(LABEL_WIDTH + 4, "-1"),
        _tick(centre, "0"),
        _tick(LABEL_WIDTH + PLOT_WIDTH - 4, "+1"),
    ]
    for row, bar in enumerate(bars):
        y = TOP + row * ROW_HEIGHT
        body.append(_label(bar.label, y))
        if bar.value is not None:
            length = abs(max(-1.0, min(1.0, bar.value))) * half
            x = centre - length if bar.value < 0 else centre
            # A zero delta still gets a sliver, so "unchanged" is visibly drawn, not missing.
            body.append(_rect(x, y, max(length, 2.0), bar.tone))
        body.append(_caption(bar.caption, y))
    return _svg(element_id, title, len(bars), body)


def rate_chart(bars: Sequence[Bar], *, element_id: str, title: str) -> str:
    """Bars from zero: a score or trial pass rate in 0..1 per task."""
    body: list[str] = [
        _axis(LABEL_WIDTH, len(bars)),
        _tick(LABEL_WIDTH, "0"),
        _tick(LABEL_WIDTH + PLOT_WIDTH / 2, "0.5"),
        _tick(LABEL_WIDTH + PLOT_WIDTH - 4, "1"),
    ]
    for row, bar in enumerate(bars):
        y = TOP + row * ROW_HEIGHT
        body.append(_label(bar.label, y))
        if bar.value is not None:
            length = max(0.0, min(1.0, bar.value)) * (PLOT_WIDTH - 4)
            body.append(_rect(LABEL_WIDTH, y, max(length, 2.0), bar.tone))
        body.append(_caption(bar.caption, y))
    return _svg(element_id, title, len(bars), body)


def _svg(element_id: str, title: str, rows: int, body: list[str]) -> str:
    height = TOP + rows * ROW_HEIGHT + 8
    return (
        f'<svg id="{escape(element_id)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'role="img" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _axis(x: float, rows: int) -> str:
    bottom = TOP + rows * ROW_HEIGHT
    return f'<line class="axis" x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{bottom}"/>'


def _tick(x: float, text: str) -> str:
    return (
        f'<text class="tick" x="{x:.1f}" y="{TOP - 10}" text-anchor="middle">{escape(text)}</text>'
    )


def _label(text: str, y: float) -> str:
    return (
        f'<text class="label" x="{LABEL_WIDTH - 8}" y="{y + BAR_HEIGHT - 3:.1f}" '
        f'text-anchor="end">{escape(text)}</text>'
    )


def _caption(text: str, y: float) -> str:
    return (
        f'<text class="caption" x="{LABEL_WIDTH + PLOT_WIDTH + 8}" '
        f'y="{y + BAR_HEIGHT - 3:.1f}">{escape(text)}</text>'
    )


def _rect(x: float, y: float, width: float, tone: str) -> str:
    return (
        f'<rect class="bar bar-{escape(tone)}" x="{x:.1f}" y="{y:.1f}" '
        f'width="{width:.1f}" height="{BAR_HEIGHT}"/>'
    )
