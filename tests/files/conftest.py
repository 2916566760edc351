"""Fixtures of the files tests: uploads in a temporary media directory (tests/helpers/files.py) and
sessions to attach them to (tests/helpers/reasoner.py)."""

from __future__ import annotations

from tests.helpers.files import media  # noqa: F401 - autouse: every files test stores under tmp_path
from tests.helpers.reasoner import llm, make_session, model, run_turn  # noqa: F401 - fixtures of the turn tests
