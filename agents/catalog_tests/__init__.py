"""Testing the catalog before people get it: a routing run sends each utterance of every active mode as
the first message of a new, hidden session in the catalog's default mode and records the mode the
agent moved towards (docs/curating-the-catalog.md "Routing runs").

    cases = routing_cases(team=team)                    # every active mode's utterances, with the expected mode
    result = await routing_run(user=user, team=team, model="")   # RoutingResult: cases, modes, accuracy, matrix
    result = await routing_run(user=user, team=team, drafts=True)  # over the catalog with its drafts applied
    compared = await routing_compare(user=user, team=team)        # CompareResult: both accuracies, what changed

A check run runs each active mode's checks (a prompt, an execution, what the turn must show) in a new,
hidden session in that mode, approving what the turn asks for that run alone ("Check runs").

    cases = check_cases(team=team)                      # every active mode's checks, in catalog order
    result = await checks_run(user=user, team=team)     # ChecksResult: checks, passed, failed, seconds
"""

from __future__ import annotations

from .cases import STAY, RoutingCase, routing_cases, routing_team, utterances_of
from .checks import CheckCase, CheckResult, ChecksResult, check_case_run, check_cases, checks_run
from .compare import CaseChange, CompareResult, cases_changed, checks_changed, routing_compare
from .routing import CaseResult, RoutingResult, routing_case_run, routing_run
from .summary import routing_summary

__all__ = [
    "STAY",
    "CaseChange",
    "CaseResult",
    "CheckCase",
    "CheckResult",
    "ChecksResult",
    "CompareResult",
    "RoutingCase",
    "RoutingResult",
    "cases_changed",
    "check_case_run",
    "check_cases",
    "checks_changed",
    "checks_run",
    "routing_case_run",
    "routing_cases",
    "routing_compare",
    "routing_run",
    "routing_summary",
    "routing_team",
    "utterances_of",
]
