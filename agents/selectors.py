"""Selectors: the reads the web layer needs (views, the API, the page fragments). Services write
(agents/sessions.py, turns.py, conversations.py…), selectors read; views call one or the other and
render, so no view module queries the ORM itself (tests/agents/test_view_layering.py checks it).

Keyword-only, typed, named `<entity>_<action>`; an `a` prefix on the action marks the async variant
that an async view awaits. Callers authorise first: a selector that takes a `session` trusts that it
is the user's own (`sessions.session_get`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, IntegerField, Max, Q, QuerySet, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Length, Lower

from modes.catalog import active_modes, catalog_drafts_applied, usable_by
from modes.models import AgentMode, ModeHistory

from .models import AgentSession, AppAction, Turn, TurnEvent
from .sessions import session_list, session_shared_list

# --- sessions -----------------------------------------------------------------------------------


def session_list_filtered(*, user: Any, q: str, mode: str, archived: bool) -> QuerySet[AgentSession]:
    """The sidebar's list: the user's sessions, active or archived, whose title, a message or an
    answer holds `q`, in `mode`; pinned first, then the most recently updated."""
    sessions = session_list(user=user).filter(archived_at__isnull=not archived)
    if q:
        matches = Q(title__icontains=q) | Q(turns__user_message__icontains=q) | Q(turns__answer__icontains=q)
        sessions = sessions.filter(matches).distinct()
    if mode:
        sessions = sessions.filter(mode=mode)
    return sessions.order_by(F("pinned_at").desc(nulls_last=True), "-updated_at")


def sessions_grouped_by_project(*, user: Any) -> bool:
    """Whether the sidebar groups the user's sessions by project: when any of them is in one."""
    return session_list(user=user).filter(project__isnull=False).exists()


def by_project(sessions: QuerySet[AgentSession]) -> QuerySet[AgentSession]:
    """`sessions` in the sidebar's groups: each project's (by name), then those in none ("No project");
    in each, the sidebar's own order (pinned first, then the most recently updated)."""
    return sessions.select_related("project").order_by(
        Lower("project__name").asc(nulls_last=True), "project_id", F("pinned_at").desc(nulls_last=True), "-updated_at"
    )


def project_sessions(*, user: Any, project: Any) -> list[AgentSession]:
    """A project's page: the user's own sessions in it and those teammates shared with the team, not
    archived, the most recently active first (another member's unshared session stays theirs)."""
    own = session_list(user=user).filter(project=project, archived_at__isnull=True).select_related("user")
    shared = session_shared_list(user=user).filter(project=project)
    return sorted([*own, *shared], key=lambda s: s.updated_at, reverse=True)


def session_list_own(*, user: Any, limit: int) -> list[AgentSession]:
    """At most `limit` of the user's active sessions (not archived), as the sidebar orders them, with
    their authors (the API's list)."""
    sessions = session_list_filtered(user=user, q="", mode="", archived=False).select_related("user")
    return list(sessions[:limit])


def session_shared_with(*, user: Any, limit: int) -> list[AgentSession]:
    """The sidebar's "Shared with me": at most `limit` sessions teammates shared with the user's teams,
    the most recently active first, with their authors."""
    return list(session_shared_list(user=user)[:limit])


def session_refresh(*, session: AgentSession, fields: list[str] | None = None) -> AgentSession:
    """The session's columns (or `fields`) as stored now, read into the same object."""
    session.refresh_from_db(fields=fields)
    return session


def session_children(*, session: AgentSession, user: Any) -> QuerySet[AgentSession]:
    """The sessions branched from `session` (its "Continue in a new session" children), oldest first."""
    return session.children.filter(user=user).order_by("created_at")


def session_busy(*, session: AgentSession) -> bool:
    """Whether a run holds a turn of the session (a paused turn leaves the composer free: a new
    message declines what an approval waits for)."""
    return session.turns.filter(finished_at__isnull=True).exclude(status__in=Turn.PAUSED_STATUSES).exists()


def session_waiting(*, session: AgentSession) -> bool:
    """Whether a turn of the session waits for the user's approval."""
    return session.turns.filter(status=Turn.Status.AWAITING_APPROVAL).exists()


# --- turns --------------------------------------------------------------------------------------


def turn_last(*, session: AgentSession) -> Turn | None:
    return session.turns.order_by("-index").first()


async def turn_aget(*, session: AgentSession, turn_id: str) -> Turn | None:
    """A turn of the (authorised) session, with its session."""
    return await Turn.objects.filter(pk=turn_id, session=session).select_related("session").afirst()


async def turn_continued_aget(*, turn: Turn) -> Turn | None:
    """The follow-up turn that carried `turn`'s request on after its mode switch, if one was made."""
    follow_ups = Turn.objects.select_related("session").filter(session_id=turn.session_id, index=turn.index + 1)
    return await follow_ups.filter(origin=Turn.Origin.CONTINUED).afirst()


def _turns_of_user(*, user: Any, turn_id: str) -> QuerySet[Turn]:
    """The turn `turn_id` if its session is one the user may reach: the same check as every page's
    (session_list: their own, in a team they still belong to, not deleted)."""
    return Turn.objects.filter(pk=turn_id, session__in=session_list(user=user).values("pk")).select_related("session")


def turn_shared_with(*, user: Any, turn_id: str) -> bool:
    """Whether the turn is of a session a teammate shared with the user's team (readable, not theirs)."""
    return Turn.objects.filter(pk=turn_id, session__in=session_shared_list(user=user).values("pk")).exists()


async def turn_of_user_aget(*, user: Any, turn_id: str) -> Turn | None:
    """A turn of one of the sessions the user may reach (session_list)."""
    return await _turns_of_user(user=user, turn_id=turn_id).afirst()


def turn_of_user_get(*, user: Any, turn_id: str) -> Turn | None:
    """A turn of one of the sessions the user may reach (session_list)."""
    return _turns_of_user(user=user, turn_id=turn_id).first()


def turn_answer_get(*, session: AgentSession, turn_id: str) -> Turn | None:
    """A finished turn of the session, with only its answer loaded."""
    return session.turns.filter(pk=turn_id, finished_at__isnull=False).only("answer").first()


def turn_list(*, session: AgentSession) -> QuerySet[Turn]:
    """Every turn of the session in order, with the turn that replaced it."""
    return session.turns.select_related("replaced_by").order_by("index")


def turn_matches(*, sessions: Iterable[AgentSession], q: str) -> QuerySet[Turn]:
    """The turns of `sessions` whose message or answer holds `q`, in order (only what a snippet needs)."""
    return (
        Turn.objects.filter(session__in=sessions)
        .filter(Q(user_message__icontains=q) | Q(answer__icontains=q))
        .order_by("session_id", "index")
        .only("session_id", "user_message", "answer")
    )


def turn_replaced_ids(*, turn: Turn) -> list[str]:
    """The ids of the turns `turn` replaced (an edit, retry or regenerate), in order."""
    return list(turn.replaces.order_by("index").values_list("id", flat=True))


# --- versions: what an edit, retry or regenerate replaced (agents/conversations.py turn_resend) ----

RESENT = (Turn.Origin.EDIT, Turn.Origin.RETRY, Turn.Origin.REGENERATE)


def turn_versions(*, session_id: str, turns: Iterable[Turn]) -> dict[str, list[str]]:
    """The versions of each resent turn among `turns`, oldest first, as turn ids: a resend replaces the
    turn sent again and the later ones, so the version before a turn is the first turn it replaced,
    and so on back to a turn that replaced nothing. A turn with one version is left out. One query,
    and none when no turn among `turns` was sent again."""
    wanted = [t.id for t in turns if t.origin in RESENT]
    if not wanted:
        return {}
    first_replaced: dict[str, tuple[int, str]] = {}  # a resent turn → (index, id) of the first turn it replaced
    rows = Turn.objects.filter(session_id=session_id, replaced_by__isnull=False)
    for turn_id, index, by in rows.values_list("id", "index", "replaced_by_id"):
        if by not in first_replaced or index < first_replaced[by][0]:
            first_replaced[by] = (index, turn_id)
    versions: dict[str, list[str]] = {}
    for turn_id in wanted:
        chain = [turn_id]
        while chain[-1] in first_replaced:
            chain.append(first_replaced[chain[-1]][1])
        if len(chain) > 1:
            versions[turn_id] = chain[::-1]
    return versions


@dataclass(frozen=True)
class TurnVersion:
    turns: list[Turn]  # the version's message and the later turns replaced with it, in order
    events_of: defaultdict[str, list[TurnEvent]]  # without what a finished turn's page leaves out
    versions: dict[str, list[str]]  # the versions of the turns among them that were sent again themselves
    count: int  # how many versions the message has


def turn_version(*, session: AgentSession, turn_id: str, number: int) -> TurnVersion | None:
    """Version `number` (from 1) of resent turn `turn_id` of the session: that earlier turn and the turns
    replaced together with it. None when the turn or the version does not exist; no turns for the
    newest version, which is the turn itself."""
    turn = session.turns.filter(pk=turn_id).only("id", "origin").first()
    chain = turn_versions(session_id=session.id, turns=[turn]).get(turn_id) if turn else None
    if not chain or not 1 <= number <= len(chain):
        return None
    if number == len(chain):
        return TurnVersion(turns=[], events_of=defaultdict(list), versions={}, count=len(chain))
    head = session.turns.get(pk=chain[number - 1])
    group = session.turns.filter(replaced_by_id=head.replaced_by_id, index__gte=head.index)
    turns = list(group.select_related("replaced_by").defer("trace", "state").order_by("index"))
    events_of: defaultdict[str, list[TurnEvent]] = defaultdict(list)
    heavy = Q(turn__status__in=Turn.FINAL_STATUSES, type__in=UNLOADED_WHEN_FINISHED)
    for event in TurnEvent.objects.filter(turn__in=turns).exclude(heavy).order_by("turn_id", "seq"):
        events_of[event.turn_id].append(event)
    versions = turn_versions(session_id=session.id, turns=turns)
    return TurnVersion(turns=turns, events_of=events_of, versions=versions, count=len(chain))


def tool_events_of_session(*, session: AgentSession) -> defaultdict[str, list[TurnEvent]]:
    """Each turn's tool.called and tool.result events (the export's tool calls)."""
    events_of: defaultdict[str, list[TurnEvent]] = defaultdict(list)
    for event in TurnEvent.objects.filter(turn__session=session, type__in=["tool.called", "tool.result"]):
        events_of[event.turn_id].append(event)
    return events_of


def app_calls_of_session(*, session: AgentSession) -> defaultdict[tuple[str, str], list[AppAction]]:
    """The tool calls the session's MCP Apps made, by the card that shows each app (turn, call id)."""
    calls: defaultdict[tuple[str, str], list[AppAction]] = defaultdict(list)
    for action in AppAction.objects.filter(session=session, kind=AppAction.Kind.TOOL_CALL).order_by("created_at"):
        calls[(action.turn_id, action.tool_call_id)].append(action)
    return calls


# --- the live stream's replay (agents/web/consumers.py) ------------------------------------------


async def turn_aget_by_id(*, turn_id: str) -> Turn:
    return await Turn.objects.aget(pk=turn_id)


def event_list_unseen(*, session_id: str, cursor: tuple[str, int] | None, limit: int) -> list[TurnEvent]:
    """At most `limit` events the client has not seen: after the cursor's (turn id, seq) in its turn,
    and all of later turns. A page that showed no turn (turn id "") gets every event of the session:
    its turns all started after the page was drawn, and one may have ended before the socket connected
    (a fast turn, a slow network), so it must be replayed even though it is finished. Without a cursor,
    only the events of the turns still open."""
    events = TurnEvent.objects.filter(turn__session_id=session_id).order_by("turn__index", "seq")
    if cursor is None:
        events = events.filter(turn__finished_at__isnull=True)
    elif cursor[0]:
        turn_id, seq = cursor
        index = Turn.objects.filter(pk=turn_id, session_id=session_id).values_list("index", flat=True).first()
        if index is not None:
            later = events.filter(turn__index__gt=index) | events.filter(turn_id=turn_id, seq__gt=seq)
            events = later.order_by("turn__index", "seq")
    return list(events[:limit])


def event_list_between(*, turn_id: str, after: int, before: int | None, limit: int) -> list[TurnEvent]:
    """At most `limit` events of the turn after `after` (and before `before`), in order."""
    events = TurnEvent.objects.filter(turn_id=turn_id, seq__gt=after).order_by("seq")
    if before is not None:
        events = events.filter(seq__lt=before)
    return list(events[:limit])


# --- the live renderers (agents/web/live.py, renders.py) -------------------------------------------


def turn_in_session_get(*, turn_id: str, session_id: str) -> Turn:
    return Turn.objects.get(pk=turn_id, session_id=session_id)


def turn_reread(*, turn: Turn) -> None:
    """The turn's columns as stored now (the run writes them behind the stream)."""
    turn.refresh_from_db()


def session_reread(*, session: AgentSession) -> None:
    """The session's columns as stored now (its mode, title, grants)."""
    session.refresh_from_db()


def event_list_until(*, turn: Turn, seq: int) -> list[TurnEvent]:
    """The turn's events up to `seq`, in order."""
    return list(turn.events.filter(seq__lte=seq).order_by("seq"))


def event_list_before(*, turn: Turn, seq: int) -> list[TurnEvent]:
    """The turn's events before `seq`, in order."""
    return list(turn.events.filter(seq__lt=seq).order_by("seq"))


def tool_call_of_turn(*, turn: Turn, call_id: str) -> dict[str, Any] | None:
    """The payload of the turn's `tool.called` event for call `call_id`."""
    for event in turn.events.filter(type="tool.called").order_by("seq"):
        if event.payload.get("id") == call_id:
            return event.payload
    return None


def turn_waits_for_decisions(*, turn: Turn) -> bool:
    """Whether the turn waits for approvals the user has yet to decide."""
    return turn.status == Turn.Status.AWAITING_APPROVAL and turn.approvals.filter(decision="").exists()


# --- the timeline's pages -----------------------------------------------------------------------

# Not loaded for a finished turn: what streamed (its answer has it) and each step's request (the trace).
UNLOADED_WHEN_FINISHED = ("model.delta", "step.started")


@dataclass(frozen=True)
class TimelineRows:
    turns: list[Turn]  # in order, each with the turn that replaced it; trace and state deferred
    events_of: defaultdict[str, list[TurnEvent]]  # a finished turn's without UNLOADED_WHEN_FINISHED
    changes: list[ModeHistory]  # the manual mode changes among the turns
    earlier: int | None  # the index of the first turn read when turns before it exist
    versions: dict[str, list[str]]  # turn_versions of the resent turns among them


def timeline_rows(
    *, session: AgentSession, size: int, before: int | None = None, since: int | None = None
) -> TimelineRows:
    """A page of the timeline's rows: the last `size` turns, or those before `before`, or all from
    `since`; the same few queries whatever the session's length. Turns an edit, retry or regenerate
    replaced are not rows of the timeline: they are earlier versions of the turn that replaced them."""
    current = session.turns.filter(replaced_by__isnull=True)
    turns_q = current if before is None else current.filter(index__lt=before)
    window: list[tuple[str, int, datetime]]
    if since is not None:
        window = list(turns_q.filter(index__gte=since).order_by("-index").values_list("id", "index", "created_at"))
    else:
        window = list(turns_q.order_by("-index").values_list("id", "index", "created_at")[:size])
    window.reverse()
    ids = [turn_id for turn_id, _, _ in window]
    first = window[0][1] if window else before
    earlier = first if first is not None and current.filter(index__lt=first).exists() else None
    # The events first, then the turns: a run writes a turn's final state and its final event in one
    # transaction, so read in this order a turn is never behind its events. (The other way round, a
    # turn ending between the two reads would show as running with its final event already behind
    # the stream cursor: running on screen for ever.) A turn ahead of its events is redrawn by the
    # stream when it replays the events after the cursor. A finished turn's deltas and step traces
    # are left out in the same statement that reads its status.
    events_of: defaultdict[str, list[TurnEvent]] = defaultdict(list)
    finished_heavy = Q(turn__status__in=Turn.FINAL_STATUSES, type__in=UNLOADED_WHEN_FINISHED)
    for event in TurnEvent.objects.filter(turn_id__in=ids).exclude(finished_heavy).order_by("turn_id", "seq"):
        events_of[event.turn_id].append(event)
    turns = list(
        Turn.objects.filter(pk__in=ids)
        .select_related("replaced_by", "feedback")
        .defer("trace", "state", "replaced_by__trace", "replaced_by__state")
        .order_by("index")
    )
    changes = session.mode_history.filter(turn__isnull=True).select_related("user")
    if earlier is not None and window:
        changes = changes.filter(created_at__gte=window[0][2])
    if before is not None:
        after = session.turns.filter(index__gte=before).order_by("index").values_list("created_at", flat=True).first()
        changes = changes.filter(created_at__lt=after) if after else changes
    versions = turn_versions(session_id=session.id, turns=turns)
    return TimelineRows(turns=turns, events_of=events_of, changes=list(changes), earlier=earlier, versions=versions)


def turn_summaries(*, turns: list[Turn], events_of: dict[str, list[TurnEvent]]) -> dict[str, tuple[int, int]]:
    """(last seq, unreported tokens) of each finished turn, from light queries: the turns' highest seq,
    their steps' seq and request size (no payload), and for a turn whose last step has no model reply
    (stopped mid-stream) the length of what streamed after it, summed by the database."""
    if not turns:
        return {}
    ids = [t.id for t in turns]
    last = dict(
        TurnEvent.objects.filter(turn_id__in=ids).values("turn_id").annotate(m=Max("seq")).values_list("turn_id", "m")
    )
    steps: dict[str, tuple[int, int]] = {}
    step_rows = (
        TurnEvent.objects.filter(turn_id__in=ids, type="step.started")
        .annotate(tokens=Cast(KT("payload__tokens"), IntegerField()))
        .values_list("turn_id", "seq", "tokens")
    )
    for turn_id, seq, tokens in step_rows:
        if seq > steps.get(turn_id, (0, 0))[0]:
            steps[turn_id] = (seq, tokens or 0)
    result = {}
    for turn in turns:
        result[turn.id] = (last.get(turn.id, 0), _unreported(turn.id, steps.get(turn.id), events_of[turn.id]))
    return result


def _unreported(turn_id: str, step: tuple[int, int] | None, events: list[TurnEvent]) -> int:
    """timeline.unreported_tokens without the delta rows: the last step's request size and the text
    streamed after it (or after its last retry), when no model reply came for that step."""
    if step is None:
        return 0
    seq, tokens = step
    after = [e for e in events if e.seq > seq]
    if any(e.type == "model.message" for e in after):
        return 0
    since = max([seq, *(e.seq for e in after if e.type == "model.retry")])
    chars = TurnEvent.objects.filter(turn_id=turn_id, type="model.delta", seq__gt=since).aggregate(
        n=Sum(Length(KT("payload__text")))
    )["n"]
    return tokens + (max(1, (chars + 3) // 4) if chars else 0)  # as llm.protocol.estimate_tokens counts


# --- modes --------------------------------------------------------------------------------------


def mode_get(*, key: str) -> AgentMode | None:
    """The catalog's mode with this key (active or not)."""
    return AgentMode.objects.filter(key=key).first()


def mode_display_name(*, key: str) -> str:
    """The mode's display name (its key when there is no such mode)."""
    return AgentMode.objects.filter(key=key).values_list("display_name", flat=True).first() or key


def mode_key_named(*, name: str) -> str:
    """The key of the active mode with this display name or key (case-insensitive), or ""."""
    mode = AgentMode.objects.filter(Q(display_name__iexact=name) | Q(key__iexact=name), is_active=True).first()
    return mode.key if mode else ""


def mode_proposed(*, key: str | None, name: str, team: Any = None) -> tuple[str, str] | None:
    """(key, display name) of the active catalog mode a proposal offers: by its key when the text
    gives one (the key is what consent is given to), else by the name; None when the catalog has no
    such active mode, or `team` (the session's) cannot use it. Under `catalog_drafts_applied` (a run
    over the catalog with its drafts applied), that catalog's active modes."""
    if catalog_drafts_applied.get():
        names = {key.strip().lower()} if key is not None else {name.strip().lower()}
        for found in active_modes(team=team):
            if found.key in names or (key is None and found.display_name.lower() in names):
                return found.key, found.display_name
        return None
    modes = AgentMode.objects.filter(is_active=True).filter(usable_by(team))
    if key is not None:
        mode = modes.filter(key__iexact=key.strip()).first()
    else:
        mode = modes.filter(Q(display_name__iexact=name) | Q(key__iexact=name)).first()
    return (mode.key, mode.display_name) if mode else None


def mode_model(*, key: str) -> str:
    """The model the mode names ("" when it names none, or there is no such mode)."""
    return AgentMode.objects.filter(key=key).values_list("model", flat=True).first() or ""


def mode_change_list(*, session: AgentSession) -> QuerySet[ModeHistory]:
    """Every mode change of the session, in the order they happened."""
    return session.mode_history.order_by("created_at", "id")


def mode_change_last_manual(*, session: AgentSession) -> ModeHistory | None:
    """The session's latest mode change made outside a turn (a switch by the user), with its user."""
    return session.mode_history.filter(turn__isnull=True).select_related("user").order_by("-created_at").first()
