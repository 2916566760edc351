"""`tools.mcp` is the MCP client's one public face (the rest of Aptix imports from it alone, as
`lint-imports` checks): each name it exports resolves to its module's, and importing the package
(or `python -m tools.mcp.sql_server`) loads none of the client."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tools.mcp
from tools.mcp import host


def test_every_exported_name_resolves_to_the_one_its_module_defines():
    assert sorted(tools.mcp.__all__) == sorted(tools.mcp._EXPORTS)
    for name in tools.mcp.__all__:
        assert getattr(tools.mcp, name) is not None
    assert tools.mcp.mcp_host is host.mcp_host
    with pytest.raises(AttributeError, match="no attribute 'CALLING_USER'"):
        _ = tools.mcp.CALLING_USER


def test_importing_the_package_loads_none_of_the_client():
    code = (
        "import sys, tools.mcp, tools.mcp.sql_server;"
        "print(sorted(m for m in sys.modules if m.startswith('tools.mcp.')))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['tools.mcp.sql_server']"
