"""The dashboard's charts: what their axes say."""

from __future__ import annotations

import re

from codejury.dashboard import charts
from codejury.dashboard.charts import Part
from codejury.dashboard.page import percent


def ticks(svg: str) -> list[str]:
    """The y axis's labels, bottom up (the x axis's labels sit below the plot, at y past 200)."""
    found = re.findall(r'<text class="tick" x="[\d.]+" y="([\d.]+)" text-anchor="end">([^<]*)</text>', svg)
    return [text for y, text in found if float(y) < 200]


def test_a_rate_axis_stops_at_100_percent_when_every_rate_is_0() -> None:
    svg = charts.line_chart(
        ["Mon", "Tue", "Wed"], [Part("acted on", [0.0, 0.0, 0.0], "#16a34a")], label="rate", fmt=percent, most=1.0
    )
    assert ticks(svg) == ["0%", "25%", "50%", "75%", "100%"]


def test_a_rate_axis_still_fits_small_rates() -> None:
    svg = charts.line_chart(["Mon", "Tue"], [Part("hit", [0.05, 0.12], "#000")], label="rate", fmt=percent, most=1.0)
    assert ticks(svg) == ["0%", "5%", "10%", "15%", "20%"]


def test_a_count_axis_is_not_capped() -> None:
    svg = charts.line_chart(["Mon", "Tue"], [Part("n", [0.0, 7.0], "#000")], label="n", fmt=lambda v: f"{v:g}")
    assert ticks(svg) == ["0", "2", "4", "6", "8"]
