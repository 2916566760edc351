"""What a run reads before it starts, in one trip to the database thread (earlier turns: context.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import Max, OuterRef

from files.project_files import session_project_files_named
from files.services import session_files_exist
from modes.drafts import catalog_draft_of
from modes.models import AgentMode
from modes.versioning import mode_with_snapshot
from modes.versions import UNPUBLISHED
from projects.models import Project
from projects.prompt import project_instructions_prompt
from projects.scopes import mode_knowledge_scope, searchable_projects

from ..attachments import project_files_note
from ..documents.services import documents_exist
from ..mcp_apps.services import app_context_note
from ..models import Turn


@dataclass
class LoadedRun:
    turn: Turn
    mode: AgentMode | None  # the turn's mode in the catalog (None if deleted since)
    last_seq: int  # the turn's last event so far (a continued turn carries on from it)
    has_files: bool = False  # whether the session has files (the files tools are offered only then)
    has_documents: bool = False  # whether the session has documents (the system prompt carries them then)
    mode_version: int | None = None  # the number of the mode's version the run uses (None: mode deleted)
    # the run uses a draft of its mode: its curator's "Try it" (AgentSession.mode_draft), or a session over
    # the catalog with its drafts applied (AgentSession.catalog_drafts) when the mode has one
    draft: bool = False
    project_instructions: str = ""  # the system prompt's section for the session's project: instructions, files
    # the projects whose documents the turn's knowledge search covers (projects/scopes.py); the
    # tools that search them are offered only when there is one
    knowledge_projects: list[str] = field(default_factory=list)


def run_mode(turn: Turn) -> tuple[AgentMode | None, int | None, bool]:
    """The catalog entry the turn runs with, its version's number, and whether that is a draft: the
    published entry, unless the session tries a draft of the turn's mode (its curator's "Try it"), or
    runs over the catalog with its drafts applied and the mode has a draft (modes/drafts.py): that
    draft's fields then stand in for the entry's."""
    mode = AgentMode.objects.filter(key=turn.mode).first()
    if mode is None:
        return None, None, False
    draft = turn.session.mode_draft
    if draft is not None and draft.mode_id == mode.pk and draft.state in UNPUBLISHED:
        return mode_with_snapshot(mode, draft.snapshot), draft.number, True
    if turn.session.catalog_drafts and (draft := catalog_draft_of(mode)) is not None:
        return mode_with_snapshot(mode, draft.snapshot), draft.number, True
    return mode, mode.version, False


@sync_to_async
def load_run(turn_id: str) -> LoadedRun:
    # One query for the turn, its session, and whether the session has files and documents.
    session = OuterRef("session_id")
    turn = (
        Turn.objects.select_related("session__team", "session__user", "session__mode_draft", "session__project")
        .annotate(has_files=session_files_exist(session), has_documents=documents_exist(session))
        .get(pk=turn_id)
    )
    last_seq = 0
    if turn.status != Turn.Status.QUEUED:  # a queued turn has no events yet
        last_seq = turn.events.aggregate(m=Max("seq"))["m"] or 0
    mode, version, draft = run_mode(turn)
    knowledge = searchable_projects(turn.session, mode_knowledge_scope(mode))
    return LoadedRun(
        turn=turn,
        mode=mode,
        mode_version=version,
        draft=draft,
        last_seq=last_seq,
        has_files=turn.has_files,
        has_documents=turn.has_documents,
        # what the conversation's MCP Apps gave the model to know (ui/update-model-context) follows it
        project_instructions="\n\n".join(
            p for p in (_project_section(turn, knowledge), app_context_note(turn.session)) if p
        ),
        knowledge_projects=knowledge,
    )


def _project_section(turn: Turn, knowledge: list[str]) -> str:
    """The system prompt's section for the session's project: its instructions, then its files (what
    each is and which tool reads it); '' outside a project."""
    project: Project | None = turn.session.project
    if project is None:
        return ""
    instructions = project_instructions_prompt(
        project.name, project.instructions, settings.APTIX_PROJECT_INSTRUCTIONS_CHARS
    )
    files = project_files_note(
        session_project_files_named(turn.session_id, turn.session.user_id), knowledge=project.pk in knowledge
    )
    return "\n\n".join(part for part in (instructions, files) if part)
