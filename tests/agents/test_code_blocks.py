"""Code in answers (issue "Workspace a team uses all day", item 13): highlighted on the server with
Pygments, sanitised (only Pygments' span classes are new), framed with a language label and a copy
button; the static stylesheet is what pygmentize generates."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from pygments.formatters import HtmlFormatter

from agents.web.markdown import PYGMENTS_CLASSES, render_markdown

PYTHON = "Here:\n\n```python\ndef f(x):\n    return '<b>' + x\n```\n"


def test_fenced_code_is_highlighted_with_pygments_spans():
    html = str(render_markdown(PYTHON))
    assert '<code class="language-python"><span class="k">def</span>' in html
    assert '<span class="nf">f</span>' in html
    assert "&lt;b&gt;" in html and "<b>" not in html  # the code's text stays escaped


def test_each_code_block_has_a_language_label_and_a_copy_button():
    html = str(render_markdown(PYTHON + "\n```\nplain\n```\n\n```nosuchlang\nx = 1\n```\n"))
    assert re.findall(r'<span class="code-lang">([^<]*)</span>', html) == ["Python", "text", "nosuchlang"]
    assert html.count('<button type="button" class="copy" data-copy="code"') == 3
    assert html.count('<div class="code-block highlight">') == html.count("</code></pre></div>") == 3
    assert "<pre><code>plain\n</code></pre>" in html  # no language: shown plain, not guessed


def test_a_language_name_cannot_break_out_of_the_label():
    html = str(render_markdown('```x"><img src=/ onerror=alert(1)>\ncode\n```'))
    assert "<img" not in html
    assert '<span class="code-lang">x&quot;&gt;&lt;img</span>' in html


def test_the_model_cannot_smuggle_spans_or_other_classes():
    # Raw HTML is escaped by markdown-it; what the sanitiser sees from the highlighter is spans with
    # Pygments' classes only.
    html = str(render_markdown('<span class="k" onclick="x()">hi</span> <div class="code-block">y</div>'))
    assert "<span" not in html and "<div" not in html
    assert {"k", "nf", "s2", "c1"} <= PYGMENTS_CLASSES and "code-block" not in PYGMENTS_CLASSES


def test_long_code_is_shown_plain():
    code = "x = 1\n" * 10_000
    html = str(render_markdown(f"```python\n{code}```"))
    assert '<span class="k"' not in html and '<span class="code-lang">Python</span>' in html


def _styles(style: str) -> list[str]:
    lines = HtmlFormatter(style=style).get_style_defs(".highlight").splitlines()
    return [line for line in lines if "linenos" not in line and not line.startswith("pre ")]


def test_the_stylesheet_is_pygments_default_light_and_github_dark_under_the_media_query():
    css = (Path(settings.BASE_DIR) / "static" / "css" / "pygments.css").read_text()
    light, dark = css.split("@media (prefers-color-scheme: dark) {")
    assert [line for line in light.splitlines() if line.startswith(".highlight")] == _styles("default")
    assert [line.strip() for line in dark.splitlines() if line.strip().startswith(".highlight")] == _styles(
        "github-dark"
    )
