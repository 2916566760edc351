"""The usage chart: an SVG bar chart drawn on the server (no script, no CDN), one bar per day.

It is an image with a text alternative (role="img", a <title> and a <desc> summing it up); each bar
has its own <title> for a pointer's tooltip, and the table beside it on the page carries the same
figures for a screen reader."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 220, 56, 24, 12


def _short(value: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.1f}{suffix}"
    return f"{value:.0f}"


def bar_chart(points: Sequence[tuple[str, float]], *, title: str, unit: str) -> SafeString:
    """`points`: (label, value) in order, e.g. (day, tokens). An empty series draws an empty frame."""
    top = max((value for _, value in points), default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    step = plot_w / max(len(points), 1)
    bar_w = max(step * 0.8, 1)
    unit_text = escape(unit)
    bars = mark_safe(  # the labels and the unit are escaped; the rest are numbers
        "".join(
            f'<rect x="{LEFT + i * step + (step - bar_w) / 2:.1f}" y="{TOP + plot_h - plot_h * value / top:.1f}" '
            f'width="{bar_w:.1f}" height="{plot_h * value / top:.1f}"><title>{escape(label)}: '
            f"{value:,.0f} {unit_text}</title></rect>"
            for i, (label, value) in enumerate(points)
        )
    )
    first, last = (points[0][0], points[-1][0]) if points else ("", "")
    total = sum(value for _, value in points)
    desc = f"{len(points)} bars from {first} to {last}; highest {_short(top)}, total {_short(total)} {unit}."
    return format_html(
        '<svg class="usage-chart" viewBox="0 0 {w} {h}" role="img" aria-labelledby="usage-chart-title '
        'usage-chart-desc" xmlns="http://www.w3.org/2000/svg"><title id="usage-chart-title">{title}</title>'
        '<desc id="usage-chart-desc">{desc}</desc>'
        '<line class="axis" x1="{left}" y1="{base}" x2="{right}" y2="{base}"/>'
        '<text class="tick" x="{tick_x}" y="{top_y}" text-anchor="end">{top}</text>'
        '<text class="tick" x="{tick_x}" y="{base}" text-anchor="end">0</text>'
        '<text class="tick" x="{left}" y="{label_y}">{first}</text>'
        '<text class="tick" x="{right}" y="{label_y}" text-anchor="end">{last}</text>'
        '<g class="bars">{bars}</g></svg>',
        w=WIDTH,
        h=HEIGHT,
        title=title,
        desc=desc,
        left=LEFT,
        right=WIDTH - 8,
        base=TOP + plot_h,
        tick_x=LEFT - 6,
        top_y=TOP + 8,
        top=_short(top),
        label_y=HEIGHT - 6,
        first=first,
        last=last,
        bars=bars,
    )
