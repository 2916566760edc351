"""Ask's second model call (spec 004: only when configured) per model and per mode: the mode's setting
wins over the model's `askFollowup` in models.json, which wins over APTIX_ASK_FOLLOWUP. Without it, an
Ask turn whose only output is a tool result (a small model asked for code calling agent_list_modes)
shows that result under a label saying the model wrote no answer, never as the answer."""

from __future__ import annotations

import json

import pytest

from agents.llm.catalog import ModelsConfigError, check_models_config, parse_models_config
from agents.llm.client import reset_llm_clients
from agents.run.answers import NO_ANSWER
from modes.models import AgentMode
from tests.helpers import inline_db

PALINDROME = "write a short Python function that checks for a palindrome"


def models_file(tmp_path, **model) -> str:
    raw = {
        "providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1"}},
        "models": {"qwen-small": {"provider": "local", "model": "local", **model}},
    }
    path = tmp_path / "models.json"
    path.write_text(json.dumps(raw))
    return str(path)


@pytest.fixture
def configured(tmp_path, settings):
    """Use a models file whose one model has the given `askFollowup` (None: the key left out)."""

    def configure(ask_followup: bool | None) -> None:
        extra = {} if ask_followup is None else {"askFollowup": ask_followup}
        settings.APTIX_MODELS_CONFIG = models_file(tmp_path, **extra)
        reset_llm_clients()

    yield configure
    reset_llm_clients()


def test_askfollowup_is_read_per_model_and_a_bad_value_is_named():
    environ: dict[str, str] = {}
    raw = {"providers": {"p": {}}, "models": {"a": {"provider": "p", "askFollowup": True}, "b": {"provider": "p"}}}
    parsed = parse_models_config(raw, environ=environ)
    assert (parsed.models["a"].ask_followup, parsed.models["b"].ask_followup) == (True, None)
    raw["models"]["a"]["askFollowup"] = "yes"
    with pytest.raises(ModelsConfigError, match=r'custom.json: model "a": "askFollowup" must be true or false'):
        parse_models_config(raw, environ=environ, where="custom.json")


def test_a_bad_models_file_stops_start_up_naming_file_key_and_problem(tmp_path, settings):
    """A system check (run before aptix_serve, aptix_worker and migrate start): the mistake used to
    surface only when the first turn failed."""
    settings.APTIX_MODELS_CONFIG = models_file(tmp_path, askFollowup="yes")
    try:
        [error] = check_models_config()
    finally:
        reset_llm_clients()
    assert error.level >= 40  # an Error: manage.py refuses to go on
    assert str(tmp_path / "models.json") in error.msg
    assert '"qwen-small"' in error.msg and '"askFollowup" must be true or false' in error.msg
    settings.APTIX_MODELS_CONFIG = models_file(tmp_path, askFollowup=True)
    assert check_models_config() == []
    reset_llm_clients()


@inline_db
async def test_the_models_askfollowup_gives_ask_its_second_call(configured, make_session, run_turn, model):
    configured(True)
    session = await make_session(execution="ask")
    model.reply("", tool_calls=[("agent_list_modes", {})])
    model.reply("def is_palindrome(s): return s == s[::-1]")
    turn = await run_turn(session, PALINDROME)
    assert model.calls == 2 and "tools" not in model.last_request
    assert turn.answer == "def is_palindrome(s): return s == s[::-1]"


@inline_db
async def test_the_modes_setting_wins_over_the_models_which_wins_over_the_default(
    configured, make_session, run_turn, model, settings
):
    configured(True)
    await AgentMode.objects.filter(key="general").aupdate(ask_followup=False)
    session = await make_session(execution="ask")
    model.reply("", tool_calls=[("agent_list_modes", {})])
    turn = await run_turn(session, PALINDROME)
    assert model.calls == 1  # the mode said no

    configured(None)
    settings.APTIX_ASK_FOLLOWUP = False
    await AgentMode.objects.filter(key="general").aupdate(ask_followup=True)
    model.reply("", tool_calls=[("agent_list_modes", {})])
    model.reply("Here it is.")
    turn = await run_turn(session, PALINDROME)
    assert model.calls == 3 and turn.answer == "Here it is."  # the mode said yes over the default

    configured(False)
    settings.APTIX_ASK_FOLLOWUP = True
    await AgentMode.objects.filter(key="general").aupdate(ask_followup=None)
    model.reply("", tool_calls=[("agent_list_modes", {})])
    await run_turn(session, PALINDROME)
    assert model.calls == 4  # unset in the mode: the model's false over APTIX_ASK_FOLLOWUP


@inline_db
async def test_a_tool_result_alone_is_labelled_not_passed_off_as_the_answer(make_session, run_turn, model):
    session = await make_session(execution="ask")
    model.reply("", tool_calls=[("agent_list_modes", {})])
    turn = await run_turn(session, PALINDROME)
    label = NO_ANSWER.format(names="`agent_list_modes`")
    assert turn.answer.startswith(label + "\n\n") and "**Data Analysis** (`data-analysis`)" in turn.answer

    model.reply("The modes are:", tool_calls=[("agent_list_modes", {})])
    turn = await run_turn(session, "What modes are there?")
    assert turn.answer.startswith("The modes are:") and "No answer from the model" not in turn.answer

    model.reply("", tool_calls=[("agent_change_mode", {"mode": "data-analysis", "branch": False, "reason": "R"})])
    turn = await run_turn(session, "2", choice={"mode": "data-analysis", "branch": False})
    assert turn.answer == "Mode changed: general → data-analysis."  # the switch asked for is the answer
