"""Testing the catalog before people get it: a routing run sends each utterance of every active mode as
the first message of a new, hidden session in the catalog's default mode and records the mode the
agent moved towards (docs/curating-the-catalog.md "Routing runs").

    cases = routing_cases(team=team)                    # every active mode's utterances, with the expected mode
    result = await routing_run(user=user, team=team, model="")   # RoutingResult: cases, modes, accuracy, matrix
"""

from __future__ import annotations

from .cases import STAY, RoutingCase, routing_cases, routing_team, utterances_of
from .routing import CaseResult, RoutingResult, routing_case_run, routing_run
from .summary import routing_summary

__all__ = [
    "STAY",
    "CaseResult",
    "RoutingCase",
    "RoutingResult",
    "routing_case_run",
    "routing_cases",
    "routing_run",
    "routing_summary",
    "routing_team",
    "utterances_of",
]
