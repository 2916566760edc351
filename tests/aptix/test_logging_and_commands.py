"""The admin logger's structured records, the first-run management commands, and manage.py run on its
own (outside `make`) finding the secret key `make run` keeps."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from aptix.logging import AdminLogger, StructuredFormatter
from modes.models import AgentMode


def test_admin_logger_writes_structured_records(caplog):
    caplog.set_level(logging.INFO, logger="aptix.admin")
    logger = AdminLogger()
    logger.add_error("Tool failed", session_id="abc", tool="agent_change_mode")
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        logger.add_exception(exc, "ModeChangeTool.SetSessionMode", session_id="abc")
    error, exception = caplog.records
    assert error.levelno == logging.ERROR and error.getMessage() == "Tool failed"
    assert error.session_id == "abc" and error.fields == {"session_id": "abc", "tool": "agent_change_mode"}
    assert exception.tag == "ModeChangeTool.SetSessionMode" and exception.exc_info[0] is RuntimeError
    line = json.loads(StructuredFormatter().format(exception))
    assert line["tag"] == "ModeChangeTool.SetSessionMode" and line["session_id"] == "abc"
    assert "RuntimeError: boom" in line["exception"]


def test_admin_logger_tolerates_fields_named_like_record_attributes(caplog):
    AdminLogger().add_error("clash", msg="m", args="a", name="n")
    record = caplog.records[-1]
    assert record.getMessage() == "clash" and record.name == "aptix.admin"
    assert record.fields == {"msg": "m", "args": "a", "name": "n"}


@pytest.mark.django_db
def test_ensure_admin_creates_once_and_keeps_the_password(settings, tmp_path, capsys, django_user_model):
    settings.VAR_DIR = tmp_path
    call_command("ensure_admin")
    out = capsys.readouterr().out
    password = (tmp_path / "admin-password.txt").read_text().split("password: ")[1].strip()
    assert password in out
    admin = django_user_model.objects.get(username="admin")
    assert admin.is_superuser and admin.check_password(password)
    assert admin.teams.get().name == "Default team"
    call_command("ensure_admin")
    assert password not in capsys.readouterr().out
    assert django_user_model.objects.count() == 1


@pytest.mark.django_db
def test_ensure_catalog_restores_missing_modes_without_touching_edits(capsys):
    AgentMode.objects.filter(key="workflow-authoring").delete()
    AgentMode.objects.filter(key="ddr-authoring").update(display_name="Decision records")
    call_command("ensure_catalog")
    assert "created workflow-authoring" in capsys.readouterr().out
    assert AgentMode.objects.get(key="ddr-authoring").display_name == "Decision records"
    assert list(AgentMode.objects.filter(is_default=True).values_list("key", flat=True)) == ["general"]
    call_command("ensure_catalog")
    assert "nothing to create" in capsys.readouterr().out


@pytest.mark.slow  # two Django start-ups in subprocesses
def test_manage_py_uses_the_secret_key_make_run_keeps(tmp_path):
    """A command of the README run on its own (no SECRET_KEY, DEBUG off) uses var/secret_key."""
    root = Path(settings.BASE_DIR)
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "manage.py").write_text((root / "manage.py").read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DATABASE_URL")}
    env.update({"DEBUG": "false", "PYTHONPATH": str(root), "APTIX_VAR_DIR": str(tmp_path / "var")})
    command = [
        sys.executable,
        "manage.py",
        "shell",
        "-c",
        "from django.conf import settings; print(settings.SECRET_KEY)",
        "--no-imports",
    ]
    first = subprocess.run(command, check=False, cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    key = (clone / "var" / "secret_key").read_text().strip()
    assert first.stdout.strip() == key and len(key) > 40
    again = subprocess.run(command, check=True, cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert again.stdout.strip() == key  # the same key every time


@pytest.mark.slow  # three processes each starting Django, two migrating a database from nothing
def test_aptix_prepare_readies_a_fresh_install_in_one_process(tmp_path):
    """What `make run` does before it serves, in one `manage.py aptix_prepare` (not five commands that
    each start Django): on an empty var/ it migrates, seeds the catalog, creates the admin (printing
    its password once), builds the demo database and collects the static files; again, it is a no-op."""
    root = Path(settings.BASE_DIR)
    var = tmp_path / "var"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "APTIX_DEMO_DB")}
    demo = tmp_path / "demo.sqlite3"
    env.update({"DEBUG": "false", "SECRET_KEY": "prepare-test", "APTIX_VAR_DIR": str(var), "APTIX_DEMO_DB": str(demo)})
    command = [sys.executable, "manage.py", "aptix_prepare"]
    first = subprocess.run(command, check=False, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    password = (var / "admin-password.txt").read_text().split("password:")[1].strip()
    assert password and f"password: {password}" in first.stdout
    assert any((var / "static").rglob("*.css"))
    assert demo.stat().st_size > 0
    catalog = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", COUNT_MODES],
        check=True,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert int(catalog.stdout.strip()) >= 3  # the built-in modes
    again = subprocess.run(command, check=True, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert password not in again.stdout and "Admin login exists" in again.stdout


COUNT_MODES = "from modes.models import AgentMode; print(AgentMode.objects.count())"
