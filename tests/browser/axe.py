"""axe-core (Deque) inside the browser tests: the vendored build (tests/browser/vendor/axe-core/, see its
README) is evaluated in the page through the DevTools protocol, which the page's Content-Security-Policy
does not govern, and run with its default rules: WCAG 2.x A and AA plus Deque's best practices.

`violations(page)` returns them as short readable lines ("rule (impact): help — target: why"), so a
failing assertion names what to fix.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

AXE_JS = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
# axe adds <style> elements of its own while it checks (visibility, stylesheets), which the app's
# Content-Security-Policy (style-src 'self') refuses: pages audited by axe are opened without it
# (`open_page(**AXE_PAGE)`). Every other browser test keeps the CSP and fails on a violation.
AXE_PAGE = {"bypass_csp": True}

# Run over the whole document, popovers in the top layer included. Only violations come back.
RUN = """async () => {
  const result = await window.axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(" "), why: n.failureSummary.replace(/\\s+/g, " ")}))
  }));
}"""


@cache
def _source() -> str:
    return AXE_JS.read_text()


async def violations(page) -> list[str]:
    """axe-core's violations on the page as it is now, one line per offending element."""
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.evaluate(_source())
    found = await page.evaluate(RUN)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {node['target']}: {node['why']}"
        for v in found
        for node in v["nodes"]
    ]


async def axe_version(page) -> str:
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.evaluate(_source())
    return await page.evaluate("() => window.axe.version")
