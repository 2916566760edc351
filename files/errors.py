"""What the files services refuse, with the HTTP status a view answers and a message for the user."""

from __future__ import annotations


class FileRefused(Exception):
    """An upload refused: 413 (too large, over the quota), 415 (not a kind we take) or 422 (the
    content cannot be read, or has an absurd shape). `message` says what was found and what is allowed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def size_text(size: int) -> str:
    """50 MB, 1 GB, 300 KB: what the user reads (binary units, the usual short names)."""
    for unit, shift in (("GB", 30), ("MB", 20), ("KB", 10)):
        if size >= 1 << shift:
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) or value >= 10 else f"{value:.1f} {unit}"
    return f"{size} bytes"


def too_large(limit: int) -> FileRefused:
    return FileRefused(413, f"The file is larger than the upload limit of {size_text(limit)}.")


def unreadable(message: str) -> FileRefused:
    return FileRefused(422, message)
