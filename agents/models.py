from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from aptix.ids import new_hex_id


class Execution(models.TextChoices):
    """How a turn runs (spec 004): never call this "mode"."""

    ASK = "ask", "Ask"
    AGENT = "agent", "Agent"


class AgentSession(models.Model):
    """A conversation of one user in one team. `mode` is authoritative and only written by
    `agents.sessions.SessionManager.set_session_mode` (TUL-009 §2)."""

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="sessions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_sessions")
    title = models.CharField(max_length=200, blank=True)
    mode = models.CharField(max_length=64)
    execution = models.CharField(max_length=8, choices=Execution.choices, default=Execution.ASK)
    # Per-session tool switches: {"image_gen": false, "sql__query": false}. A missing name means on.
    tool_toggles = models.JSONField(default=dict, blank=True)
    # Tools the user allowed "for this session" from an approval card: ["fs__write_file"]. Revocable
    # in the Tools panel; written only by agents/approvals.py.
    approval_grants = models.JSONField(default=list, blank=True)
    # What the MCP Apps in the conversation gave the model to know (ui/update-model-context), by app
    # card ("<turn id>:<tool call id>"): each replaces its card's last; sent with the next turn, then kept.
    app_context = models.JSONField(default=dict, blank=True)
    # The model the user picked for this session (a key of the models configuration); empty: the mode's.
    model = models.CharField(max_length=100, blank=True)
    parent = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children")
    # A curator's "Try it" of a draft (modes/versions.py): turns in that draft's mode run on its fields.
    mode_draft = models.ForeignKey(
        "modes.ModeVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="try_sessions"
    )
    # Shared with its team (agents/sharing.py): teammates read it, only its author writes. `copied_from`:
    # the shared session a reader's "Continue as my copy" made this one from.
    shared_at = models.DateTimeField(null=True, blank=True)
    shared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    copied_from = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="copies")
    # The owner's housekeeping (agents/sessions.py): pinned sessions head the sidebar, archived ones
    # leave it (still readable), deleted ones are gone for the user everywhere (page, stream, API,
    # images) but the row stays, so ModeHistory (PROTECT), ToolApproval and the turns keep their audit.
    pinned_at = models.DateTimeField(null=True, blank=True)
    # The project the session belongs to (at most one; projects/). Deleting the project moves its
    # sessions to "No project" (SET_NULL): a conversation is never lost with it.
    project = models.ForeignKey(
        "projects.Project", on_delete=models.SET_NULL, null=True, blank=True, related_name="sessions"
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # Where a session begun by a program came from, shown in the sidebar ("via MCP: VS Code", set by
    # the MCP server, interop/mcp_server); empty for the workspace's own and the JSON API's.
    origin = models.CharField(max_length=120, blank=True, default="")
    # A catalog test run's session (agents/catalog_tests): run like any other, listed for nobody
    # (session_list leaves it out, so no sidebar, search, page or API shows it), deleted after its case.
    catalog_test = models.BooleanField(default=False)
    # ...run over the catalog with its drafts applied (each mode's latest unpublished draft stands in
    # for its published entry, in the session's own mode and in the catalog the agent sees).
    catalog_drafts = models.BooleanField(default=False)
    catalog_run = models.ForeignKey(
        "agents.CatalogTestRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="sessions"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["user", "-updated_at"], name="session_user_recent")]
        constraints = [
            models.CheckConstraint(condition=~models.Q(mode=""), name="agentsession_mode_not_empty"),
            models.CheckConstraint(
                condition=models.Q(execution__in=["ask", "agent"]), name="agentsession_execution_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"Session {self.id[:8]}"

    # True when session_get(read=True) found it shared with a teammate, not theirs: a read-only view.
    read_only: bool = False

    # Whether a turn waits for approval, when known without a query: set by agents/web/fragments.py
    # when it redraws the parts that show it (session_list annotates `waiting_flag` instead).
    has_waiting_turn: bool | None = None

    @property
    def is_waiting(self) -> bool:
        """Whether a turn of this session waits for the user's approval."""
        known = self.has_waiting_turn if self.has_waiting_turn is not None else self.__dict__.get("waiting_flag")
        if known is not None:
            return bool(known)
        return self.turns.filter(status=Turn.Status.AWAITING_APPROVAL).exists()


class Turn(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        REQUIRES_ACTION = "requires_action", "Requires action"
        AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        LIMIT_REACHED = "limit_reached", "Limit reached"

    class Origin(models.TextChoices):
        MESSAGE = "message", "Message"
        EDIT = "edit", "Edited and resent"
        RETRY = "retry", "Retry"
        REGENERATE = "regenerate", "Regenerated"
        CONTINUED = "continued", "Continued after the switch"

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField()
    user_message = models.TextField(blank=True)
    # The MCP server whose app (agents/mcp_apps) sent the message as the user, who confirmed it; "" otherwise.
    sent_by_app = models.CharField(max_length=100, blank=True)
    mode = models.CharField(max_length=64, help_text="The session's mode when the turn started.")
    response_mode = models.CharField(max_length=64, blank=True, help_text="The session's mode when the turn ended.")
    execution = models.CharField(max_length=8, choices=Execution.choices, default=Execution.ASK)
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED, db_index=True)
    answer = models.TextField(blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    step_count = models.PositiveIntegerField(default=0)
    model_label = models.CharField(
        max_length=120, blank=True, help_text="Model that answered; 'offline' for the built-in one."
    )
    # The models.json key of the model that answered (its name without the file), and what the turn
    # cost at its price per million tokens, written when the turn ends; None: no price, cost unknown.
    # Each model call is also charged to the usage counters as it happens (usage/services.py).
    model_key = models.CharField(max_length=100, blank=True)
    cost = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # The user's structured answer to a mode proposal sent with this turn's message (an option
    # button, or the API's `choice`): {"mode": key, "branch": bool}. Consent to change to that mode
    # in this turn (TUL-007 §4.3); None when the message was typed.
    choice = models.JSONField(null=True, blank=True)
    # While `requires_action` or `awaiting_approval`: the conversation so far, the tool list and the
    # pending calls, so the turn continues exactly where it stopped (agents/state.py).
    state = models.JSONField(default=dict, blank=True)
    # What the model was sent, stored once per turn (agents/run/trace.py): the system prompt, the tool
    # schemas and the earlier turns the request carried (by reference, with a digest). Each step's
    # step.started event holds only the messages added since the step before.
    trace = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Written every APTIX_RUN_HEARTBEAT seconds while the turn runs: a running turn whose heartbeat
    # is older than a few intervals lost its process (a worker killed) and is ended as interrupted.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # With workers (REDIS_URL): the run's latest dispatch to the queue, the worker that claimed it
    # ("" until one did) and until when its claim holds (the heartbeat renews it). A worker claims a
    # run with one conditional UPDATE (agents/turns.py, turn_claim_run), so a duplicate delivery of
    # the same dispatch is a no-op.
    dispatch = models.CharField(max_length=32, blank=True, default="")
    worker = models.CharField(max_length=120, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    # With tracing on (aptix/tracing.py): the W3C traceparent of the request that first dispatched the
    # run, so each run of the turn (in whichever process) continues one trace (agents/run/spans.py). A
    # database default too: processes of the version before keep inserting turns while it migrates.
    traceparent = models.CharField(max_length=55, blank=True, default="", db_default="")
    # Edit and resend, retry, regenerate (agents/conversations.py): how this turn's message came to be
    # sent, and, on the turns it replaced, the turn that replaced them. Replaced turns stay (audit, the
    # admin, the page shows them as earlier versions) but are no longer part of the conversation the model sees.
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.MESSAGE)
    # The files the message carried (agents/attachments.py AttachedFile): each as it was when sent, so
    # the turn reads the same (page, export) after a file is deleted.
    files = models.JSONField(default=list, blank=True)
    # The MCP resources attached to the message (agents/attachments.py AttachedResource: server, uri,
    # name, type); the run reads them (agents/run/attached.py) and the model gets their content.
    resources = models.JSONField(default=list, blank=True)
    replaced_by = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="replaces")
    # Tools this turn calls without asking, granted by what started it (an automation's pre-approved
    # tools: automations/runs.py), on top of the session's grants; written when the turn is created.
    grants = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["session", "index"]
        constraints = [
            models.UniqueConstraint(fields=["session", "index"], name="turn_unique_session_index"),
        ]

    FINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "limit_reached"})
    PAUSED_STATUSES = frozenset({"requires_action", "awaiting_approval"})  # no run holds the turn

    def __str__(self) -> str:
        return f"Turn {self.index} of {self.session_id}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINAL_STATUSES

    @property
    def is_paused(self) -> bool:
        return self.status in self.PAUSED_STATUSES


class TurnEvent(models.Model):
    """One persisted, streamed record of what happened in a turn; `seq` is 1, 2, 3… per turn."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32)
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["turn", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "seq"], name="turnevent_unique_turn_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.seq}. {self.type}"


class ToolApproval(models.Model):
    """One tool call that waited for the user's consent, and what they decided: the audit record of
    agents/approvals.py (a mode change by the model, or a tool the approval policy says to ask for)."""

    class Kind(models.TextChoices):
        MODE_CHANGE = "mode_change", "Mode change"
        TOOL = "tool", "Tool"
        CONNECT = "connect", "Connect"  # the user must connect the server (their credentials) first
        ELICITATION = "elicitation", "MCP server question"

    class Decision(models.TextChoices):
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        ACCEPTED = "accepted", "Answered"  # an elicitation
        DECLINED = "declined", "Declined"  # an elicitation
        DECLINED_BY_NEW_MESSAGE = "declined_by_new_message", "Declined by a new message"
        CANCELLED = "cancelled", "Cancelled"
        EXPIRED = "expired", "Expired"  # nobody answered within an automation's approval timeout

    class Scope(models.TextChoices):
        ONCE = "once", "Once"
        SESSION = "session", "For this session"
        POLICY = "policy", "By policy"

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="approvals")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="approvals")
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="+")
    tool_call_id = models.CharField(max_length=128)
    tool = models.CharField(max_length=200)
    server = models.CharField(max_length=100, blank=True, help_text="The MCP server; empty for an internal tool.")
    arguments = models.TextField(blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    reason = models.TextField(blank=True, help_text="The model's reason, for a mode change.")
    requested_at = models.DateTimeField(auto_now_add=True)
    decision = models.CharField(max_length=32, choices=Decision.choices, blank=True, db_index=True)
    scope = models.CharField(max_length=16, choices=Scope.choices, blank=True)
    branch = models.BooleanField(null=True, blank=True, help_text="A mode change: the user's choice of a new session.")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # An elicitation: what the MCP server asked ({"mode", "message", "schema" | "url"}) and what the
    # user answered (accepted form content; None otherwise).
    request = models.JSONField(default=dict, blank=True)
    content = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "tool_call_id"], name="toolapproval_unique_turn_call"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} ({self.get_decision_display() or 'pending'})"

    @property
    def is_pending(self) -> bool:
        return not self.decision


class ShareEvent(models.Model):
    """Who shared a session with its team, stopped sharing it, or continued it as their own copy, and
    when (agents/sharing.py writes it; auditors read it in the admin)."""

    class Action(models.TextChoices):
        SHARE = "share", "Shared with the team"
        UNSHARE = "unshare", "Stopped sharing"
        COPY = "copy", "Continued as a copy"

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="share_events")
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=8, choices=Action.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    copy = models.ForeignKey(AgentSession, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.get_action_display()}: {self.session_id}"


class Document(models.Model):
    """A draft the agent (document_write) or the user keeps beside a session: a DDR, a workflow. Its
    text lives in its versions; this row names the current one. Purged with its session
    (agents/sessions.py session_delete), the only writer being agents/documents/services.py."""

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=200)
    version = models.PositiveIntegerField(default=0)  # the current version's number (1, 2, …)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["session", "-updated_at"], name="document_session_recent")]

    def __str__(self) -> str:
        return f"{self.title} v{self.version}"


class DocumentVersion(models.Model):
    """One version of a document, never changed once written (save refuses an update): who made it
    (the agent in a turn, or the user), when, and what it said."""

    class Author(models.TextChoices):
        AGENT = "agent", "Agent"
        USER = "user", "User"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    content = models.TextField()
    summary = models.CharField(max_length=500, blank=True)
    author = models.CharField(max_length=8, choices=Author.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document", "number"]
        constraints = [
            models.UniqueConstraint(fields=["document", "number"], name="documentversion_unique_number"),
            models.CheckConstraint(
                condition=models.Q(author__in=["agent", "user"]), name="documentversion_author_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.title} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("A document version is immutable: write a new version instead.")
        super().save(*args, **kwargs)


class SavedPrompt(models.Model):
    """A prompt of the library (agents/prompts/): a title and a text with `{{variables}}`, its
    author's own, or shared with a team (`team` set), whose owners and the administrators curate it.
    Written only by agents/prompts/services.py; `use_count` counts its insertions from the composer's
    `/` menu and the API."""

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_prompts")
    team = models.ForeignKey(
        "aptix.Team", on_delete=models.CASCADE, null=True, blank=True, related_name="shared_prompts"
    )
    title = models.CharField(max_length=200)
    text = models.TextField()
    use_count = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title", "created_at"]
        indexes = [
            models.Index(fields=["user", "team"], name="savedprompt_user_team"),
            models.Index(fields=["team"], name="savedprompt_team"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def shared(self) -> bool:
        return self.team_id is not None


class ShareLink(models.Model):
    """A read-only link to a session (agents/sharing/links.py, the only writer): for the signed-in
    members of the session's team, or public (no sign-in, only while APTIX_PUBLIC_LINKS is on). Only
    the SHA-256 of its secret is stored; the secret is shown to its author once. It stops working when
    it expires, is revoked or its session is deleted."""

    class Kind(models.TextChoices):
        TEAM = "team", "Team"
        PUBLIC = "public", "Public"

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="share_links")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.TEAM)
    token_hash = models.CharField(max_length=64, unique=True)
    include_tools = models.BooleanField(default=False)  # tool calls and their results (public links)
    include_files = models.BooleanField(default=False)  # the files the messages carried (public links)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    opened_count = models.PositiveIntegerField(default=0)
    last_opened_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} link to {self.session_id}"


class AnswerFeedback(models.Model):
    """A user's rating of a turn's answer (agents/feedback/services.py is its only writer): one per
    turn, by the session's owner, changed as often as they like while the turn is the session's latest.
    It keeps what the turn ran with — its mode, that mode's version, the model, the tools it called —
    copied when rated, so the curators' report (agents/feedback/admin.py) reads this one table and
    says the same after the catalog or the models change."""

    class Rating(models.TextChoices):
        UP = "up", "Good answer"
        DOWN = "down", "Bad answer"

    class Reason(models.TextChoices):
        WRONG = "wrong", "Wrong"
        UNSAFE = "unsafe", "Unsafe"
        NOT_HELPFUL = "not_helpful", "Not helpful"
        OTHER = "other", "Other"

    COMMENT_MAX_CHARS = 2000

    turn = models.OneToOneField(Turn, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    rating = models.CharField(max_length=4, choices=Rating.choices)
    reason = models.CharField(max_length=16, choices=Reason.choices, blank=True)
    comment = models.TextField(max_length=COMMENT_MAX_CHARS, blank=True)
    mode = models.CharField(max_length=64, help_text="The session's mode when the turn started.")
    # A fingerprint of the mode's catalog entry as the turn ran with it (modes/fingerprint.py), until
    # the catalog has numbered versions; "" for a turn recorded before turns stored it.
    mode_version = models.CharField(max_length=64, blank=True)
    model_label = models.CharField(max_length=120, blank=True)
    tools = models.JSONField(default=list, blank=True, help_text="The tools the turn called, in order, once each.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-updated_at"]
        verbose_name = "answer feedback"
        verbose_name_plural = "answer feedback"
        indexes = [models.Index(fields=["mode", "mode_version"], name="feedback_mode_version")]
        permissions = [("export_answerfeedback", "Can export answer feedback as CSV")]

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on {self.turn_id}"


class CatalogTestRun(models.Model):
    """A curator's run of the catalog's tests (agents/catalog_tests): routing cases, checks, or both,
    over the published catalog, over it with the drafts applied, or both (`compare`). Runs in the
    background in the process that started it, each case a real turn on the deployment's runner;
    `done`/`total` are its progress, `results` what it found (kept, with the catalog's versions it ran
    over, until someone deletes the run). Written only by agents/catalog_tests/runs.py and execute.py."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        STOPPED = "stopped", "Stopped"

    class Catalog(models.TextChoices):
        PUBLISHED = "published", "Published catalog"
        DRAFTS = "drafts", "With the drafts applied"
        COMPARE = "compare", "Compare: published and with the drafts"

    class Kind(models.TextChoices):
        ROUTING = "routing", "Routing"
        CHECKS = "checks", "Checks"
        BOTH = "both", "Routing and checks"

    FINISHED = (Status.DONE, Status.FAILED, Status.STOPPED)

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="+")
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    catalog = models.CharField(max_length=12, choices=Catalog.choices, default=Catalog.PUBLISHED)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.ROUTING)
    model = models.CharField(
        max_length=100, blank=True, help_text="A key of the models configuration; empty: the modes' own."
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED, db_index=True)
    stop_requested = models.BooleanField(default=False)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    accuracy = models.FloatField(null=True, blank=True)  # the routing accuracy (with drafts, when compared)
    checks_failed = models.PositiveIntegerField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    # {"published": {mode key: version number}, "drafts": {mode key: draft version number}}: what ran.
    versions = models.JSONField(default=dict, blank=True)
    # {"routing": {...}, "checks": {...}} per catalog run ("published", "drafts"), and "changed" when compared.
    results = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "catalog test run"

    def __str__(self) -> str:
        return f"{self.get_kind_display()} over the {self.catalog} catalog ({self.created_at:%Y-%m-%d %H:%M})"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED


class AppAction(models.Model):
    """What an MCP App shown in a conversation did (agents/mcp_apps/services.py is its only writer): a
    tool it called (through the same approval policy as the model's calls), a message it sent as the
    user, the context it gave the model. The audit of apps; the card lists its calls."""

    class Kind(models.TextChoices):
        TOOL_CALL = "tool_call", "Tool call"
        MESSAGE = "message", "Message"
        CONTEXT = "context", "Context for the model"

    class Decision(models.TextChoices):
        AUTO = "auto", "Ran (the policy allows it)"
        APPROVED = "approved", "Approved by the user"
        DENIED = "denied", "Denied by the user"
        REFUSED = "refused", "Refused"
        SENT = "sent", "Sent by the user"

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="app_actions")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="app_actions")
    team = models.ForeignKey("aptix.Team", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    tool_call_id = models.CharField(max_length=128, help_text="The model's call whose card shows the app.")
    server = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    tool = models.CharField(max_length=200, blank=True, help_text="A tool call: the server's name for the tool.")
    arguments = models.JSONField(default=dict, blank=True)
    decision = models.CharField(max_length=16, choices=Decision.choices)
    ok = models.BooleanField(null=True, blank=True, help_text="A tool call that ran: whether it succeeded.")
    detail = models.TextField(blank=True, help_text="The result's start, the message, the link or why it was refused.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["turn", "tool_call_id"], name="appaction_card")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} by the app of {self.server}"
