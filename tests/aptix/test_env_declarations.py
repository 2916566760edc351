"""Every environment variable the code reads is declared in aptix/env/, every declared one is read
and documented, and a value that cannot be used stops the start naming the variable.

The scan reads the source (ast) of aptix, modes, files, tools, agents and manage.py for environment reads:
`os.environ.get("X")`, `os.environ["X"]`, `os.getenv("X")`, `"X" in os.environ`, any "APTIX_…" string
(a variable read through a helper) and a declaration used (`env.X`, `from aptix.env import X`)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from aptix import env
from aptix import settings as aptix_settings
from aptix.envtypes import Section, SettingError

REPO_DIR = Path(__file__).resolve().parents[2]
SCANNED = ["aptix", "modes", "files", "tools", "agents", "manage.py"]
# Read by the code but not settings of Aptix: why each is left out of the declarations.
NOT_SETTINGS = {
    "PATH": "the MCP host looks a server's command up on it (tools/mcp/config.py)",
    "DJANGO_SETTINGS_MODULE": "Django's own; manage.py and aptix/asgi.py set it",
}
# Names aptix/env/ has besides the declarations: the registry and the sections.
NOT_DECLARATIONS = {"DECLARED", "SECTIONS"} | {name for name, value in vars(env).items() if isinstance(value, Section)}
APTIX_NAME = re.compile(r"APTIX_[A-Z0-9_]+")
ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _is_environ(node: ast.expr) -> bool:
    """`os.environ` or a bare `environ`."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def environment_reads(source: str) -> tuple[set[str], set[str]]:
    """(variables the source reads directly or names as "APTIX_…", declarations of aptix/env/ it uses)."""
    direct: set[str] = set()
    declared: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            func = node.func
            environ_call = func.attr in {"get", "pop", "setdefault"} and _is_environ(func.value)
            getenv = func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os"
            if (environ_call or getenv) and (name := _literal(node.args[0])):
                direct.add(name)
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and (name := _literal(node.slice)):
            direct.add(name)
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            if name := _literal(node.left):
                direct.add(name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and APTIX_NAME.fullmatch(node.value):
            direct.add(node.value)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "env":
            if ENV_NAME.fullmatch(node.attr):
                declared.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module == "aptix.env":
            declared |= {alias.name for alias in node.names if ENV_NAME.fullmatch(alias.name)}
    return direct, declared - NOT_DECLARATIONS


def scanned_files() -> list[Path]:
    files = []
    for entry in SCANNED:
        path = REPO_DIR / entry
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [path for path in files if "migrations" not in path.parts]


def scan() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Each variable read, and each declaration used, with the files that do it (aptix/env/ left out)."""
    reads: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}
    for path in scanned_files():
        if REPO_DIR / "aptix" / "env" in path.parents:
            continue
        direct, declared = environment_reads(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(REPO_DIR))
        for name in direct | declared:
            reads.setdefault(name, set()).add(where)
        for name in declared:
            uses.setdefault(name, set()).add(where)
    return reads, uses


def test_the_scan_finds_every_way_of_reading_a_variable():
    source = """
import os
from os import environ
from aptix import env
from aptix.env import APTIX_IMPORTED, DECLARED
a = os.environ.get("ONE")
b = os.environ["TWO"]
c = os.getenv("THREE", "x")
d = "FOUR" in os.environ
e = environ.get("FIVE")
f = helper("APTIX_BY_NAME")
g = env.APTIX_DECLARED.read()
h = os.environ.setdefault("SIX", "1")
i = "an APTIX_NAME inside a sentence is no read"
"""
    direct, declared = environment_reads(source)
    assert direct == {"ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "APTIX_BY_NAME"}
    assert declared == {"APTIX_IMPORTED", "APTIX_DECLARED"}


def test_every_variable_the_code_reads_is_declared():
    reads, _ = scan()
    undeclared = {name: sorted(files) for name, files in reads.items() if name not in env.DECLARED}
    assert not {name: files for name, files in undeclared.items() if name not in NOT_SETTINGS}, (
        "read but not declared in aptix/env/"
    )
    assert set(undeclared) == set(NOT_SETTINGS)  # an exception nobody reads any more goes


def test_every_declared_variable_is_read_through_its_declaration():
    _, uses = scan()
    assert sorted(set(env.DECLARED) - set(uses)) == []


def test_every_declared_variable_is_documented_and_in_env_example():
    documented = (REPO_DIR / "docs" / "configuration.md").read_text(encoding="utf-8")
    assigned = {line.removeprefix("# ").split("=")[0] for line in (REPO_DIR / ".env.example").read_text().splitlines()}
    for name in env.DECLARED:
        assert f"| `{name}`" in documented, name
        assert name in assigned, name


def test_a_scan_of_code_that_reads_an_undeclared_variable_fails(tmp_path, monkeypatch):
    """The check above can fail: a module reading a variable nobody declared is reported."""
    (tmp_path / "aptix").mkdir()
    (tmp_path / "aptix" / "extra.py").write_text('import os\nLIMIT = os.environ.get("APTIX_NOT_DECLARED")\n')
    monkeypatch.setattr(sys.modules[__name__], "REPO_DIR", tmp_path)
    with pytest.raises(AssertionError, match="read but not declared"):
        test_every_variable_the_code_reads_is_declared()


def test_names_are_unique_and_match_their_attribute():
    for attribute, value in vars(env).items():
        if isinstance(value, env.Setting):
            assert attribute == value.name
    assert all(setting.section in env.SECTIONS for setting in env.DECLARED.values())
    assert all(setting.help and not setting.help.endswith(".") for setting in env.DECLARED.values())


@pytest.mark.parametrize("name", list(env.DECLARED))
def test_a_default_written_out_reads_back_as_the_default(name):
    """.env.example writes each default out: copied to .env, it must mean what an unset variable means."""
    setting = env.DECLARED[name]
    assert setting.read({}) == setting.default
    if text := setting.text(setting.default):
        assert setting.read({name: text}) == setting.default
    assert not (setting.secret and setting.default is not None), "a secret has no default"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("APTIX_MAX_STEPS", "0", "APTIX_MAX_STEPS must be at least 1, not 0."),
        ("APTIX_MAX_STEPS", "lots", "APTIX_MAX_STEPS must be an integer, not 'lots'."),
        ("APTIX_LLM_TIMEOUT", "nan", "APTIX_LLM_TIMEOUT must be at least 0.0, not nan."),
        ("APTIX_WS_RECHECK", "soon", "APTIX_WS_RECHECK must be a number, not 'soon'."),
        ("DEBUG", "maybe", "DEBUG must be true or false, not 'maybe'."),
        ("APTIX_MODE_CHANGE_CONSENT", "Never", "APTIX_MODE_CHANGE_CONSENT must be 'ask' or 'trust', not 'never'."),
        ("APTIX_CATALOG_REVIEW", "both", "APTIX_CATALOG_REVIEW must be 'off' or 'two-person', not 'both'."),
        ("APTIX_RATE_API", "fast", "APTIX_RATE_API must be a rate such as 30/m, 100/5m or 1000/h, or off; not 'fast'."),
        ("APTIX_LOGIN_LOCKOUT_BY", "email", "APTIX_LOGIN_LOCKOUT_BY: 'email' is not username, ip or username+ip."),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingError) as refused:
        env.DECLARED[name].read()
    assert str(refused.value) == message
    with pytest.raises(ImproperlyConfigured, match=re.escape(message)):
        aptix_settings.read(env.DECLARED[name])


def test_a_bad_value_stops_the_start():
    environ = {**os.environ, "DEBUG": "false", "SECRET_KEY": "x", "APTIX_MAX_TOOLS": "0", "PYTHONPATH": str(REPO_DIR)}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO_DIR,
        env={**environ, "DJANGO_SETTINGS_MODULE": "aptix.settings"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        "django.core.exceptions.ImproperlyConfigured: APTIX_MAX_TOOLS must be at least 1, not 0."
    )


def test_the_sql_server_reads_its_limits_without_django():
    """The SQL MCP server's process imports the declarations, not Django."""
    code = "import sys, tools.sql_mcp.server; print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_DIR, capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
