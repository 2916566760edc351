"""The automations on the JSON API: `GET|POST /api/v1/automations`, `GET|PATCH|DELETE …/<id>`,
`POST …/<id>/run`, `POST …/<id>/trigger` (the signed webhook, or the owner's bearer token),
`GET …/<id>/runs` and `GET /api/v1/inbox`. Alice owns the automations; bob (her teammate) and carol
(another team) get the 404 an unknown id gets, on every endpoint."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from asgiref.sync import sync_to_async

from agents.models import ToolApproval, Turn
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from aptix.models import Membership
from aptix.tokens import api_token_create
from automations.models import Automation, AutomationAudit, AutomationRun
from automations.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from projects.services import project_create
from tests.helpers import ServerLikeAsyncClient, async_db

LIST = "/api/v1/automations"
INBOX = "/api/v1/inbox"
EXECUTE = "/api/v1/agent/execute"
KEYS = {
    "id",
    "name",
    "prompt",
    "mode",
    "execution",
    "model",
    "projectId",
    "conversationId",
    "schedule",
    "runAt",
    "webhook",
    "allowedTools",
    "approvalTimeoutHours",
    "catchUp",
    "overlap",
    "enabled",
}
RUN_KEYS = {"id", "trigger", "scheduledFor", "status", "conversationId", "turnId", "startedAt", "endedAt"}


class TokenClient(ServerLikeAsyncClient):
    """The async client sending one user's bearer token with every request."""

    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def generic(self, method, path, data="", content_type="application/octet-stream", secure=False, **extra):
        extra["headers"] = {"Authorization": f"Bearer {self.secret}", **(extra.get("headers") or {})}
        return super().generic(method, path, data, content_type, secure, **extra)


class RecordingRunner:
    """Records the turns it is asked to start, runs nothing."""

    kind = "recording"

    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, turn_id, *, client_tools=None, tool_results=None):
        self.started.append(turn_id)
        return asyncio.get_running_loop().create_future()

    def orphan_candidates(self, turns, now):
        return turns


def _auth(user) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {api_token_create(user=user)[1]}"}


def _send(client, method: str, url: str, user=None, body=None, **headers) -> tuple[int, dict]:
    data = body if isinstance(body, (str, bytes)) else (json.dumps(body) if body is not None else "")
    auth = _auth(user) if user is not None else {}
    response = getattr(client, method)(url, data, content_type="application/json", **auth, **headers)
    return response.status_code, (response.json() if response.content else {})


def _signed(secret: str, body: bytes, *, at: int | None = None) -> dict[str, str]:
    timestamp = str(at if at is not None else int(time.time()))
    return {
        "HTTP_" + TIMESTAMP_HEADER.upper().replace("-", "_"): timestamp,
        "HTTP_" + SIGNATURE_HEADER.upper().replace("-", "_"): sign(secret, timestamp, body),
    }


def _make(client, user, **fields) -> dict:
    body = {"name": "Weekly summary", "prompt": "Summarise {date}", **fields}
    status, made = _send(client, "post", LIST, user, body)
    assert status == 201, made
    return made


@pytest.fixture
def runner():
    recording = RecordingRunner()
    with use_runner(recording):
        yield recording


# --- the automations ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_automation_is_made_read_changed_and_deleted(client, alice):
    body = {
        "name": "Weekly summary",
        "prompt": "Summarise the week of {date}",
        "execution": "agent",
        "schedule": {"cron": "0 8 * * 1", "timezone": "Europe/Paris"},
        "allowedTools": ["image_gen"],
        "approvalTimeoutHours": 12,
        "catchUp": False,
        "overlap": "queue",
    }
    made = _make(client, alice, **body)
    assert set(made) >= KEYS and "webhookSecret" not in made
    assert {k: made[k] for k in body} == body
    assert made["webhook"] is False and made["enabled"] is True and made["runAt"] is None
    assert made["projectId"] is None and made["conversationId"] is None and made["nextRunAt"]
    assert Automation.objects.get().owner == alice
    assert _send(client, "get", f"{LIST}/{made['id']}", alice) == (200, made)
    assert _send(client, "get", LIST, alice) == (200, {"automations": [made]})

    status, changed = _send(client, "patch", f"{LIST}/{made['id']}", alice, {"schedule": None, "enabled": False})
    assert status == 200 and changed["schedule"] is None and changed["enabled"] is False
    assert changed["prompt"] == body["prompt"] and changed["allowedTools"] == ["image_gen"]  # unsent: unchanged
    assert changed["nextRunAt"] is None
    assert _send(client, "delete", f"{LIST}/{made['id']}", alice) == (204, {})
    assert not Automation.objects.exists()
    actions = list(AutomationAudit.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["created", "tool_allowed", "paused", "changed", "deleted"]


@pytest.mark.django_db
def test_the_webhook_secret_is_shown_once(client, alice):
    made = _make(client, alice, webhook=True)
    assert made["webhook"] is True and made["webhookSecret"].startswith("whsec_")
    status, read = _send(client, "get", f"{LIST}/{made['id']}", alice)
    assert status == 200 and "webhookSecret" not in read
    assert "webhookSecret" not in _send(client, "get", LIST, alice)[1]["automations"][0]
    plain = _make(client, alice)
    status, turned_on = _send(client, "patch", f"{LIST}/{plain['id']}", alice, {"webhook": True})
    assert status == 200 and turned_on["webhookSecret"].startswith("whsec_")
    assert turned_on["webhookSecret"] != made["webhookSecret"]
    status, again = _send(client, "patch", f"{LIST}/{plain['id']}", alice, {"name": "Renamed"})
    assert status == 200 and "webhookSecret" not in again


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"schedule": {"cron": "every monday", "timezone": "UTC"}}, "cron", "cron expression"),
        ({"schedule": {"cron": "0 8 * * 1", "timezone": "Mars/Olympus"}}, "timezone", "Unknown time zone"),
        ({"allowedTools": ["no_such_tool"]}, "allowedTools[0]", "Unknown tool 'no_such_tool'"),
        ({"allowedTools": ["image_gen", "agent_change_mode"]}, "allowedTools[1]", "cannot be pre-approved"),
        ({"colour": "blue"}, "colour", "Unknown field 'colour'"),
        ({"overlap": "sometimes"}, "overlap", "overlap"),
        ({"runAt": "tomorrow"}, "runAt", "ISO 8601"),
        ({"projectId": "0" * 32}, "projectId", "No project"),
        ({"name": ""}, "name", "non-empty"),
        ({"conversationId": "0" * 32}, "conversationId", "No conversation"),
        ({"execution": "sometimes"}, "execution", "execution"),
    ],
)
def test_a_bad_field_is_a_400_naming_it_and_writes_nothing(client, alice, fields, field, words):
    body = {"name": "Weekly summary", "prompt": "Summarise {date}", **fields}
    status, refused = _send(client, "post", LIST, alice, body)
    assert status == 400 and refused["error"]["field"] == field and words in refused["error"]["message"]
    assert not Automation.objects.exists()


@pytest.mark.django_db
def test_a_change_is_checked_field_by_field_too(client, alice):
    made = _make(client, alice)
    url = f"{LIST}/{made['id']}"
    status, refused = _send(client, "patch", url, alice, {"schedule": {"cron": "61 * * * *"}})
    assert status == 400 and refused["error"]["field"] == "cron"
    status, refused = _send(client, "patch", url, alice, "[1, 2]")
    assert status == 400 and "JSON object" in refused["error"]["message"]
    status, refused = _send(client, "post", LIST, alice, {"prompt": "no name"})
    assert status == 400 and refused["error"]["field"] == "name"
    assert _send(client, "get", url, alice)[1] == made


@pytest.mark.django_db
def test_an_automation_of_a_project_is_in_its_team(client, carol, team_a, team_b):
    project = project_create(team=team_b, user=carol, name="Wells")
    Membership.objects.create(team=team_a, user=carol)  # carol's first team by name is now team A
    made = _make(client, carol, projectId=project.pk)
    assert made["projectId"] == project.pk and Automation.objects.get().team == team_b
    assert Automation.objects.get(pk=_make(client, carol)["id"]).team == team_a


@pytest.mark.django_db
def test_a_user_without_a_team_is_told_so(client, django_user_model):
    loner = django_user_model.objects.create_user("loner", password="x")
    status, refused = _send(client, "post", LIST, loner, {"name": "A", "prompt": "B"})
    assert status == 403 and "not a member of any team" in refused["error"]["message"]


@pytest.mark.django_db
def test_auth_comes_first_and_methods_are_named(client, alice):
    made = _make(client, alice)
    for url in (LIST, f"{LIST}/{made['id']}", f"{LIST}/{made['id']}/run", f"{LIST}/{made['id']}/runs", INBOX):
        assert client.get(url).status_code == 401
    response = client.put(LIST, "{}", content_type="application/json", **_auth(alice))
    assert response.status_code == 405 and response["Allow"] == "GET, POST"
    response = client.get(f"{LIST}/{made['id']}/run", **_auth(alice))
    assert response.status_code == 405 and response["Allow"] == "POST"


@pytest.mark.django_db
def test_anyone_but_the_owner_gets_a_404_everywhere(client, alice, bob, carol, runner):
    made = _make(client, alice, webhook=True)
    url = f"{LIST}/{made['id']}"
    for other in (bob, carol):  # a teammate, another team's user
        for method, path, body in [
            ("get", url, None),
            ("patch", url, {"name": "Mine now"}),
            ("delete", url, None),
            ("post", f"{url}/run", None),
            ("post", f"{url}/trigger", {"x": 1}),
            ("get", f"{url}/runs", None),
        ]:
            status, refused = _send(client, method, path, other, body)
            assert (status, refused["error"]) == (404, {"message": "No automation with this id.", "field": "id"}), (
                other,
                method,
                path,
            )
        assert _send(client, "get", LIST, other) == (200, {"automations": []})
    assert Automation.objects.get().name == "Weekly summary"
    assert not AutomationRun.objects.exists() and runner.started == []


# --- runs ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_run_now_begins_a_run_with_a_turn_and_lists_it(client, alice, runner):
    made = _make(client, alice, prompt="Report for {weekday}")
    status, run = _send(client, "post", f"{LIST}/{made['id']}/run", alice)
    assert status == 202 and set(run) >= RUN_KEYS
    assert (run["trigger"], run["status"], run["scheduledFor"]) == ("manual", "running", None)
    turn = Turn.objects.select_related("session").get(pk=run["turnId"])
    assert runner.started == [turn.pk] and turn.session_id == run["conversationId"]
    assert turn.session.user_id == alice.pk and turn.user_message.startswith("Report for ")
    assert "{weekday}" not in turn.user_message

    status, skipped = _send(client, "post", f"{LIST}/{made['id']}/run", alice)  # the first still goes
    assert status == 200 and skipped["status"] == "skipped" and skipped["turnId"] is None
    assert runner.started == [turn.pk]
    status, runs = _send(client, "get", f"{LIST}/{made['id']}/runs", alice)
    assert status == 200 and [r["id"] for r in runs["runs"]] == [skipped["id"], run["id"]]  # newest first
    status, runs = _send(client, "get", f"{LIST}/{made['id']}/runs?limit=1", alice)
    assert [r["id"] for r in runs["runs"]] == [skipped["id"]]
    for bad in ("0", "101", "x"):
        status, refused = _send(client, "get", f"{LIST}/{made['id']}/runs?limit={bad}", alice)
        assert status == 400 and refused["error"]["field"] == "limit"


@pytest.mark.django_db
def test_with_overlap_queue_a_run_waits_for_the_one_going(client, alice, runner):
    made = _make(client, alice, overlap="queue")
    first = _send(client, "post", f"{LIST}/{made['id']}/run", alice)[1]
    status, queued = _send(client, "post", f"{LIST}/{made['id']}/run", alice)
    assert status == 202 and (queued["status"], queued["turnId"]) == ("queued", None)
    assert runner.started == [first["turnId"]]


@pytest.mark.django_db
def test_run_now_counts_against_the_owners_turn_rate(client, alice, runner, settings):
    settings.APTIX_RATE_TURNS = "1/m"
    made = _make(client, alice, overlap="queue")
    assert _send(client, "post", f"{LIST}/{made['id']}/run", alice)[0] == 202
    response = client.post(f"{LIST}/{made['id']}/run", **_auth(alice))
    assert response.status_code == 429 and response["Retry-After"]
    assert AutomationRun.objects.count() == 1


@pytest.mark.django_db
def test_refused_signatures_count_against_the_address(client, alice, runner, settings):
    settings.APTIX_RATE_BAD_TOKENS = "2/m"
    made = _make(client, alice, webhook=True)
    url = f"{LIST}/{made['id']}/trigger"
    statuses = [_send(client, "post", url, None, b"{}", **_signed("whsec_guess", b"{}"))[0] for _ in range(3)]
    assert statuses == [401, 401, 429]
    status, _ = _send(client, "post", url, None, b"{}", **_signed(made["webhookSecret"], b"{}"))
    assert status == 429 and not AutomationRun.objects.exists()  # past the limit, nothing is looked at


@pytest.mark.django_db
def test_a_paused_automation_does_not_run(client, alice, runner):
    made = _make(client, alice, webhook=True, enabled=False)
    status, refused = _send(client, "post", f"{LIST}/{made['id']}/run", alice)
    assert status == 409 and refused["error"]["field"] == "enabled" and "paused" in refused["error"]["message"]
    body = b"{}"
    status, refused = _send(
        client, "post", f"{LIST}/{made['id']}/trigger", None, body, **_signed(made["webhookSecret"], body)
    )
    assert status == 409 and "paused" in refused["error"]["message"]
    assert not AutomationRun.objects.exists() and runner.started == []


# --- the webhook --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_signed_call_runs_once_with_its_payload(client, alice, runner):
    made = _make(client, alice, webhook=True, prompt="Review {payload.file} for {payload.who.name}.")
    url = f"{LIST}/{made['id']}/trigger"
    body = json.dumps({"file": "well-7.ddr", "who": {"name": "Dana"}}).encode()
    headers = _signed(made["webhookSecret"], body)
    status, run = _send(client, "post", url, None, body, **headers)
    assert status == 202 and run["trigger"] == "webhook" and run["status"] == "running"
    turn = Turn.objects.get(pk=run["turnId"])
    assert turn.user_message == "Review well-7.ddr for Dana." and runner.started == [turn.pk]

    status, refused = _send(client, "post", url, None, body, **headers)  # the same call again: a replay
    assert status == 401 and "replay" in refused["error"]["message"]
    assert AutomationRun.objects.count() == 1 and len(runner.started) == 1


@pytest.mark.django_db
def test_bad_old_and_unsigned_calls_are_refused_and_run_nothing(client, alice, runner):
    made = _make(client, alice, webhook=True)
    url = f"{LIST}/{made['id']}/trigger"
    body = b'{"x": 1}'
    cases = [
        (_signed("whsec_not-the-secret", body), "does not match"),
        (_signed(made["webhookSecret"], b'{"x": 2}'), "does not match"),  # signed another body
        (_signed(made["webhookSecret"], body, at=int(time.time()) - 301), "more than 5 minutes"),
        (_signed(made["webhookSecret"], body, at=int(time.time()) + 400), "more than 5 minutes"),
        ({}, TIMESTAMP_HEADER),
    ]
    for headers, words in cases:
        status, refused = _send(client, "post", url, None, body, **headers)
        assert status == 401 and words in refused["error"]["message"], (words, refused)
    assert not AutomationRun.objects.exists() and runner.started == []


@pytest.mark.django_db
def test_an_unknown_id_answers_as_a_wrong_signature_does(client, alice, runner):
    with_hook = _make(client, alice, webhook=True)
    without = _make(client, alice)
    body = b"{}"
    headers = _signed(with_hook["webhookSecret"], body)
    answers = [
        _send(client, "post", f"{LIST}/{automation_id}/trigger", None, body, **headers)
        for automation_id in ("f" * 32, without["id"], "no-such-id")
    ]
    wrong = _send(client, "post", f"{LIST}/{with_hook['id']}/trigger", None, body, **_signed("whsec_guess", body))
    assert answers == [wrong] * 3 and wrong[0] == 401
    assert not AutomationRun.objects.exists()


@pytest.mark.django_db
def test_a_signed_call_after_its_owner_left_the_team_runs_nothing(client, alice, team_a, runner):
    made = _make(client, alice, webhook=True)
    Membership.objects.filter(user=alice, team=team_a).delete()
    body = b"{}"
    status, run = _send(
        client, "post", f"{LIST}/{made['id']}/trigger", None, body, **_signed(made["webhookSecret"], body)
    )
    # leaving the team stopped the automation at once (automations/receivers.py): the call says why
    assert status == 409 and "no longer an active member" in run["error"]["message"]
    assert runner.started == [] and not Turn.objects.exists() and not AutomationRun.objects.exists()
    automation = Automation.objects.get()
    assert not automation.enabled and "no longer an active member" in automation.paused_reason


@pytest.mark.django_db
def test_the_owners_bearer_token_triggers_too(client, alice, runner):
    made = _make(client, alice, webhook=True, prompt="Ticket {payload.id}")
    status, run = _send(client, "post", f"{LIST}/{made['id']}/trigger", alice, {"id": 42})
    assert status == 202 and run["trigger"] == "webhook"
    assert Turn.objects.get(pk=run["turnId"]).user_message == "Ticket 42"
    plain = _make(client, alice)
    status, refused = _send(client, "post", f"{LIST}/{plain['id']}/trigger", alice, {"id": 42})
    assert status == 409 and refused["error"]["field"] == "webhook"


@pytest.mark.django_db
def test_a_signed_body_that_is_not_a_json_object_is_a_400_and_an_empty_one_runs(client, alice, runner):
    made = _make(client, alice, webhook=True, prompt="Ping {payload.x}.")
    url = f"{LIST}/{made['id']}/trigger"
    for body in (b"[1, 2]", b"not json"):
        status, refused = _send(client, "post", url, None, body, **_signed(made["webhookSecret"], body))
        assert status == 400 and "JSON object" in refused["error"]["message"]
    assert not AutomationRun.objects.exists()
    status, run = _send(client, "post", url, None, b"", **_signed(made["webhookSecret"], b""))
    assert status == 202 and Turn.objects.get(pk=run["turnId"]).user_message == "Ping ."


# --- running for real: a run completes; an approval waits in the inbox and is decided -------------


@async_db
async def test_run_now_completes_on_the_runner(alice, model, llm):
    model.reply("The summary.")
    _, secret = await sync_to_async(api_token_create)(user=alice)
    client = TokenClient(secret)
    made = (await client.post(LIST, {"name": "Now", "prompt": "Go"}, content_type="application/json")).json()
    runner = LocalRunner()
    with use_runner(runner):
        response = await client.post(f"{LIST}/{made['id']}/run")
        assert response.status_code == 202
        turn = await runner.wait(response.json()["turnId"])
    assert turn.status == "completed" and turn.answer == "The summary."
    runs = (await client.get(f"{LIST}/{made['id']}/runs")).json()["runs"]
    assert [(r["status"], r["turnId"]) for r in runs] == [("completed", turn.pk)] and runs[0]["endedAt"]


@async_db
async def test_the_inbox_lists_an_approval_and_deciding_it_resumes_the_run(alice, bob, model, llm, notes_tool):
    _, secret = await sync_to_async(api_token_create)(user=alice)
    client = TokenClient(secret)
    made = (
        await client.post(
            LIST, {"name": "Notes", "prompt": "Note it", "execution": "agent"}, content_type="application/json"
        )
    ).json()
    model.reply("", tool_calls=[("notes__add_note", {"text": "Call the supplier"})])
    runner = LocalRunner()
    with use_runner(runner):
        run = (await client.post(f"{LIST}/{made['id']}/run")).json()
        turn = await runner.wait(run["turnId"])
        assert turn.status == "awaiting_approval" and notes_tool.calls == []
        response = await client.get(INBOX)
        assert response.status_code == 200
        approval = await ToolApproval.objects.aget(turn_id=turn.pk)
        [item] = response.json()
        assert {k: item[k] for k in ("automation", "turnId", "conversationId", "toolCallId", "kind", "tool")} == {
            "automation": {"id": made["id"], "name": "Notes"},
            "turnId": turn.pk,
            "conversationId": turn.session_id,
            "toolCallId": approval.tool_call_id,
            "kind": "tool",
            "tool": "notes__add_note",
        }
        assert json.loads(item["arguments"]) == {"text": "Call the supplier"} and item["since"]
        _, bob_secret = await sync_to_async(api_token_create)(user=bob)
        assert (await TokenClient(bob_secret).get(INBOX)).json() == []

        model.reply("Added the note.")
        decision = {
            "conversationId": item["conversationId"],
            "approvals": [{"toolCallId": item["toolCallId"], "decision": "approve"}],
        }
        response = await client.post(EXECUTE, json.dumps(decision), content_type="application/json")
        assert response.status_code == 200 and response.json()["status"] == "completed"
    assert notes_tool.calls == ['{"text": "Call the supplier"}']
    assert (await AutomationRun.objects.aget(pk=run["id"])).status == "completed"
    assert (await client.get(INBOX)).json() == []
