"""A mode's routing test utterances and checks: validated naming the bad item and key, kept in every
version (drafts, publish, restore, compare), edited in the admin (utterances one a line, checks as
JSON), and seeded for the built-in modes."""

from __future__ import annotations

import html
import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from modes.models import AgentMode
from modes.seed import SEED_TESTS_AND_CHECKS
from modes.validators import validate_checks, validate_test_utterances
from modes.versioning import FRONT_MATTER_NAMES, VERSIONED_FIELDS, diff_text, snapshot_diff, snapshot_of
from modes.versions import draft_save, version_get, version_publish
from tests.helpers import mode_admin_form

pytestmark = pytest.mark.django_db

CHECK = {"prompt": "What modes are there?", "execution": "agent", "expect": {"tool": "agent_list_modes"}}


@pytest.mark.parametrize(
    ("checks", "message"),
    [
        ("nope", "checks: expected a list of checks."),
        (["nope"], "checks[0]: expected a mapping with prompt, execution and expect"),
        ([{"expect": {"tool": "x"}}], "checks[0].prompt: expected a non-empty string"),
        ([CHECK, {"prompt": "Hi", "expect": {"tool": 3}}], "checks[1].expect.tool: expected a string"),
        ([{"prompt": "Hi", "execution": "fast", "expect": {"contains": "a"}}], "checks[0].execution: expected ask"),
        ([{"prompt": "Hi", "expect": {}}], "checks[0].expect: expected a mapping with one or more of tool,"),
        ([{"prompt": "Hi", "expect": {"colour": "red"}}], "checks[0].expect.colour: unknown key"),
        ([{"prompt": "Hi", "expect": {"status": "done"}}], "checks[0].expect.status: expected a turn status"),
        ([{"prompt": "Hi", "expect": {"tool": "x"}, "extra": 1}], "checks[0].extra: unknown key"),
    ],
)
def test_a_bad_check_is_named_by_its_item_and_key(checks, message):
    with pytest.raises(ValidationError) as caught:
        validate_checks(checks)
    assert caught.value.messages[0].startswith(message), caught.value.messages


def test_valid_checks_and_test_utterances_pass():
    validate_checks([CHECK, {"prompt": "Hi", "expect": {"contains": "a", "not_contains": "b", "status": "failed"}}])
    validate_test_utterances(["Plan my week"])
    with pytest.raises(ValidationError):
        validate_test_utterances(["Plan my week", "  "])


def test_a_saved_check_is_kept_in_canonical_order_with_its_execution():
    mode = AgentMode.objects.get(key="general")
    mode.checks = [{"expect": {"status": "completed", "tool": "agent_list_modes"}, "prompt": "Modes?"}]
    mode.full_clean()
    assert json.dumps(mode.checks) == json.dumps(
        [{"prompt": "Modes?", "execution": "ask", "expect": {"tool": "agent_list_modes", "status": "completed"}}]
    )


def test_versions_carry_tests_and_checks_through_draft_publish_restore_and_compare(curator):
    assert {"test_utterances", "checks"} <= set(VERSIONED_FIELDS)
    assert (FRONT_MATTER_NAMES["tests"], FRONT_MATTER_NAMES["checks"]) == ("test_utterances", "checks")
    mode = AgentMode.objects.get(key="general")
    original = (mode.test_utterances, mode.checks)
    draft = draft_save(mode="general", fields={"test_utterances": ["Plan my week"], "checks": [CHECK]}, author=curator)
    mode.refresh_from_db()
    assert (mode.test_utterances, mode.checks) == original  # a draft changes nothing live
    assert draft.snapshot["test_utterances"] == ["Plan my week"] and draft.snapshot["checks"] == [CHECK]

    version_publish(version=draft, by=curator)
    mode.refresh_from_db()
    assert (mode.test_utterances, mode.checks) == (["Plan my week"], [CHECK])
    changes = {c["name"]: c for c in snapshot_diff(version_get("general", 1).snapshot, draft.snapshot)}
    assert changes["checks"]["added"] == [CHECK] and changes["checks"]["removed"] == original[1]
    assert changes["tests"]["added"] == ["Plan my week"]
    assert '  + {"prompt": "What modes are there?", "execution": "agent"' in diff_text(list(changes.values()))

    restored = version_publish(version=version_get("general", 1), by=curator)
    mode.refresh_from_db()
    assert (mode.test_utterances, mode.checks) == original
    assert restored.snapshot == snapshot_of(mode)


def test_a_bad_check_in_a_draft_is_refused_naming_it(curator):
    with pytest.raises(ValidationError) as caught:
        draft_save(mode="general", fields={"checks": [{"prompt": "Hi", "expect": {"tool": 3}}]}, author=curator)
    assert caught.value.message_dict["checks"] == ["checks[0].expect.tool: expected a string"]


def test_the_admin_edits_test_utterances_a_line_each_and_checks_as_json(client, curator, password):
    mode = AgentMode.objects.get(key="ddr-authoring")
    client.login(username=curator.username, password=password)
    url = reverse("admin:modes_agentmode_change", args=[mode.pk])
    page = html.unescape(client.get(url).content.decode())
    assert 'class="fieldset-heading">Tests</h2>' in page
    assert mode.test_utterances[0] in page and '"prompt": "Draft a DDR for our new caching layer"' in page

    raw_checks = json.dumps([{"expect": {"contains": "DDR"}, "prompt": "Draft a DDR for X"}], indent=4)
    data = mode_admin_form(mode, test_utterances="Start a DDR\n\n  Review my DDR  \n", checks=raw_checks)
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    mode.refresh_from_db()
    assert mode.test_utterances == ["Start a DDR", "Review my DDR"]
    assert mode.checks == [{"prompt": "Draft a DDR for X", "execution": "ask", "expect": {"contains": "DDR"}}]
    assert mode.versions.get(number=mode.version).snapshot["checks"] == mode.checks

    for bad, message in [
        ('[{"prompt": "Hi"', "Not valid JSON (line 1, column 17)"),
        ('[{"prompt": "Hi", "expect": {"tool": 3}}]', "checks[0].expect.tool: expected a string"),
    ]:
        response = client.post(url, mode_admin_form(mode, checks=bad))
        assert response.status_code == 200
        assert message in html.unescape(response.content.decode())
    mode.refresh_from_db()
    assert mode.checks[0]["prompt"] == "Draft a DDR for X"


def test_the_compare_page_lists_checks_and_tests_item_by_item(client, curator, password):
    mode = AgentMode.objects.get(key="general")
    draft_save(mode=mode, fields={"checks": [*mode.checks, CHECK], "test_utterances": ["Plan my week"]}, author=curator)
    client.login(username=curator.username, password=password)
    page = client.get(reverse("admin:modes_agentmode_compare", args=[mode.pk]) + "?a=1&b=2").content.decode()
    page = html.unescape(page)
    assert '<li class="item-added">{"prompt": "What modes are there?", "execution": "agent"' in page
    assert '<li class="item-added">Plan my week</li>' in page
    assert 'data-field="checks"' in page and 'data-field="tests"' in page


def test_every_seed_mode_has_five_distinct_test_utterances_and_two_checks():
    modes = AgentMode.objects.filter(key__in=list(SEED_TESTS_AND_CHECKS))
    assert modes.count() == len(SEED_TESTS_AND_CHECKS) == 4
    for mode in modes:
        assert len(mode.test_utterances) >= 5 and len(mode.checks) >= 2, mode.key
        assert not set(mode.test_utterances) & set(mode.example_utterances), mode.key
        assert (mode.test_utterances, mode.checks) == (
            SEED_TESTS_AND_CHECKS[mode.key]["test_utterances"],
            SEED_TESTS_AND_CHECKS[mode.key]["checks"],
        )
        validate_checks(mode.checks)
        assert mode.versions.get(number=mode.version).snapshot == snapshot_of(mode)


def test_the_session_page_shows_examples_but_never_test_utterances_or_checks(client, alice, team_a, password):
    from agents.sessions import session_create

    mode = AgentMode.objects.get(key="general")
    mode.test_utterances = ["Reconcile the zebra ledger"]
    mode.checks = [{"prompt": "Count the zebras", "execution": "ask", "expect": {"contains": "zebra"}}]
    mode.save()
    session = session_create(team=team_a, user=alice)
    client.login(username=alice.username, password=password)
    page = html.unescape(client.get(reverse("session-detail", args=[session.id])).content.decode())
    assert mode.example_utterances[0] in page  # the suggestions are the examples
    assert "zebra" not in page.lower()
