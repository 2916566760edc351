"""An uploaded file (SessionFile) and the audit of what happened to it (FileAudit).

A file's content lives in storage (files/storage.py); its row is metadata only and stays after the
content is deleted or purged (`deleted_at`), so the audit keeps its name, size and hash."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from aptix.ids import new_hex_id


def page_unit(format_: str) -> str:
    """What a document's parts are called: a PDF has pages; a DOCX, Markdown, HTML or text file is read
    in sections (at its headings, or blocks of paragraphs)."""
    return "page" if format_ == "pdf" else "section"


class SessionFile(models.Model):
    """One uploaded file. Its owner's alone: nobody else reaches it by id (files/services.py). Uploaded
    without a session it belongs to no session until it is first attached; then to that one for good."""

    class Kind(models.TextChoices):
        TABLE = "table"
        DOCUMENT = "document"
        IMAGE = "image"

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="session_files")
    # By name: files never imports agents. PROTECT: sessions are only soft-deleted, and the audit
    # (this row) must outlive a session's content.
    session = models.ForeignKey(
        "agents.AgentSession", on_delete=models.PROTECT, null=True, blank=True, related_name="files"
    )
    # A project's file (docs/workspace.md#projects): stored once, used by every session of the project;
    # it then belongs to no session. By name: files never imports projects.
    project = models.ForeignKey(
        "projects.Project", on_delete=models.PROTECT, null=True, blank=True, related_name="files"
    )
    name = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # What the content was found to be: csv, tsv, xlsx, parquet, json, jsonl, pdf, docx, markdown,
    # text, html, png, jpeg, webp, gif.
    format = models.CharField(max_length=16)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    # Storage names (files/storage.py): the file as uploaded, and what ingestion made of it (a table
    # file's DuckDB database, a document's pages as JSON, an image's thumbnail).
    storage_name = models.CharField(max_length=255)
    data_name = models.CharField(max_length=255, blank=True)
    # [{"name", "columns": [{"name", "type"}], "rows", "source"}]: "name" is the SQL name the session's
    # queries use (unique in the session), "source" the table's name inside the DuckDB file.
    tables = models.JSONField(default=list, blank=True)
    pages = models.IntegerField(null=True, blank=True)  # a document's pages (PDF) or sections
    # What the page shows on the message: a table's first rows and columns, a document's page count
    # and opening words, an image's width and height (its thumbnail is data_name).
    preview = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    attached_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["session", "created_at"], name="file_session_recent"),
            models.Index(fields=["owner", "deleted_at"], name="file_owner_live"),
            models.Index(fields=["project", "created_at"], name="file_project_recent"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def page_unit(self) -> str:
        return page_unit(self.format)


class FileAudit(models.Model):
    """Who uploaded, deleted or purged which file, when: append-only (files/services.py writes it,
    the admin reads it). Copies the file's name, size and hash so it outlives everything else."""

    class Action(models.TextChoices):
        UPLOAD = "upload"
        DELETE = "delete"
        PURGE = "purge"  # the session was deleted: its files' content went with it

    action = models.CharField(max_length=8, choices=Action.choices)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    actor_name = models.CharField(max_length=150, blank=True)
    file_id = models.CharField(max_length=32, db_index=True)
    name = models.CharField(max_length=255)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    session_id = models.CharField(max_length=32, blank=True)
    project_id = models.CharField(max_length=32, blank=True, db_index=True)  # a project's file: its project

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "file audit entry"
        verbose_name_plural = "file audit"

    def __str__(self) -> str:
        return f"{self.action} {self.name}"


class Passage(models.Model):
    """A passage of a project's document, as knowledge search finds and cites it (files/knowledge/).
    Made from the document's pages by files/search.py's splitting; its id is what a citation names."""

    id = models.CharField(primary_key=True, max_length=32, default=new_hex_id, editable=False)
    file = models.ForeignKey(SessionFile, on_delete=models.CASCADE, related_name="passages")
    # By name: files never imports projects.
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="passages")
    page = models.IntegerField()  # the page (PDF) or section it is on, from 1
    title = models.CharField(max_length=255, blank=True)  # the page's or section's heading
    ordinal = models.IntegerField()  # its place in the document, from 0
    text = models.TextField()
    # The embedding model's vector as float32 bytes, and which model made it (blank: none yet).
    embedding = models.BinaryField(null=True, blank=True)
    embedding_model = models.CharField(max_length=120, blank=True)

    class Meta:
        ordering = ["file", "ordinal"]
        indexes = [
            models.Index(fields=["project", "file"], name="passage_project_file"),
            models.Index(fields=["file", "ordinal"], name="passage_file_order"),
        ]

    def __str__(self) -> str:
        return f"{self.file_id} #{self.ordinal}"


class KnowledgeIndex(models.Model):
    """Where the indexing of one project document stands (files/knowledge/indexing.py): the project page
    shows it, the start-up sweep takes up the files left pending or indexing."""

    class State(models.TextChoices):
        PENDING = "pending"
        INDEXING = "indexing"
        INDEXED = "indexed"
        FAILED = "failed"

    file = models.OneToOneField(SessionFile, on_delete=models.CASCADE, primary_key=True, related_name="knowledge")
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="knowledge_indexes")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING, db_index=True)
    passages_done = models.IntegerField(default=0)
    passages_total = models.IntegerField(default=0)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "knowledge indexes"

    def __str__(self) -> str:
        return f"{self.file_id} {self.state}"
