"""Recognising a TUL-007 §4.1 mode proposal (modes/proposal.py), from the offline model or a real one."""

from __future__ import annotations

import pytest

from modes.proposal import Proposal, find_proposal, is_proposal, parse_proposal, proposal_text

REAL_MODEL = """I think this would go better in **Data Analysis** mode, which can query the team's database.

Would you like to:

- **1)** Stay in the current mode
- **2)** Switch this session to Data Analysis
- **3)** Switch and start a new session for this work
"""


def test_the_offline_text_round_trips():
    text = proposal_text("Data analysis", "data-analysis")
    assert find_proposal(text) == Proposal(display_name="Data analysis", key="data-analysis")
    assert is_proposal(text)
    assert parse_proposal(text) == ("Data analysis", "data-analysis")


def test_a_real_model_proposal_with_bullets_and_bold_numbers_is_found():
    assert find_proposal(REAL_MODEL) == Proposal(display_name="Data Analysis", key=None)
    assert is_proposal(REAL_MODEL)
    assert parse_proposal(REAL_MODEL) is None  # no key: nothing the offline planner could switch to


@pytest.mark.parametrize(
    "text",
    [
        "1) stay here\n2) switch now\n3) switch and branch",  # lower case, no mode named
        "Options: 1) Stay in the current mode, 2) Switch this session, 3) Switch to a new one.",  # one line
        "- 1) Stay\n- 2) Switch this session\n- 3) Switch to a new session",
    ],
)
def test_the_three_options_in_any_markdown_are_a_proposal(text):
    assert find_proposal(text) == Proposal(display_name="the proposed mode", key=None)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Here is your answer: **Data Analysis** is the best fit for SQL questions.",
        "You could 1) stay or 2) switch this session.",  # no third option
        "3) Switch to X\n2) Switch this session\n1) Stay in the current mode",  # out of order
        "1) Stay calm\n2) Breathe\n3) Switch off",  # the second option is no switch
    ],
)
def test_prose_without_the_three_options_is_not_a_proposal(text):
    assert find_proposal(text) is None
    assert not is_proposal(text)
    assert parse_proposal(text) is None


def test_only_bold_gives_the_name_without_a_key():
    text = "Try **Workflow Authoring**?\n1) Stay in the current mode\n2) Switch this session\n3) Switch to it"
    assert find_proposal(text) == Proposal(display_name="Workflow Authoring", key=None)
    assert parse_proposal(text) is None
