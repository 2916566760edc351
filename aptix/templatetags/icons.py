"""`{% icon "pin" %}`: the page's symbols as inline SVG, drawn with the text colour.

Emoji and pictographic characters (📌, ⬇, ☰…) show as empty boxes where no emoji font is installed,
so the UI draws its symbols itself: each icon is a few SVG path strokes in a 16×16 box, inline in the
markup (the Content-Security-Policy allows no inline style or script, and an SVG's presentation
attributes are neither). An icon is decoration (`aria-hidden`); `{% icon "pin" "Pinned" %}` adds its
text alternative as visually hidden text, for a symbol that says something no text beside it does.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

# name → the path data of a 16×16 icon, stroked with currentColor
ICONS: dict[str, str] = {
    "pin": "M6 2h4M7 2v4L4.5 9h7L9 6V2M8 9v5",
    "download": "M8 2v8M4.5 7 8 10.5 11.5 7M3 13.5h10",
    "menu": "M2.5 4h11M2.5 8h11M2.5 12h11",
    "folder": "M1.5 4v8.5h13V5.5H7.5L6 4z",
    "more": "M3.5 8h.01M8 8h.01M12.5 8h.01",
    "check": "M3 8.5 6.5 12 13 4.5",
    "cross": "M4 4l8 8M12 4l-8 8",
    "stop": "M4.5 4.5h7v7h-7z",
    "blocked": "M8 2.5a5.5 5.5 0 1 0 0 11 5.5 5.5 0 1 0 0-11M4.1 11.9l7.8-7.8",
    "branch": "M4 2.5v6.5a2 2 0 0 0 2 2h7M10.5 8.5 13 11l-2.5 2.5",
    "previous": "M10 3 5 8l5 5",
    "next": "M6 3l5 5-5 5",
    # The header's inbox (templates/base.html): a bell and its clapper.
    # The header's Automations link on a phone, where its word does not fit: a clock.
    "clock": "M8 2a6 6 0 1 0 0 12A6 6 0 1 0 8 2M8 4.5V8l2.5 1.5",
    "bell": "M4 11.5V7a4 4 0 0 1 8 0v4.5l1.5 1.5h-11zM6.5 13.5a1.5 1.5 0 0 0 3 0",
    "document": "M4 1.5h5.5l3 3v10h-8.5zM9.5 1.5v3h3M6 8h4.5M6 10.5h4.5",
    # An answer's rating (templates/agents/_feedback.html): a thumb and its cuff, the one the other upside down.
    "thumbs-up": "M5 7v7H2.5V7zM5 7l3-5a1.5 1.5 0 0 1 2 1.5L9.5 6H13a1.5 1.5 0 0 1 1.4 1.9l-1.5 5"
    "A1.5 1.5 0 0 1 11.5 14H5",
    "thumbs-down": "M5 9V2H2.5v7zM5 9l3 5a1.5 1.5 0 0 0 2-1.5L9.5 10H13a1.5 1.5 0 0 0 1.4-1.9l-1.5-5"
    "A1.5 1.5 0 0 0 11.5 2H5",
}
# Dots need a heavier stroke to be seen.
WIDTHS: dict[str, str] = {"more": "3"}


@register.simple_tag
def icon(name: str, label: str = "") -> SafeString:
    """The icon `name` (a KeyError for an unknown one, so a typo fails the page's tests), with `label`
    as its visually hidden text alternative when given."""
    svg = format_html(
        '<svg class="icon icon-{}" viewBox="0 0 16 16" width="16" height="16" fill="none" stroke="currentColor" '
        'stroke-width="{}" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false">'
        '<path d="{}"/></svg>',
        name,
        WIDTHS.get(name, "1.6"),
        ICONS[name],
    )
    if label:
        return format_html('{}<span class="visually-hidden">{}</span>', svg, label)
    return svg
