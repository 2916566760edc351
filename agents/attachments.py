"""Files and MCP resources attached to a turn's message.

A message carries the ids of files its sender uploaded (the composer's chips, the API's `files`). On
the message's turn they are attached to its session (files/services.py `files_attach`: a file of
another user, or already in another session, is refused as not found) and kept on the turn as
`Turn.files`: one `AttachedFile` per file, what the page shows of it (name, size, kind, a table's first
rows, a document's pages) as it was when sent, so the turn reads the same after the file is deleted
(the export lists them too). The model is told of them with the message (`user_message`).

A message may also carry MCP resources (the Tools panel's Attach, the API's `resources`): each a
`{"server", "uri"}` that server lists (a URI of its, or one its URI template fits; anything else is
refused, as for the model's `mcp_read_resource`), kept on the turn as `Turn.resources`. The run reads
them when the turn starts and the model gets their content with the message (agents/run/attached.py);
later turns name them only (`resources_note`)."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from django.core.exceptions import ValidationError

from files.models import SessionFile
from files.services import file_describe, files_attach

from .llm.images import FILES_NOTE, RESOURCES_NOTE
from .models import AgentSession

MAX_FILES_PER_MESSAGE = 20
NOTE_COLUMNS = 12  # a table's columns named in the note on a message's files
MAX_RESOURCES_PER_MESSAGE = 10
ERROR_BAD_RESOURCES = "'resources' must be a list of {\"server\", \"uri\"}."
ERROR_TOO_MANY_RESOURCES = f"A message carries at most {MAX_RESOURCES_PER_MESSAGE} resources."
ERROR_NO_RESOURCE = 'No MCP server "{server}" here offers the resource {uri}.'
ERROR_NO_FILE = "No file with this id: {file_id}."
ERROR_BAD_FILES = "'files' must be a list of file ids."
ERROR_TOO_MANY_FILES = f"A message carries at most {MAX_FILES_PER_MESSAGE} files."
# Code of the ValidationError raised for a file that is not the sender's: a 404 (API and page).
CODE_NO_FILE = "file_not_found"


class FilePreview(TypedDict):
    columns: list[str]
    rows: list[list[Any]]


class AttachedFile(TypedDict):
    """One file of a turn's message (`Turn.files`), as it was when sent."""

    fileId: str
    name: str
    kind: str  # "table", "document" or "image"
    size: int
    tables: list[dict[str, Any]]  # per table: name, columns (name, type), rows
    pages: int | None
    pageUnit: NotRequired[str]  # "page" (a PDF) or "section" (other documents); older turns: pages
    preview: NotRequired[FilePreview | None]  # a table's first rows and columns
    image: NotRequired[dict[str, str]]  # an image's storage name and type, for a vision model: {"path", "mime"}


def clean_file_ids(value: Any) -> list[str]:
    """The ids a message names, in order and each once; ValidationError (`files`) if not a list of them."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValidationError({"files": ValidationError(ERROR_BAD_FILES, code="invalid")})
    ids = list(dict.fromkeys(value))
    if len(ids) > MAX_FILES_PER_MESSAGE:
        raise ValidationError({"files": ValidationError(ERROR_TOO_MANY_FILES, code="invalid")})
    return ids


def files_for_turn(*, session: AgentSession, file_ids: list[str]) -> list[AttachedFile]:
    """Attach the files to `session` (inside the caller's transaction) and describe them for the turn.
    A file that is not the session owner's, or belongs to another session, is a ValidationError
    naming `files` with code CODE_NO_FILE."""
    if not file_ids:
        return []
    try:
        attached = files_attach(session.user, file_ids, session)
    except SessionFile.DoesNotExist as exc:
        missing = str(exc.args[0]) if exc.args and isinstance(exc.args[0], str) else ", ".join(file_ids)
        raise ValidationError(
            {"files": ValidationError(ERROR_NO_FILE.format(file_id=missing), code=CODE_NO_FILE)}
        ) from None
    return [attached_file(f) for f in attached]


def attached_file(stored: SessionFile) -> AttachedFile:
    described = file_describe(stored)
    entry: AttachedFile = {
        "fileId": described["fileId"],
        "name": described["name"],
        "kind": described["kind"],
        "size": described["size"],
        "tables": described.get("tables") or [],
        "pages": described.get("pages"),
    }
    if described.get("pageUnit"):
        entry["pageUnit"] = described["pageUnit"]
    preview = stored.preview or {}
    if entry["kind"] == "table" and preview.get("columns"):  # files/ingest: the first rows and columns
        entry["preview"] = {"columns": list(preview["columns"]), "rows": list(preview.get("rows") or [])}
    if entry["kind"] == "image":
        entry["image"] = {"path": stored.storage_name, "mime": f"image/{stored.format}"}
    return entry


def counted(number: int, unit: str) -> str:
    """ "1 section", "4 pages"."""
    return f"{number} {unit}{'' if number == 1 else 's'}"


def files_note(files: list[AttachedFile], *, vision: bool, earlier: bool = False) -> str:
    """What the model is told of a message's files, after the message: each file, where its content is
    (a table to query, a document to read) and, for an image, whether it sees it (a vision model gets
    the current message's images with it: `user_message`; an earlier message's are not sent again)."""
    if not files:
        return ""
    lines = []
    for f in files:
        named = f"- {f['name']} (file id {f['fileId']}):"
        if f["kind"] == "table":
            tables = "; ".join(_table_note(t) for t in f.get("tables") or [])
            lines.append(f"{named} {tables or 'a table'}; query it with files_query.")
        elif f["kind"] == "document":
            parts = f["pages"]
            pages = f" ({counted(parts, f.get('pageUnit') or 'page')})" if parts else ""
            lines.append(f"{named} a document{pages}; read it with files_read.")
        elif earlier:
            lines.append(f"{named} an image sent with this message (not shown again).")
        elif vision:
            lines.append(f"{named} an image, attached below.")
        else:
            lines.append(f"{named} an image. This model cannot see images: say so if the user asks about it.")
    return FILES_NOTE + "\n".join(lines)


def _table_note(table: dict[str, Any]) -> str:
    """ "table `sales` (16 rows; columns region VARCHAR, revenue BIGINT)": the columns spare a small
    model a files_list call and a guessed column name; a wide table's rest is left to files_list."""
    columns = table.get("columns") or []
    shown = ", ".join(f"{c['name']} {c['type']}" for c in columns[:NOTE_COLUMNS])
    more = f" and {len(columns) - NOTE_COLUMNS} more (files_list)" if len(columns) > NOTE_COLUMNS else ""
    described = f"; columns {shown}{more}" if columns else ""
    rows = table.get("rows", "?")
    return f"table `{table['name']}` ({rows} row{'' if rows == 1 else 's'}{described})"


PROJECT_FILES_HEADING = "# Project files"
PROJECT_FILES_INTRO = "The session's project shares these files with all its sessions:"
PROJECT_FILES_SHOWN = 20  # files named in the system prompt; files_list lists them all


def project_files_note(files: list[SessionFile], *, knowledge: bool) -> str:
    """The system prompt's section on the session's project's files (`files`: each table under the name
    files_query takes in this session): what each is and which tool reads it — a small model that is
    not told guessed a table name ("invoices") or told the user to search the documents itself (seen
    with Qwen2.5-Coder 1.5B). Documents point at knowledge_search when the turn searches the project
    (`knowledge`), else at files_read. '' without files."""
    if not files:
        return ""
    lines = []
    for f in files[:PROJECT_FILES_SHOWN]:
        if f.kind == "table":
            tables = "; ".join(_table_note(t) for t in f.tables) or "a table"
            lines.append(f"- {f.name}: {tables}; query it with files_query.")
        elif f.kind == "document":
            pages = f" ({counted(f.pages, f.page_unit)})" if f.pages else ""
            how = (
                "search the project's documents with knowledge_search and cite the passages it returns"
                if knowledge
                else f"read it with files_read (file id {f.pk})"
            )
            lines.append(f"- {f.name}: a document{pages}; {how}.")
        else:
            lines.append(f"- {f.name}: an image.")
    if len(files) > PROJECT_FILES_SHOWN:
        lines.append(f"- and {len(files) - PROJECT_FILES_SHOWN} more: files_list lists them all.")
    return "\n".join([PROJECT_FILES_HEADING, PROJECT_FILES_INTRO, *lines])


def user_message(text: str, files: list[AttachedFile], *, vision: bool) -> dict[str, Any]:
    """The turn's message for the model: its text, the note on its files and, for a vision model, its
    images (`images`: agents/llm/images.py turns them into image parts of this message)."""
    message: dict[str, Any] = {"role": "user", "content": text + files_note(files, vision=vision)}
    images = [
        {"path": f["image"]["path"], "mime": f["image"]["mime"], "url": f["name"]} for f in files if f.get("image")
    ]
    if images and vision:
        message["images"] = images
    return message


class AttachedResource(TypedDict):
    """One MCP resource of a turn's message (`Turn.resources`): what the server called it when sent,
    and `changedAt` (ISO 8601) once its server said it changed since (a subscription: resource_changed)."""

    server: str
    uri: str
    name: str
    mime: str
    changedAt: NotRequired[str]


def clean_resources(value: Any) -> list[AttachedResource]:
    """The resources a message names, each once, checked against what the servers here list now; a
    ValidationError naming `resources` otherwise (not a list of them, too many, or one no server offers)."""
    from tools.mcp import mcp_host

    if value is None or value == []:
        return []
    if not isinstance(value, list) or not all(
        isinstance(v, dict) and isinstance(v.get("server"), str) and isinstance(v.get("uri"), str) and v["uri"]
        for v in value
    ):
        raise ValidationError({"resources": ValidationError(ERROR_BAD_RESOURCES, code="invalid")})
    refs = list(dict.fromkeys((v["server"], v["uri"]) for v in value))
    if len(refs) > MAX_RESOURCES_PER_MESSAGE:
        raise ValidationError({"resources": ValidationError(ERROR_TOO_MANY_RESOURCES, code="invalid")})
    host = mcp_host()
    listed = {s.name: s.resources for s in (host.status() if host is not None else []) if s.state == "ready"}
    found: list[AttachedResource] = []
    for server, uri in refs:
        info = next((r for r in listed.get(server, ()) if r.matches(uri)), None)
        if info is None:
            message = ERROR_NO_RESOURCE.format(server=server, uri=uri)
            raise ValidationError({"resources": ValidationError(message, code="invalid")})
        name = info.name if not info.template else uri.rstrip("/").rsplit("/", 1)[-1] or uri
        found.append({"server": server, "uri": uri, "name": name, "mime": "" if info.template else info.mime_type})
    return found


def resources_note(resources: list[AttachedResource]) -> str:
    """What a later turn's history says of an earlier message's resources (their content is not sent
    again: the model may read one anew with mcp_read_resource)."""
    if not resources:
        return ""
    said = "sent with this message, not repeated here (mcp_read_resource reads it again)"
    lines = [f"- {r['name']} ({r['uri']}, MCP server {r['server']}): {said}." for r in resources]
    return RESOURCES_NOTE + "\n".join(lines)


def resource_changed(server: str, uri: str) -> bool:
    """`server` says its resource `uri` changed (tools.mcp's resource listener, subscriptions.py):
    every message that attached it says so from now on, with the time (the latest change). Whether
    any message attaches it (False: the subscription is no longer needed)."""
    from django.utils import timezone

    from .models import Turn

    now = timezone.now().isoformat(timespec="seconds")
    found = False
    for turn_id, resources in Turn.objects.filter(resources__icontains=uri).values_list("id", "resources"):
        hit = [r.get("server") == server and r.get("uri") == uri for r in resources]
        if any(hit):
            found = True
            marked = [{**r, "changedAt": now} if h else r for r, h in zip(resources, hit, strict=True)]
            Turn.objects.filter(pk=turn_id).update(resources=marked)
    return found
