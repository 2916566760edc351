"""The admin logger's structured records and the first-run management commands."""

from __future__ import annotations

import json
import logging

import pytest
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
