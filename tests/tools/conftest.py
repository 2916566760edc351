"""Fixtures of the tools tests: sessions for the tools that read a session's files."""

from __future__ import annotations

from tests.helpers.reasoner import make_session  # noqa: F401 - fixture of the files tools tests
