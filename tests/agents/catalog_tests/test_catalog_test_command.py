"""`manage.py catalog_test`: the routing run of the active catalog, printed (each case, each mode's
precision and recall, the accuracy), exiting 1 below --min-accuracy; with `--kind checks` or `both`,
the catalog's checks too, each with why it failed, exiting 1 on a failed check. The seed catalog
routed by the built-in offline model gives one accuracy, every time, and passes all its checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from agents.catalog_tests import STAY, routing_run
from agents.models import AgentSession
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from modes.models import AgentMode
from modes.seed import SEED_TESTS_AND_CHECKS
from tests.helpers import inline_db
from tools.demo_data import build_demo_database
from tools.mcp import host as host_module
from tools.registry import mcp_registry

# The seed catalog's example and test utterances through the offline model: what it routes right
# (measured; a change to the seed catalog or the offline model's routing shows here). The six it gets
# wrong are test utterances, which its keywords were not written for.
SEED_CASES = 43
SEED_RIGHT = 37
SEED_ACCURACY = round(SEED_RIGHT / SEED_CASES, 4)

ROOT = Path(__file__).resolve().parents[3]
committed_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@inline_db
async def test_the_seed_catalog_with_the_offline_model_gives_a_known_accuracy(team_a, alice):
    with use_runner(LocalRunner()):
        first = await routing_run(user=alice, team=team_a)
        again = await routing_run(user=alice, team=team_a)
    print(f"seed catalog, offline model: accuracy {first.accuracy} over {len(first.cases)} cases")
    assert (len(first.cases), sum(c.ok for c in first.cases), first.accuracy) == (SEED_CASES, SEED_RIGHT, SEED_ACCURACY)
    assert [(c.utterance, c.got) for c in again.cases] == [(c.utterance, c.got) for c in first.cases]
    assert STAY in first.modes and all(c.tokens >= 0 for c in first.cases)
    assert not await AgentSession.objects.filter(catalog_test=True, deleted_at__isnull=True).aexists()


@committed_db
def test_the_command_prints_the_cases_the_modes_and_the_accuracy(team_a, alice, capsys):
    call_command("catalog_test", "--kind", "routing", "--user", "alice", "--min-accuracy", "0")
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["utterance", "expected", "got", "ok"]
    assert "precision  recall" in out and "data-analysis" in out and STAY in out
    assert f"accuracy {SEED_ACCURACY:.2f} ({SEED_RIGHT}/{SEED_CASES} cases" in out


@committed_db
def test_the_command_exits_1_below_the_minimum_accuracy(team_a, alice, monkeypatch):
    from agents.catalog_tests import routing

    async def nothing_right(**kwargs):
        result = await real(**kwargs)
        return routing.CaseResult(**{**result.as_dict(), "got": "nowhere", "ok": False})

    real = routing.routing_case_run
    monkeypatch.setattr(routing, "routing_case_run", nothing_right)
    with pytest.raises(CommandError) as below:
        call_command("catalog_test", "--user", "alice", "--min-accuracy", "0.5")
    assert below.value.returncode == 1 and "Accuracy 0.00 is below 0.50" in str(below.value)


@committed_db
def test_the_command_refuses_an_unknown_model_a_user_and_a_kind(team_a, alice):
    with pytest.raises(CommandError, match="Unknown model 'nope'"):
        call_command("catalog_test", "--user", "alice", "--model", "nope")
    with pytest.raises(CommandError, match="No user 'nobody'"):
        call_command("catalog_test", "--user", "nobody")
    with pytest.raises(CommandError, match="invalid choice: 'everything'"):
        call_command("catalog_test", "--user", "alice", "--kind", "everything")
    with pytest.raises(CommandError, match="between 0 and 1"):
        call_command("catalog_test", "--user", "alice", "--min-accuracy", "2")


SEED_CHECKS = sum(len(cases["checks"]) for cases in SEED_TESTS_AND_CHECKS.values())
FAILING = {"prompt": "Hello there", "expect": {"contains": "zebra"}}


def add_failing_check() -> None:
    general = AgentMode.objects.get(key="general")
    general.checks = [*general.checks, FAILING]
    general.save(update_fields=["checks"])


@committed_db
@pytest.mark.usefixtures("mcp_sql_tool")  # the data-analysis check queries the demo database's server
def test_the_command_prints_the_checks_and_exits_0_when_all_pass(team_a, alice, capsys):
    call_command("catalog_test", "--kind", "checks", "--user", "alice")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["mode", "prompt", "ok", "reasons"]
    rows = lines[1 : 1 + SEED_CHECKS]
    assert [row.split()[0] for row in rows] == [
        key for key, cases in SEED_TESTS_AND_CHECKS.items() for _ in cases["checks"]
    ]
    assert all(row.rstrip().endswith("yes") for row in rows)
    assert lines[-1].startswith(f"checks {SEED_CHECKS}/{SEED_CHECKS} passed (0 failed")
    assert "accuracy" not in "\n".join(lines)  # no routing run with --kind checks


@committed_db
@pytest.mark.usefixtures("mcp_sql_tool")
def test_the_command_exits_1_on_a_failed_check_naming_why(team_a, alice, capsys):
    add_failing_check()
    with pytest.raises(CommandError) as failed:
        call_command("catalog_test", "--kind", "checks", "--user", "alice")
    assert failed.value.returncode == 1 and str(failed.value) == f"1 of {SEED_CHECKS + 1} checks failed."
    [row] = [line for line in capsys.readouterr().out.splitlines() if " NO " in line]
    assert row.split()[:3] == ["general", "Hello", "there"]
    assert row.endswith("answer does not contain 'zebra'")


@committed_db
@pytest.mark.usefixtures("mcp_sql_tool")
def test_both_runs_routing_and_checks_and_names_every_failure(team_a, alice, capsys):
    add_failing_check()
    with pytest.raises(CommandError) as failed:
        call_command("catalog_test", "--kind", "both", "--user", "alice", "--min-accuracy", "0.9")
    assert failed.value.returncode == 1
    assert str(failed.value) == f"Accuracy {SEED_ACCURACY:.2f} is below 0.90. 1 of {SEED_CHECKS + 1} checks failed."
    out = capsys.readouterr().out
    assert f"accuracy {SEED_ACCURACY:.2f} ({SEED_RIGHT}/{SEED_CASES} cases" in out
    assert f"checks {SEED_CHECKS}/{SEED_CHECKS + 1} passed (1 failed" in out


@committed_db
@pytest.mark.usefixtures("mcp_sql_tool")
def test_both_exits_0_when_accuracy_and_checks_hold(team_a, alice, capsys):
    call_command("catalog_test", "--kind", "both", "--user", "alice", "--min-accuracy", "0.5")
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["utterance", "expected", "got", "ok"]
    assert f"checks {SEED_CHECKS}/{SEED_CHECKS} passed" in out


@pytest.fixture
def sql_server_config(tmp_path, settings):
    """This process's MCP host, when the command starts it, runs the demo database's SQL server (as
    mcp.json's); stopped after."""
    database = tmp_path / "demo.sqlite3"
    build_demo_database(database)
    config = tmp_path / "mcp.json"
    server = {
        "command": sys.executable,
        "args": ["-m", "tools.mcp.sql_server", f"sqlite:///{database}"],
        "cwd": str(ROOT),
    }
    config.write_text(json.dumps({"mcpServers": {"sql": server}}))
    settings.APTIX_MCP_CONFIG, settings.APTIX_MCP_AUTOSTART, settings.VAR_DIR = config, True, tmp_path
    assert host_module.mcp_host() is None
    yield
    started = host_module.mcp_host()
    if started is not None:
        started.stop()
        host_module._host = None
    assert not [name for name, _ in mcp_registry if name.startswith("sql__")]


@pytest.mark.slow  # a real MCP server process
@committed_db
def test_checks_run_in_process_get_the_mcp_servers_the_command_starts(sql_server_config, team_a, alice, capsys):
    call_command("catalog_test", "--kind", "checks", "--user", "alice")
    out = capsys.readouterr().out
    [row] = [line for line in out.splitlines() if "What was the revenue by month?" in line]
    assert row.split()[0] == "data-analysis" and row.rstrip().endswith("yes")  # it called sql__query
    assert f"checks {SEED_CHECKS}/{SEED_CHECKS} passed" in out


@pytest.mark.slow  # a real process: the setting is read at start-up
def test_a_concurrency_below_one_stops_the_command_at_start(tmp_path):
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": "test-only",
        "APTIX_VAR_DIR": str(tmp_path / "var"),
        "APTIX_CATALOG_TEST_CONCURRENCY": "0",
    }
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "catalog_test"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode != 0
    assert "APTIX_CATALOG_TEST_CONCURRENCY must be at least 1, not 0." in done.stderr


@committed_db
def test_the_command_runs_over_the_drafts_and_fails_below_the_threshold_they_cause(team_a, alice, capsys):
    """A catalog kept in git tests its pending edits in CI: --drafts runs the catalog as it would be
    published; emptying Data Analysis takes the offline model from 0.86 to 0.73, below 0.8."""
    from modes.versions import draft_save

    draft = draft_save(mode="data-analysis", fields={"description": "TBD.", "example_utterances": []}, author=None)
    call_command("catalog_test", "--user", "alice", "--min-accuracy", "0.8")  # the published catalog: 0.86
    capsys.readouterr()
    with pytest.raises(CommandError) as failed:
        call_command("catalog_test", "--drafts", "--user", "alice", "--min-accuracy", "0.8")
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"over the catalog with its drafts applied (data-analysis v{draft.number})"
    assert "accuracy 0.73 (27/37 cases" in out
    assert str(failed.value) == "Accuracy 0.73 is below 0.80." and failed.value.returncode == 1
