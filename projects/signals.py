"""What other parts of the app hear about a project's files (the knowledge index: passages of a
project's documents). Sent by projects/files.py (and project_delete) after the transaction that added
or removed the file commits, with `sender=Project`, `project` (None when the whole project was
deleted), `project_id` and `file` (the SessionFile row; `file.kind == "document"` for a document). A
receiver connects in its AppConfig.ready(); it must not raise (the upload or deletion is done by then)
and does its heavy work in the background."""

from __future__ import annotations

from django.dispatch import Signal

# A file was uploaded to a project (its row is live, its content stored and ingested).
project_file_added = Signal()
# A project's file was deleted (its row is soft-deleted, its content gone): forget what was made of it.
project_file_removed = Signal()
