"""agent_change_mode against TUL-007 (§3 contract, §6 required tests) with a recording manager."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from modes.catalog import ModeValidationError
from tools.base import InvokeResult, ToolContext
from tools.builtin import mode_change
from tools.builtin.mode_change import ModeChangeTool
from tools.registry import ToolRegistry

ORG = SimpleNamespace(id=7, name="Team A")
USER = SimpleNamespace(id=3, username="alice")


class RecordingSessionManager:
    def __init__(self, outcome=None, error: Exception | None = None):
        self.calls: list[tuple[tuple, dict]] = []
        self.outcome = outcome
        self.error = error

    async def set_session_mode(self, session_id, mode, reason, org, user, **kwargs):
        self.calls.append(((session_id, mode, reason, org, user), kwargs))
        if self.error is not None:
            raise self.error
        return self.outcome if self.outcome is not None else ("general", mode)


@pytest.fixture
def manager():
    return RecordingSessionManager()


@pytest.fixture
def tool(manager, recording_logger):
    return ModeChangeTool(manager, recording_logger)


@pytest.fixture
def context():
    return ToolContext(session_id="a" * 32, org=ORG, user=USER, turn_id="t" * 32, tool_call_id="call_1")


def args(**values) -> str:
    return json.dumps(values)


VALID = {"mode": "ddr-authoring", "branch": False, "reason": "The user wants to write a DDR."}


# --- §6.1 happy path -------------------------------------------------------------------------


@pytest.mark.parametrize("branch", [False, True])
async def test_happy_path_calls_manager_once_and_echoes_arguments(tool, manager, context, branch):
    result = await tool.execute(args(**{**VALID, "branch": branch}), context)

    assert isinstance(result, InvokeResult)
    assert result.successful is True
    assert result.error_message is None
    assert len(manager.calls) == 1
    positional, keywords = manager.calls[0]
    assert positional == (context.session_id, "ddr-authoring", VALID["reason"], ORG, USER)
    assert keywords["branch"] is branch
    assert keywords["turn"] == context.turn_id
    assert keywords["tool_call_id"] == "call_1"
    payload = json.loads(result.result)
    assert payload == {
        "success": True,
        "mode": "ddr-authoring",
        "branch": branch,
        "reason": VALID["reason"],
        "previousMode": "general",
        "newMode": "ddr-authoring",
    }


async def test_result_reports_the_mode_the_manager_wrote(recording_logger, context):
    manager = RecordingSessionManager(outcome=("general", "data-analysis"))
    tool = ModeChangeTool(manager, recording_logger)
    result = await tool.execute(args(mode="  Data-Analysis ", branch=False, reason="charts"), context)
    payload = json.loads(result.result)
    assert payload["mode"] == payload["newMode"] == "data-analysis"
    assert payload["previousMode"] == "general"


async def test_manager_without_outcome_still_reports_requested_mode(recording_logger, context):
    class SilentManager(RecordingSessionManager):
        async def set_session_mode(self, *a, **kw):
            await super().set_session_mode(*a, **kw)

    tool = ModeChangeTool(SilentManager(), recording_logger)
    payload = json.loads((await tool.execute(args(**VALID), context)).result)
    assert payload["success"] is True and payload["mode"] == "ddr-authoring"


# --- §3.4 validation, each message verbatim and no manager call -------------------------------

CASES = [
    (None, "ModeChangeTool requires a non-empty arguments object."),
    ("", "ModeChangeTool requires a non-empty arguments object."),
    ("   \n", "ModeChangeTool requires a non-empty arguments object."),
    (args(branch=False, reason="r"), "ModeChangeTool requires a non-empty 'mode' string."),
    (args(mode="", branch=False, reason="r"), "ModeChangeTool requires a non-empty 'mode' string."),
    (args(mode="   ", branch=False, reason="r"), "ModeChangeTool requires a non-empty 'mode' string."),
    (args(mode=None, branch=False, reason="r"), "ModeChangeTool requires a non-empty 'mode' string."),
    (args(mode=5, branch=False, reason="r"), "ModeChangeTool requires a non-empty 'mode' string."),
    (args(mode="general", reason="r"), "ModeChangeTool requires a 'branch' boolean flag."),
    (args(mode="general", branch=None, reason="r"), "ModeChangeTool requires a 'branch' boolean flag."),
    (args(mode="general", branch="true", reason="r"), "ModeChangeTool requires a 'branch' boolean flag."),
    (
        args(mode="general", branch=True),
        "ModeChangeTool requires a non-empty 'reason' string explaining why the mode change is needed.",
    ),
    (
        args(mode="general", branch=True, reason=""),
        "ModeChangeTool requires a non-empty 'reason' string explaining why the mode change is needed.",
    ),
    (
        args(mode="general", branch=True, reason="  "),
        "ModeChangeTool requires a non-empty 'reason' string explaining why the mode change is needed.",
    ),
    (
        args(mode="general", branch=True, reason=None),
        "ModeChangeTool requires a non-empty 'reason' string explaining why the mode change is needed.",
    ),
    ("{not json", "ModeChangeTool requires the arguments to be a valid JSON object."),
    ("[1, 2]", "ModeChangeTool requires the arguments to be a valid JSON object."),
    ("null", "ModeChangeTool requires the arguments to be a valid JSON object."),
]


@pytest.mark.parametrize("arguments_json, message", CASES)
async def test_invalid_arguments_fail_with_exact_message_and_no_write(tool, manager, context, arguments_json, message):
    result = await tool.execute(arguments_json, context)
    assert result.successful is False
    assert result.result is None
    assert result.error_message == message
    assert manager.calls == []


async def test_missing_mode_message_mentions_mode(tool, manager, context):
    result = await tool.execute(args(branch=False, reason="r"), context)
    assert "'mode'" in result.error_message and manager.calls == []


async def test_missing_reason_message_mentions_reason(tool, manager, context):
    result = await tool.execute(args(mode="general", branch=False), context)
    assert "'reason'" in result.error_message and manager.calls == []


async def test_null_context_is_rejected_without_write(tool, manager):
    result = await tool.execute(args(**VALID), None)
    assert result.successful is False
    assert result.error_message == "ModeChangeTool requires a valid execution context."
    assert manager.calls == []


@pytest.mark.parametrize("session_id", [None, ""])
async def test_missing_session_id_is_logged_and_rejected(tool, manager, recording_logger, session_id):
    context = ToolContext(session_id=session_id, org=ORG, user=USER)
    result = await tool.execute(args(**VALID), context)
    assert result.successful is False
    assert result.error_message == "ModeChangeTool cannot change mode because the session id is missing."
    assert manager.calls == []
    assert len(recording_logger.errors) == 1
    assert "session id" in recording_logger.errors[0][0]


@pytest.mark.parametrize("identity", ["sessionId", "org", "user"])
async def test_identity_in_arguments_is_rejected_without_write(tool, manager, context, identity):
    result = await tool.execute(args(**VALID, **{identity: "someone-else"}), context)
    assert result.successful is False
    assert f"'{identity}'" in result.error_message
    assert manager.calls == []


# --- §3.6 exception path -----------------------------------------------------------------------


async def test_manager_exception_is_logged_with_stable_tag_and_fails_verbatim(recording_logger, context):
    manager = RecordingSessionManager(error=RuntimeError("database exploded: password=hunter2"))
    tool = ModeChangeTool(manager, recording_logger)
    result = await tool.execute(args(**VALID), context)
    assert result.successful is False
    assert result.error_message == "ModeChangeTool failed to change the session mode."
    assert "hunter2" not in result.error_message
    assert len(manager.calls) == 1
    assert len(recording_logger.exceptions) == 1
    exc, tag, fields = recording_logger.exceptions[0]
    assert isinstance(exc, RuntimeError)
    assert tag == mode_change.LOG_TAG == "ModeChangeTool.SetSessionMode"
    assert fields["session_id"] == context.session_id


async def test_unknown_mode_from_manager_tells_the_model_the_valid_keys(recording_logger, context):
    error = ModeValidationError("Unknown or inactive mode 'nope'. Valid modes: general, data-analysis.")
    tool = ModeChangeTool(RecordingSessionManager(error=error), recording_logger)
    result = await tool.execute(args(mode="nope", branch=False, reason="r"), context)
    assert result.successful is False
    assert result.error_message == (
        "ModeChangeTool failed to change the session mode. "
        "Unknown or inactive mode 'nope'. Valid modes: general, data-analysis."
    )
    assert recording_logger.exceptions[0][1] == "ModeChangeTool.SetSessionMode"


# --- §3.1, §3.2, §4.4 identity, dependencies, guidance -------------------------------------------


def test_dependencies_are_required(recording_logger, manager):
    with pytest.raises(ValueError, match="session manager"):
        ModeChangeTool(None, recording_logger)
    with pytest.raises(ValueError, match="logger"):
        ModeChangeTool(manager, None)


def test_identity_schema_and_guidance(recording_logger):
    assert ModeChangeTool.TOOL_NAME == "agent_change_mode"
    assert ModeChangeTool(RecordingSessionManager(), recording_logger).is_tool_fully_executed_on_server is True
    schema = ModeChangeTool.get_schema()
    function = schema["function"]
    assert schema["type"] == "function" and function["name"] == "agent_change_mode"
    parameters = function["parameters"]
    assert parameters["required"] == ["mode", "branch", "reason"]
    assert parameters["properties"]["mode"]["type"] == "string"
    assert parameters["properties"]["branch"]["type"] == "boolean"
    assert parameters["properties"]["reason"]["type"] == "string"
    assert not {"sessionId", "org", "user"} & set(parameters["properties"])
    assert "confirms" in function["description"] and "branch=true" in function["description"]
    usage = ModeChangeTool.TOOL_USAGE_METADATA
    for phrase in [
        "explicitly agreed",
        "(1) stay in the current mode",
        "(2) switch this session",
        "(3) switch and start a new session",
        "branch=false",
        "branch=true",
    ]:
        assert phrase in usage
    ToolRegistry(logger=recording_logger).register(ModeChangeTool)
