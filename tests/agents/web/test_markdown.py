"""Code in answers: highlighted on the server with
Pygments, sanitised (only Pygments' span classes are new), framed with a language label and a copy
button; the static stylesheet is what pygmentize generates."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from django.conf import settings
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name

from agents.web.markdown import PYGMENTS_CLASSES, render_markdown, render_user_message

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


SAMPLE = (
    "```python\n@cached(ttl=3)\nclass Box(Base):\n    '''Doc.'''\n    def get(self, key: str = \"k\") -> int:\n"
    "        return {'a': 1, **self.d}[key] + 0x1F  # why\n```\n\n```js\nconst f = async (x) => `v${x}`;\n```\n"
)


def _rules(css: str) -> dict[str, str]:
    return dict(re.findall(r"\.highlight \.([\w-]+) \{ ([^}]*) \}", css))


def _looks(html: str) -> list[tuple[str, str, str]]:
    """Each visible character of the code with its look in light and in dark, as pygments.css gives it
    (a class without a rule shows the block's own text: `.highlight`'s colour in dark, none in light)."""
    css = (Path(settings.BASE_DIR) / "static" / "css" / "pygments.css").read_text()
    light_css, dark_css = css.split("@media (prefers-color-scheme: dark) {")
    light, dark = _rules(light_css), _rules(dark_css)
    base = re.search(r"\.highlight \{ background: [^;]*; (color: [^ ]*) \}", dark_css).group(1)
    looks = []
    for cls, text in re.findall(r'(?:<span class="([^"]*)">)?([^<]*)(?:</span>)?', html):
        looks += [(char, light.get(cls, ""), dark.get(cls, base)) for char in unescape(text) if not char.isspace()]
    return looks


def test_code_has_spans_only_where_the_stylesheet_shows_them():
    """Pygments wraps every token, also those pygments.css gives no look of their own (`n`,
    `p`, `w`): a third of a code-heavy answer's bytes. Those go; every character looks as before, in
    light and in dark."""
    html = str(render_markdown(SAMPLE))
    classes = set(re.findall(r'<span class="([^"]*)">', html)) - {"code-lang"}
    assert {"k", "nf", "nd", "s2", "c1", "mh", "o"} <= classes  # still highlighted
    assert not classes & {"n", "p", "w", "nx", "pm", "esc", "x", "g"}, classes
    assert "}[key] <span" in html and "(x) =&gt; <span" in html  # plain tokens run on as plain text
    codes = re.findall(r'<code class="language-\w+">(.*?)</code>', html, re.S)
    before = [
        pygments_highlight(code, get_lexer_by_name(lang), HtmlFormatter(nowrap=True))
        for lang, code in re.findall(r"```(\w+)\n(.*?)```", SAMPLE, re.S)
    ]
    assert len(codes) == len(before) == 2
    for now, then in zip(codes, before, strict=True):
        assert _looks(now) == _looks(then)
        assert len(now) < len(then) * 0.75


def test_no_line_breaks_between_blocks_but_spaces_between_words_stay():
    html = str(render_markdown("a *b*\n**c**\n\n- x\n- y\n\n| h |\n|---|\n| 1 |\n\n```\n<p>\n\n</p>\n```"))
    assert html.startswith("<p>a <em>b</em>\n<strong>c</strong></p><ul><li>x</li><li>y</li></ul><table><thead>")
    assert "<pre><code>&lt;p&gt;\n\n&lt;/p&gt;\n</code></pre>" in html  # code keeps every line


def test_the_shared_markdown_parser_is_compiled_before_any_thread_uses_it():
    """Answers render on the event loop and on the render thread at once; markdown-it compiles a rule
    chain on first use, and a chain read mid-compilation by another thread is empty or partial."""
    from agents.web.markdown import _parser

    _parser.cache_clear()
    parser = _parser()
    rulers = (parser.core.ruler, parser.block.ruler, parser.inline.ruler, parser.inline.ruler2)
    assert all(ruler.__cache__ is not None for ruler in rulers)


def test_a_user_message_keeps_its_whitespace_and_fenced_code_and_is_escaped():
    html = render_user_message("Look:\n\n```py\nif x:\n    <b>y</b>\n```\nbye\n  now")
    assert html == (
        '<span class="plain">Look:</span>'
        '<pre><code class="language-py">if x:\n    &lt;b&gt;y&lt;/b&gt;</code></pre>'
        '<span class="plain">bye\n  now</span>'
    )
    assert render_user_message("<script>x</script>") == '<span class="plain">&lt;script&gt;x&lt;/script&gt;</span>'
