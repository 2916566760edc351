"""The knowledge index follows a project's files (projects/signals.py → files/knowledge): a document
uploaded to a project is queued for indexing, a deleted one's passages go. Both are sent after the
upload's or deletion's transaction commits; the indexing itself runs on the indexer's thread."""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import receiver

from files.knowledge import forget_file, index_file

from .signals import project_file_added, project_file_removed

logger = logging.getLogger("aptix.projects")


@receiver(project_file_added, dispatch_uid="projects.knowledge.index")
def _index_added(sender: Any, file: Any, **kwargs: Any) -> None:
    try:
        index_file(file)  # anything but a project's document is left alone
    except Exception:  # the upload is done: it must not fail now; the start-up sweep tries no file it never saw
        logger.exception("Queueing a project file for knowledge search failed", extra={"file_id": file.pk})


@receiver(project_file_removed, dispatch_uid="projects.knowledge.forget")
def _forget_removed(sender: Any, file: Any, **kwargs: Any) -> None:
    try:
        forget_file(file)
    except Exception:  # searches skip deleted files whatever is left of their passages
        logger.exception("Forgetting a deleted project file's passages failed", extra={"file_id": file.pk})
