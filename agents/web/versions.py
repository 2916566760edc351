"""Versions of a message: after an Edit, Retry or Regenerate the new turn shows ‹1/2› and switches in
place between what was sent each time (agents/conversations.py turn_resend keeps the turns it replaced;
agents/selectors.py turn_versions finds them). The timeline draws the conversation as the model sees
it, the newest version of each message; an earlier version is drawn on demand inside the newest one's
article (`GET …/turns/<id>/versions/<n>/`, views/history.py), which hides its own body meanwhile
(CSS, no script), so the live stream keeps updating the newest version while another is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agents.selectors import RESENT, turn_versions

if TYPE_CHECKING:
    from agents.models import Turn


@dataclass(frozen=True)
class VersionNav:
    """What a message's switcher says and where it draws: version `number` of `count`, swapped into
    the article of `slot`, the turn that is the newest version."""

    number: int
    count: int
    slot: str

    @property
    def previous(self) -> int:
        return self.number - 1

    @property
    def next(self) -> int:
        return self.number + 1


def nav_of(turn: Turn, versions: Mapping[str, list[str]]) -> VersionNav | None:
    """The switcher of `turn` as the newest of its versions (None when it has one version)."""
    chain = versions.get(turn.id)
    return VersionNav(number=len(chain), count=len(chain), slot=turn.id) if chain else None


def nav_looked_up(turn: Turn) -> VersionNav | None:
    """nav_of, reading the versions: one query for a turn that was sent again, none otherwise."""
    if turn.origin not in RESENT:
        return None
    return nav_of(turn, turn_versions(session_id=turn.session_id, turns=[turn]))
