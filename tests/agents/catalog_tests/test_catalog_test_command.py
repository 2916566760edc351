"""`manage.py catalog_test`: the routing run of the active catalog, printed (each case, each mode's
precision and recall, the accuracy), exiting 1 below --min-accuracy. The seed catalog routed by the
built-in offline model gives one accuracy, every time."""

from __future__ import annotations

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
from tests.helpers import inline_db

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
    with pytest.raises(CommandError, match="invalid choice: 'checks'"):
        call_command("catalog_test", "--user", "alice", "--kind", "checks")
    with pytest.raises(CommandError, match="between 0 and 1"):
        call_command("catalog_test", "--user", "alice", "--min-accuracy", "2")


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
