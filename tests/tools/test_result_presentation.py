"""How a tool's result is shown is the tool's own declaration (tools/base.py ShowsImage,
SummarisesResult), asked through the registry (tools/registry.py); the internal tools are
AgentTools by inheritance; the media path rules live in tools/media.py."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tools.base import AgentTool, ShowsImage, SummarisesResult
from tools.builtin.image_gen import ImageGenTool
from tools.builtin.list_modes import AgentListModesTool
from tools.builtin.mode_change import ModeChangeTool
from tools.media import FILE_PATH, IMAGE_PATH, image_name, is_site_file, is_site_image
from tools.registry import INTERNAL_TOOLS, internal_registry, result_image, result_markdown

SESSION = "0123456789abcdef0123456789abcdef"
IMAGE_URL = f"/media/images/{SESSION}/{'a' * 32}.png"


def test_the_internal_tools_are_agent_tools_by_inheritance():
    for name, tool in internal_registry():
        assert AgentTool in tool.__mro__, name  # inherited, not only the same shape
    assert isinstance(ImageGenTool, ShowsImage) and isinstance(ImageGenTool, SummarisesResult)
    assert not isinstance(ModeChangeTool, ShowsImage)


def test_an_image_result_shows_its_image_when_this_site_serves_it():
    result = json.dumps({"url": IMAGE_URL, "alt": "Revenue by month", "kind": "bar"})
    assert result_image("image_gen", result) == {"url": IMAGE_URL, "alt": "Revenue by month"}
    assert result_image("image_gen", json.dumps({"url": "https://elsewhere.example/x.png"})) is None
    assert result_image("image_gen", "not json") is None
    # A tool that does not declare an image shows none, whatever its result looks like.
    assert result_image("agent_list_modes", result) is None
    assert result_image("no_such_tool", result) is None


def test_an_ask_answer_shows_each_tool_result_as_the_tool_says():
    image = json.dumps({"url": IMAGE_URL, "alt": "Chart"})
    assert result_markdown("image_gen", image) == f"![Chart]({IMAGE_URL})"
    change = json.dumps({"previousMode": "general", "newMode": "data-analysis", "branch": True})
    assert result_markdown(ModeChangeTool.TOOL_NAME, change) == (
        "Mode changed: general → data-analysis. Continue in a new session in that mode."
    )
    modes = json.dumps({"modes": [{"key": "general", "displayName": "General", "description": "Anything"}]})
    assert result_markdown(AgentListModesTool.TOOL_NAME, modes) == "- **General** (`general`) — Anything"
    assert result_markdown("sql__query", modes) is None  # not its declaration: shown raw


def test_media_paths_are_named_under_their_session_and_served_only_as_such():
    name = image_name(SESSION, "png")
    assert IMAGE_PATH.fullmatch(name) and name.startswith(f"images/{SESSION}/")
    assert image_name("../etc", "png").startswith("images/") and not IMAGE_PATH.fullmatch(image_name("../etc", "png"))
    assert FILE_PATH.fullmatch(f"files/{SESSION}/{'b' * 32}/report.csv")
    assert is_site_image(IMAGE_URL) and not is_site_image("/media/files/x") and not is_site_image("https://x/y.png")
    assert is_site_file(f"/media/files/{SESSION}/{'b' * 32}/report.csv")


@pytest.mark.parametrize("folder", ["agents/web", "agents/run"])
def test_the_page_and_the_run_name_no_internal_tool(folder):
    """They ask the tool registry how a result shows; a tool's name in them is knowledge that
    belongs to the tool."""
    root = Path(__file__).resolve().parents[2]
    named = [
        f"{path.relative_to(root)}:{node.lineno}"
        for path in sorted((root / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in INTERNAL_TOOLS
    ]
    assert named == []
