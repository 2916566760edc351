"""docs/configuration.md and .env.example are generated from aptix/env/: the committed files are
what the declarations give, and `manage.py aptix_config_docs --check` fails when they are not."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from aptix import env
from aptix.env_docs import REPO_DIR, configuration_md, env_example, generated_files
from aptix.management.commands import aptix_config_docs


@pytest.mark.parametrize("path", list(generated_files()), ids=lambda path: path.name)
def test_the_committed_file_is_what_the_declarations_give(path):
    expected = generated_files()[path]
    assert path.read_text(encoding="utf-8") == expected, (
        f"{path.relative_to(REPO_DIR)} is out of date: run `python manage.py aptix_config_docs` and commit it"
    )


def test_check_passes_on_the_committed_files(capsys):
    call_command("aptix_config_docs", "--check")
    assert capsys.readouterr().out == "docs/configuration.md is up to date.\n.env.example is up to date.\n"


def test_check_fails_on_a_stale_file_and_the_command_rewrites_it(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "docs" / "configuration.md"
    stale.parent.mkdir()
    stale.write_text("# Configuration\n\nAPTIX_MAX_STEPS: 12\n")
    files = {stale: configuration_md(), tmp_path / ".env.example": env_example()}
    monkeypatch.setattr(aptix_config_docs, "generated_files", lambda: files)
    monkeypatch.setattr(aptix_config_docs, "REPO_DIR", tmp_path)
    with pytest.raises(CommandError, match=r"Out of date: docs/configuration.md, .env.example\. Run `python manage"):
        call_command("aptix_config_docs", "--check")
    assert stale.read_text() == "# Configuration\n\nAPTIX_MAX_STEPS: 12\n"  # --check changes nothing
    call_command("aptix_config_docs")
    assert capsys.readouterr().out.endswith("Wrote docs/configuration.md.\nWrote .env.example.\n")
    assert {path: path.read_text() for path in files} == files


def test_each_variable_is_one_row_with_its_default_and_one_line_of_env_example():
    md, example = configuration_md(), env_example().splitlines()
    assert "| `APTIX_MAX_STEPS` | `10` | Model calls per Agent turn. |" in md
    assert "| `SECRET_KEY` (secret) | generated into `var/secret_key` by `make run` |" in md
    assert "| `APTIX_SQL_MEMORY_MB` | `1024` |" in md
    for name, setting in env.DECLARED.items():
        assert md.count(f"| `{name}`") == 1
        (line,) = [line for line in example if line.removeprefix("# ").startswith(f"{name}=")]
        if setting.secret:
            assert line == f"{name}="
    assert "APTIX_MAX_STEPS=10" in example and "APTIX_RATE_TURNS=30/m" in example
    assert "# APTIX_SQL_MAX_ROWS=200" in example  # the SQL server's: set in mcp.json, not here
