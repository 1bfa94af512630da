"""Charts as inline SVG, drawn in Python: lines over time, stacked bars over time, horizontal stacked bars.

Every string that reaches the SVG (series names, labels, tooltips) goes through ``Markup.format``,
which escapes its arguments, so a reviewer or model name cannot inject markup. Each data mark (a
point or a bar) carries the class ``mark`` and a ``<title>`` tooltip with its exact value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 12, 26
ROW = 22
TICKS = 4
MAX_X_LABELS = 6
Formatter = Callable[[float], str]


@dataclass(frozen=True)
class Part:
    """One series: a line, or one layer of stacked bars."""

    name: str
    values: Sequence[float | None]
    color: str
    dashed: bool = False


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above ``value`` (1 for nothing)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value * (1 - 1e-9):
            return float(step * power)
    return float(10 * power)  # pragma: no cover


def axis_top(value: float) -> float:
    """The top of a y axis over ``value`` with ``TICKS`` round steps (counts get whole steps)."""
    step = nice_ceiling(value / TICKS)
    if value >= TICKS and step < 1:
        step = 1.0
    return step * TICKS


def _num(value: float) -> str:
    return f"{value:.1f}"


def _empty(label: str) -> Markup:
    return Markup('<p class="empty">{}: no data in this period.</p>').format(label)


def _legend(parts: Sequence[Part]) -> Markup:
    items = [
        Markup('<span class="key{}"><i style="background:{}"></i>{}</span>').format(
            " dashed" if p.dashed else "", p.color, p.name
        )
        for p in parts
    ]
    return Markup('<figcaption class="legend">{}</figcaption>').format(Markup("").join(items))


def _y_axis(top_value: float, fmt: Formatter, plot_height: float) -> list[Markup]:
    out = []
    for k in range(TICKS + 1):
        value = top_value * k / TICKS
        y = TOP + plot_height - plot_height * k / TICKS
        out.append(
            Markup('<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/>').format(LEFT, WIDTH - RIGHT, _num(y), _num(y))
        )
        out.append(
            Markup('<text class="tick" x="{}" y="{}" text-anchor="end">{}</text>').format(
                LEFT - 6, _num(y + 4), fmt(value)
            )
        )
    return out


def _x_labels(labels: Sequence[str], step: float, plot_height: float) -> list[Markup]:
    n = len(labels)
    every = max(1, math.ceil(n / MAX_X_LABELS))
    shown = sorted({*range(0, n, every), n - 1})
    if len(shown) > 1 and shown[-1] - shown[-2] < every:
        shown.pop(-2)
    anchors = {0: "start", n - 1: "end"} if n > 1 else {}
    return [
        Markup('<text class="tick" x="{}" y="{}" text-anchor="{}">{}</text>').format(
            _num(LEFT + step * (i + 0.5)), _num(TOP + plot_height + 17), anchors.get(i, "middle"), labels[i]
        )
        for i in shown
    ]


def _figure(label: str, body: Sequence[Markup], height: float, parts: Sequence[Part]) -> Markup:
    return Markup(
        '<figure class="chart"><svg viewBox="0 0 {w} {h}" role="img" aria-label="{label}" '
        'preserveAspectRatio="xMidYMid meet">{body}</svg>{legend}</figure>'
    ).format(w=WIDTH, h=_num(height), label=label, body=Markup("").join(body), legend=_legend(parts))


def line_chart(
    labels: Sequence[str], lines: Sequence[Part], *, label: str, fmt: Formatter, most: float | None = None
) -> Markup:
    """One line per part over the buckets in ``labels``; a missing value (None) breaks the line. ``most``:
    the largest value there can be (1 for a rate), where the axis stops whatever the values are."""
    values = [v for p in lines for v in p.values if v is not None]
    if not labels or not values:
        return _empty(label)
    plot_height = HEIGHT - TOP - BOTTOM
    top_value = axis_top(max(values))
    if most is not None:
        top_value = min(top_value, most)  # every rate 0: 0% to 100%, not 0% to 400%
    step = (WIDTH - LEFT - RIGHT) / len(labels)
    body = [*_y_axis(top_value, fmt, plot_height), *_x_labels(labels, step, plot_height)]
    for part in lines:
        path: list[str] = []
        points = []
        pen_up = True
        for i, value in enumerate(part.values):
            if value is None:
                pen_up = True
                continue
            x = LEFT + step * (i + 0.5)
            y = TOP + plot_height * (1 - value / top_value)
            path.append(f"{'M' if pen_up else 'L'}{_num(x)} {_num(y)}")
            pen_up = False
            points.append(
                Markup('<circle class="mark" cx="{}" cy="{}" r="2.5" fill="{}"><title>{}</title></circle>').format(
                    _num(x), _num(y), part.color, f"{part.name}, {labels[i]}: {fmt(value)}"
                )
            )
        body.append(
            Markup('<path class="line" d="{}" stroke="{}"{}/>').format(
                " ".join(path), part.color, Markup(' stroke-dasharray="5 4"') if part.dashed else ""
            )
        )
        body.extend(points)
    return _figure(label, body, HEIGHT, lines)


def stacked_bar_chart(labels: Sequence[str], layers: Sequence[Part], *, label: str, fmt: Formatter) -> Markup:
    """A bar per bucket in ``labels``, its layers stacked bottom-up in order."""
    totals = [sum(p.values[i] or 0 for p in layers) for i in range(len(labels))]
    if not labels or not any(totals):
        return _empty(label)
    plot_height = HEIGHT - TOP - BOTTOM
    top_value = axis_top(max(totals))
    step = (WIDTH - LEFT - RIGHT) / len(labels)
    bar = max(1.0, step * 0.78)
    body = [*_y_axis(top_value, fmt, plot_height), *_x_labels(labels, step, plot_height)]
    for i in range(len(labels)):
        base = 0.0
        for part in layers:
            value = part.values[i] or 0
            if value <= 0:
                continue
            y_top = TOP + plot_height * (1 - (base + value) / top_value)
            h = plot_height * value / top_value
            body.append(
                Markup(
                    '<rect class="mark" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>'
                ).format(
                    _num(LEFT + step * i + (step - bar) / 2),
                    _num(y_top),
                    _num(bar),
                    _num(max(h, 0.5)),
                    part.color,
                    f"{part.name}, {labels[i]}: {fmt(value)}",
                )  # fmt: skip
            )
            base += value
    return _figure(label, body, HEIGHT, layers)


def hbar_chart(categories: Sequence[str], layers: Sequence[Part], *, label: str, fmt: Formatter) -> Markup:
    """A horizontal bar per category, its layers stacked left to right; the total at the bar's end."""
    totals = [sum(p.values[i] or 0 for p in layers) for i in range(len(categories))]
    if not categories or not any(totals):
        return _empty(label)
    left = 150
    width = WIDTH - left - 70
    top_value = max(totals)
    height = TOP + ROW * len(categories) + 8
    body: list[Markup] = []
    for i, category in enumerate(categories):
        y = TOP + ROW * i
        body.append(
            Markup('<text class="tick" x="{}" y="{}" text-anchor="end">{}</text>').format(
                left - 8, _num(y + ROW / 2 + 4), category if len(category) <= 22 else category[:21] + "…"
            )
        )
        x = float(left)
        for part in layers:
            value = part.values[i] or 0
            if value <= 0:
                continue
            w = width * value / top_value
            body.append(
                Markup(
                    '<rect class="mark" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>'
                ).format(
                    _num(x),
                    _num(y + 3),
                    _num(max(w, 0.5)),
                    ROW - 6,
                    part.color,
                    f"{category}, {part.name}: {fmt(value)}",
                )  # fmt: skip
            )
            x += w
        body.append(
            Markup('<text class="tick" x="{}" y="{}">{}</text>').format(
                _num(x + 6), _num(y + ROW / 2 + 4), fmt(totals[i])
            )
        )
    return _figure(label, body, height, layers)
