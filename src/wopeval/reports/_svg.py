"""Inline SVG bar charts for the HTML report: rows in, an `<svg>` string out.

Hand-written SVG keeps the report one self-contained file with no script and
no chart library. The geometry (`delta_shapes`, `rate_shapes`) is computed
apart from the markup, so the dashboard draws the same charts from its own
autoescaped templates. Every label is escaped here; callers pass raw strings.
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


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    width: float
    tone: str


@dataclass(frozen=True, slots=True)
class Row:
    """One bar's row: its label and caption at `text_y`, its rectangle if it has a value."""

    label: str
    caption: str
    text_y: float
    rect: Rect | None


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    text: str


@dataclass(frozen=True, slots=True)
class Chart:
    """Where everything of one chart goes, in the coordinates of its viewBox."""

    width: int
    height: int
    axis_x: float
    axis_top: float
    axis_bottom: float
    ticks: tuple[Tick, ...]
    rows: tuple[Row, ...]
    label_x: float = LABEL_WIDTH - 8
    caption_x: float = LABEL_WIDTH + PLOT_WIDTH + 8
    tick_y: float = TOP - 10
    bar_height: int = BAR_HEIGHT


def delta_shapes(bars: Sequence[Bar]) -> Chart:
    """Diverging bars around a zero axis: left for a drop, right for a gain."""
    centre = LABEL_WIDTH + PLOT_WIDTH / 2
    half = PLOT_WIDTH / 2 - 4
    ticks = (
        Tick(LABEL_WIDTH + 4, "-1"),
        Tick(centre, "0"),
        Tick(LABEL_WIDTH + PLOT_WIDTH - 4, "+1"),
    )
    rows = []
    for row, bar in enumerate(bars):
        y = TOP + row * ROW_HEIGHT
        rect = None
        if bar.value is not None:
            length = abs(max(-1.0, min(1.0, bar.value))) * half
            x = centre - length if bar.value < 0 else centre
            # A zero delta still gets a sliver, so "unchanged" is visibly drawn, not missing.
            rect = Rect(x, y, max(length, 2.0), bar.tone)
        rows.append(Row(bar.label, bar.caption, y + BAR_HEIGHT - 3, rect))
    return _chart(centre, ticks, rows)


def rate_shapes(bars: Sequence[Bar]) -> Chart:
    """Bars from zero: a score or trial pass rate in 0..1 per task."""
    ticks = (
        Tick(LABEL_WIDTH, "0"),
        Tick(LABEL_WIDTH + PLOT_WIDTH / 2, "0.5"),
        Tick(LABEL_WIDTH + PLOT_WIDTH - 4, "1"),
    )
    rows = []
    for row, bar in enumerate(bars):
        y = TOP + row * ROW_HEIGHT
        rect = None
        if bar.value is not None:
            length = max(0.0, min(1.0, bar.value)) * (PLOT_WIDTH - 4)
            rect = Rect(LABEL_WIDTH, y, max(length, 2.0), bar.tone)
        rows.append(Row(bar.label, bar.caption, y + BAR_HEIGHT - 3, rect))
    return _chart(LABEL_WIDTH, ticks, rows)


def _chart(axis_x: float, ticks: tuple[Tick, ...], rows: list[Row]) -> Chart:
    bottom = TOP + len(rows) * ROW_HEIGHT
    return Chart(WIDTH, bottom + 8, axis_x, TOP - 6, bottom, ticks, tuple(rows))


def delta_chart(bars: Sequence[Bar], *, element_id: str, title: str) -> str:
    return _svg(delta_shapes(bars), element_id, title)


def rate_chart(bars: Sequence[Bar], *, element_id: str, title: str) -> str:
    return _svg(rate_shapes(bars), element_id, title)


def _svg(chart: Chart, element_id: str, title: str) -> str:
    body = [
        f'<line class="axis" x1="{chart.axis_x:.1f}" y1="{chart.axis_top}" '
        f'x2="{chart.axis_x:.1f}" y2="{chart.axis_bottom}"/>'
    ]
    body += [
        f'<text class="tick" x="{tick.x:.1f}" y="{chart.tick_y}" text-anchor="middle">'
        f"{escape(tick.text)}</text>"
        for tick in chart.ticks
    ]
    for row in chart.rows:
        body.append(
            f'<text class="label" x="{chart.label_x}" y="{row.text_y:.1f}" '
            f'text-anchor="end">{escape(row.label)}</text>'
        )
        if row.rect is not None:
            rect = row.rect
            body.append(
                f'<rect class="bar bar-{escape(rect.tone)}" x="{rect.x:.1f}" y="{rect.y:.1f}" '
                f'width="{rect.width:.1f}" height="{chart.bar_height}"/>'
            )
        body.append(
            f'<text class="caption" x="{chart.caption_x}" y="{row.text_y:.1f}">'
            f"{escape(row.caption)}</text>"
        )
    return (
        f'<svg id="{escape(element_id)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'role="img" viewBox="0 0 {chart.width} {chart.height}" width="{chart.width}" '
        f'height="{chart.height}">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )
