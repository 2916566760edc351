from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse

from aptix.tracing import trace_id_of
from modes.admin import AgentModeAdmin, csv_download
from modes.models import AgentMode
from tools.mcp import McpConfigError, load_config
from tools.registry import internal_registry, mcp_registry

from .catalog_tests import admin as catalog_tests_admin  # noqa: F401  (registers the catalog tests' pages)
from .catalog_tests.runs import last_comparison, may_test
from .feedback import admin as feedback_admin  # noqa: F401  (registers the feedback page)
from .feedback.selectors import feedback_exists
from .llm.catalog import model_for, models_config
from .models import AgentSession, AppAction, SavedPrompt, ShareEvent, ToolApproval, Turn, TurnEvent
from .run.health import config_problems
from .run.pipeline import MCP_SEPARATOR, mcp_server_order, plan_offer, policy_allows, schema_tokens
from .run.trace import turn_trace
from .sessions import session_try_draft


class ReadOnlyAdminMixin:
    """Sessions, turns and events are written by the pipeline, never edited by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class TurnInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Turn
    extra = 0
    show_change_link = True
    can_delete = False
    fields = readonly_fields = (
        "index",
        "status",
        "origin",
        "replaced_by",
        "execution",
        "mode",
        "response_mode",
        "user_message",
        "created_at",
    )


class TurnEventInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = TurnEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ("seq", "type", "payload", "created_at")


class SessionStateFilter(admin.SimpleListFilter):
    """Where the owner keeps a session: in the list (pinned or not), archived, or deleted (a soft
    delete: the row, its turns and ModeHistory stay for the audit)."""

    title = "state"
    parameter_name = "state"
    STATES = {
        "active": ("Active (in the owner's list)", {"archived_at__isnull": True, "deleted_at__isnull": True}),
        "pinned": ("Pinned", {"pinned_at__isnull": False, "deleted_at__isnull": True}),
        "archived": ("Archived", {"archived_at__isnull": False, "deleted_at__isnull": True}),
        "deleted": ("Deleted by the owner", {"deleted_at__isnull": False}),
    }

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _) in self.STATES.items()]

    def queryset(self, request, queryset):
        state = self.STATES.get(self.value() or "")
        return queryset.filter(**state[1]) if state else queryset


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["__str__", "team", "user", "mode", "execution", "state", "updated_at"]
    list_filter = [SessionStateFilter, "team", "mode", "execution"]
    search_fields = ["id", "title", "user__username"]
    list_select_related = ["team", "user"]
    inlines = [TurnInline]

    @admin.display(description="state")
    def state(self, obj: AgentSession) -> str:
        if obj.deleted_at:
            return f"deleted {obj.deleted_at:%Y-%m-%d %H:%M}"
        labels = [label for label, at in (("pinned", obj.pinned_at), ("archived", obj.archived_at)) if at]
        return ", ".join(labels) or "active"


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Newest first, each named by its session and what the user asked."""

    list_display = [
        "title",
        "status",
        "origin",
        "execution",
        "mode",
        "response_mode",
        "step_count",
        "created_at",
        "trace_id",
    ]
    list_filter = ["status", "origin", "execution", "mode"]
    # A trace id pasted from a tracing UI or a log line finds its turn (it is inside the traceparent).
    search_fields = ["id", "session__id", "session__title", "user_message", "traceparent"]
    list_select_related = ["session"]
    ordering = ["-created_at"]
    date_hierarchy = "created_at"
    inlines = [TurnEventInline]
    exclude = ["trace", "traceparent"]  # shown as `request_trace` (each step's request) and `trace_id`
    readonly_fields = ["trace_id", "request_trace"]

    class Media:
        css = {"all": ["css/admin.css"]}  # the trace's classes: the CSP refuses inline style attributes

    def has_view_permission(self, request, obj=None):
        """Auditors (view_turn) read every turn; curators, who see the feedback on answers, read the
        turns that were rated, one at a time (the feedback page links each comment to its turn)."""
        if super().has_view_permission(request, obj):
            return True
        rated = obj is not None and feedback_exists(turn_id=obj.pk)
        return rated and request.user.has_perm("agents.view_answerfeedback")

    @admin.display(description="what the model was sent")
    def request_trace(self, obj: Turn) -> str:
        """Each step's request as sent (agents/run/trace.py: Turn.trace plus what each step added)."""
        trace = turn_trace(obj)
        steps = [
            {"step": s, "json": json.dumps(s.messages, indent=2, ensure_ascii=False), "tool_names": _names(s.tools)}
            for s in trace.steps
        ]
        tools = json.dumps(trace.tools, indent=2, ensure_ascii=False)
        return render_to_string("admin/agents/turn_trace.html", {"trace": trace, "steps": steps, "tools": tools})

    @admin.display(description="trace id")
    def trace_id(self, obj: Turn) -> str:
        """The turn's OpenTelemetry trace (agents/run/spans.py); empty when tracing was off."""
        return trace_id_of(obj.traceparent)

    @admin.display(description="turn", ordering="created_at")
    def title(self, obj: Turn) -> str:
        message = " ".join(obj.user_message.split())
        message = message if len(message) <= TITLE_MESSAGE_CHARS else message[: TITLE_MESSAGE_CHARS - 1] + "…"
        return f"{obj.session} · #{obj.index}: {message}"


TITLE_MESSAGE_CHARS = 80


def _names(schemas: list[dict]) -> str:
    return ", ".join(s.get("function", {}).get("name", "?") for s in schemas)


@admin.register(TurnEvent)
class TurnEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["turn", "seq", "type", "created_at"]
    list_filter = ["type"]
    search_fields = ["turn__id"]
    list_select_related = ["turn"]


class ApprovalDecisionFilter(admin.SimpleListFilter):
    """The decision, with "Pending" for the calls nobody decided yet (an empty decision)."""

    title = "decision"
    parameter_name = "decision"
    PENDING = "pending"

    def lookups(self, request, model_admin):
        return [(self.PENDING, "Pending"), *ToolApproval.Decision.choices]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(decision="" if value == self.PENDING else value)


APPROVAL_CSV_COLUMNS = [
    "id",
    "requested_at",
    "session_id",
    "turn_id",
    "team",
    "tool_call_id",
    "tool",
    "server",
    "kind",
    "arguments",
    "annotations",
    "reason",
    "decision",
    "scope",
    "branch",
    "decided_by",
    "decided_at",
]


def _iso(value) -> str:
    return value.isoformat() if value else ""


@admin.register(AppAction)
class AppActionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """What MCP Apps did in conversations (agents/mcp_apps/services.py writes it): read-only for everyone."""

    list_display = ["created_at", "session", "server", "kind", "tool", "decision", "ok", "user"]
    list_filter = ["kind", "decision", "server", "team"]
    date_hierarchy = "created_at"
    search_fields = ["tool", "tool_call_id", "session__id", "user__username"]
    list_select_related = ["session", "user"]


@admin.register(ToolApproval)
class ToolApprovalAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The consent audit trail (DESIGN.md "Consent and approvals"): read-only for everyone,
    superusers included; rows are written by agents/approvals.py only. Auditors export it as CSV."""

    list_display = [
        "requested_at",
        "session",
        "turn",
        "tool",
        "server",
        "kind",
        "decision",
        "scope",
        "decided_by",
        "decided_at",
    ]
    list_filter = ["kind", ApprovalDecisionFilter, "scope", "team", "tool"]
    date_hierarchy = "requested_at"
    search_fields = ["tool", "tool_call_id", "session__id", "decided_by__username"]
    list_select_related = ["session", "turn", "decided_by"]
    actions = ["export_csv"]

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Export selected as CSV", permissions=["view"])
    def export_csv(self, request, queryset):
        rows = queryset.select_related("team", "decided_by").order_by("requested_at", "id")
        return csv_download("tool-approvals", APPROVAL_CSV_COLUMNS, (_approval_cells(row) for row in rows.iterator()))


@admin.register(ShareEvent)
class ShareEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Who shared a session with its team, stopped sharing it or continued it as their copy, and when:
    read-only for everyone (agents/sharing/services.py writes it); Auditors may view it."""

    list_display = ["at", "action", "actor", "session", "team", "copy"]
    list_filter = ["action", "team"]
    date_hierarchy = "at"
    search_fields = ["session__id", "actor__username", "copy__id"]
    list_select_related = ["actor", "session", "team", "copy"]

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(SavedPrompt)
class SavedPromptAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """The prompt library (agents/prompts/): every user's own prompts and the teams' shared ones, with
    their use counts. Read-only here (their authors and the teams' curators edit them under Settings →
    Prompts, through the services that check the variables and who may share); an administrator may
    delete one, say one shared by mistake."""

    list_display = ["title", "user", "team", "use_count", "last_used_at", "updated_at"]
    list_filter = ["team"]
    search_fields = ["title", "text", "user__username"]
    list_select_related = ["user", "team"]
    date_hierarchy = "created_at"


def _approval_cells(row: ToolApproval) -> list:
    return [
        row.id,
        _iso(row.requested_at),
        row.session_id,
        row.turn_id,
        row.team.name,
        row.tool_call_id,
        row.tool,
        row.server,
        row.kind,
        row.arguments,
        json.dumps(row.annotations, sort_keys=True) if row.annotations else "",
        row.reason,
        row.decision,
        row.scope,
        "" if row.branch is None else ("true" if row.branch else "false"),
        row.decided_by.username if row.decided_by else "",
        _iso(row.decided_at),
    ]


class AgentModeBudgetAdmin(AgentModeAdmin):
    """The catalog admin (modes/admin.py) plus a warning when a mode's tool policy allows more tools
    than one request carries (APTIX_MAX_TOOLS), and a draft's "Try it" session. It lives here because
    only this layer knows the tools a policy reaches and the sessions; modes imports neither."""

    def draft_tests(self, mode, version):
        return last_comparison(mode_key=mode.key, number=version.number)

    def can_test(self, request):
        return may_test(request.user)

    def try_draft(self, request, version):
        try:
            session = session_try_draft(user=request.user, version=version)
        except ValidationError as exc:
            self.message_user(request, " ".join(exc.messages), messages.ERROR)
            return redirect("admin:modes_agentmode_change", version.mode_id)
        return redirect("session-detail", session_id=session.id)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        self._warn_about_model(request, obj)
        self._warn_about_policy(request, obj)
        allowed = [name for name, _ in internal_registry() if policy_allows(obj.tool_policy, name)]
        allowed += [name for name, _ in mcp_registry if policy_allows(obj.tool_policy, name)]
        budget = settings.APTIX_MAX_TOOLS
        tools = {name: internal_registry().get(name) or mcp_registry.get(name) for name in allowed}
        tokens = {name: schema_tokens([tool.get_schema()]) for name, tool in tools.items() if tool is not None}
        context = model_for(mode_model=obj.model).context_tokens
        _, on_demand, left_out = plan_offer(
            tokens, obj.tool_policy, mcp_server_order(), max_tools=budget, context_tokens=context
        )
        if on_demand or left_out:
            named = on_demand or left_out
            shown = ", ".join(named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
            share = f"{settings.APTIX_TOOL_SCHEMA_SHARE:.0%}"
            self.message_user(
                request,
                f"The {obj.display_name} mode's tool policy allows {len(allowed)} tools; a request carries at "
                f"most {budget} (APTIX_MAX_TOOLS) and {share} of the context in tool schemas "
                f"(APTIX_TOOL_SCHEMA_SHARE), so {len(on_demand)} are on demand in Agent turns, found by the model "
                f"with tool_search: {shown}."
                + (f" {len(left_out)} internal tools never fit: {', '.join(left_out[:10])}." if left_out else "")
                + " Whole MCP servers are offered in mcp.json order while they fit; name the tools that matter one "
                "by one (they go first), or narrow the policy.",
                level=messages.WARNING,
            )

    def _warn_about_policy(self, request, obj) -> None:
        """Entries that name no tool this deployment knows offer nothing: say so, with what is known."""
        patterns = [*obj.tool_policy, *(entry.rpartition(":")[0].strip() for entry in obj.approval_policy)]
        servers = known_mcp_tools()
        unknown = [p for p in dict.fromkeys(patterns) if not policy_entry_known(p, servers)]
        if not unknown:
            return
        internal = ", ".join(sorted(name for name, _ in internal_registry()))
        mcp = "; ".join(
            f"{server}.* ({', '.join(sorted(tools))})" if tools else f"{server}.* (not running: its tools are unknown)"
            for server, tools in sorted(servers.items())
        )
        self.message_user(
            request,
            f"The {obj.display_name} mode's policy names tools this deployment does not know: "
            f"{', '.join(unknown)}. Such an entry matches nothing. Known internal tools: {internal}. "
            f"MCP servers: {mcp or 'none configured'}.",
            level=messages.WARNING,
        )

    def _warn_about_model(self, request, obj) -> None:
        config = models_config()
        if obj.model and config.get(obj.model) is None:
            self.message_user(
                request,
                f'The model "{obj.model}" is not in this deployment\'s models configuration '
                f"({', '.join(config.models)}); the {obj.display_name} mode's turns use the default model "
                f"({config.default}) until it is.",
                level=messages.WARNING,
            )


def known_mcp_tools() -> dict[str, set[str]]:
    """MCP server name → the tools it serves here (empty while the server is not running): the
    servers of the MCP config and those with registered tools."""
    servers: dict[str, set[str]] = {}
    try:
        for name in load_config(settings.APTIX_MCP_CONFIG).names:
            servers[name] = set()
    except McpConfigError:
        pass  # Admin → MCP servers says what is wrong with the file
    for name, _ in mcp_registry:
        server, _, tool = name.partition(MCP_SEPARATOR)
        servers.setdefault(server, set()).add(tool)
    return servers


def policy_entry_known(pattern: str, servers: dict[str, set[str]]) -> bool:
    """'*', an internal tool, '<server>.*' of a configured server, or '<server>.<tool>' of one (the
    tool checked when the server runs here)."""
    if pattern == "*" or pattern in internal_registry():
        return True
    server, dot, tool = pattern.partition(".")
    if not dot or server not in servers:
        return False
    return tool == "*" or not servers[server] or tool in servers[server]


admin.site.unregister(AgentMode)
admin.site.register(AgentMode, AgentModeBudgetAdmin)


_index = admin.site.index


def _index_with_config_problems(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
    """The admin's front page names what is wrong with models.json and mcp.json now, as /readyz does
    (templates/admin/aptix_index.html)."""
    return _index(request, {**(extra_context or {}), "config_problems": config_problems()[0]})


admin.site.index = _index_with_config_problems  # type: ignore[method-assign]  # before the admin's URLs are built
