"""Compare: the routing run over the published catalog and over the catalog with its drafts applied, and
what changed between them (docs/curating-the-catalog.md "Drafts against the published catalog").

    result = await routing_compare(user=user, team=team, model="")
    result.published_accuracy, result.drafts_accuracy, result.dropped   # 0.86, 0.73, True
    result.changed     # [CaseChange(utterance, got_before, got_after, ok_before, ok_after, ...)]
    result.drafts      # {"data-analysis": 7}: the drafts applied, by mode, their version numbers

The two runs go one after the other, each at most `APTIX_CATALOG_TEST_CONCURRENCY` cases at once. What
changed is a pure function of the two runs' cases (`cases_changed`); so is which checks broke
(`checks_changed`, over any objects with `mode`, `prompt` and `ok`: the check runs' results), which
`CompareResult.broken_checks` holds once a caller compares check runs too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar

from asgiref.sync import sync_to_async

from modes.drafts import catalog_drafts

from .routing import CaseResult, RoutingResult, routing_run

CHANGED = "changed"  # in both runs, with a different result
ADDED = "added"  # only in the drafts run: a draft added the utterance (or made its mode active)
REMOVED = "removed"  # only in the published run: a draft removed it (or deactivated its mode)


@dataclass(frozen=True)
class CaseChange:
    """One case whose result differs between the published run (`before`) and the drafts run (`after`).
    A case in one run only has None for the other's fields and `change` ADDED or REMOVED."""

    utterance: str
    got_before: str | None
    got_after: str | None
    ok_before: bool | None
    ok_after: bool | None
    expected_before: str | None = None
    expected_after: str | None = None
    change: str = CHANGED

    @property
    def expected_changed(self) -> bool:
        """Both runs have the case, expecting different modes (a draft moved the utterance)."""
        return self.change == CHANGED and self.expected_before != self.expected_after

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _keyed(cases: Iterable[CaseResult]) -> dict[tuple[str, int], CaseResult]:
    """The cases by (utterance, its occurrence): an utterance two modes list is two cases."""
    seen: Counter[str] = Counter()
    keyed: dict[tuple[str, int], CaseResult] = {}
    for case in cases:
        keyed[(case.utterance, seen[case.utterance])] = case
        seen[case.utterance] += 1
    return keyed


def cases_changed(before: Sequence[CaseResult], after: Sequence[CaseResult]) -> list[CaseChange]:
    """Every case whose result differs between two routing runs: its `got` differs, or its `ok` does
    (a draft moved the utterance to another mode), and every case only one run has. In the drafts
    run's order, then the cases only the published run had, in its order. Plain Python: no database."""
    old, new = _keyed(before), _keyed(after)
    changes: list[CaseChange] = []
    for key, case in new.items():
        was = old.get(key)
        if was is None:
            changes.append(
                CaseChange(
                    utterance=case.utterance,
                    got_before=None,
                    got_after=case.got,
                    ok_before=None,
                    ok_after=case.ok,
                    expected_after=case.expected,
                    change=ADDED,
                )
            )
        elif was.got != case.got or was.ok != case.ok:
            changes.append(
                CaseChange(
                    utterance=case.utterance,
                    got_before=was.got,
                    got_after=case.got,
                    ok_before=was.ok,
                    ok_after=case.ok,
                    expected_before=was.expected,
                    expected_after=case.expected,
                )
            )
    changes.extend(
        CaseChange(
            utterance=case.utterance,
            got_before=case.got,
            got_after=None,
            ok_before=case.ok,
            ok_after=None,
            expected_before=case.expected,
            change=REMOVED,
        )
        for key, case in old.items()
        if key not in new
    )
    return changes


class CheckOutcome(Protocol):
    """What checks_changed needs of a check's result (agents/catalog_tests/checks.py CheckResult)."""

    @property
    def mode(self) -> str: ...
    @property
    def prompt(self) -> str: ...
    @property
    def ok(self) -> bool: ...


Check = TypeVar("Check", bound=CheckOutcome)


def checks_changed(before: Iterable[CheckOutcome], after: Iterable[Check]) -> list[Check]:
    """The checks that passed in `before` (the published catalog's check run) and fail in `after` (the
    drafts'), matched by mode and prompt, in `after`'s order. A check only `after` has (a draft added
    it) is not among them: it never passed. Plain Python: no database."""
    passed = {(check.mode, check.prompt) for check in before if check.ok}
    return [check for check in after if not check.ok and (check.mode, check.prompt) in passed]


@dataclass
class CompareResult:
    published: RoutingResult
    drafted: RoutingResult
    changed: list[CaseChange] = field(default_factory=list)
    drafts: dict[str, int] = field(default_factory=dict)  # mode key → the draft version applied
    # The checks that passed over the published catalog and fail over the drafts (checks_changed); a
    # caller that runs the checks both ways fills it.
    broken_checks: list[Any] = field(default_factory=list)

    @property
    def published_accuracy(self) -> float | None:
        return self.published.accuracy

    @property
    def drafts_accuracy(self) -> float | None:
        return self.drafted.accuracy

    @property
    def dropped(self) -> bool:
        """The drafts route worse than the published catalog (False when either run had no cases)."""
        before, after = self.published_accuracy, self.drafts_accuracy
        return before is not None and after is not None and after < before

    @property
    def warn(self) -> bool:
        """What the publish page warns of: accuracy dropped, or a check that passed now fails."""
        return self.dropped or bool(self.broken_checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "published_accuracy": self.published_accuracy,
            "drafts_accuracy": self.drafts_accuracy,
            "dropped": self.dropped,
            "drafts": dict(self.drafts),
            "changed": [change.as_dict() for change in self.changed],
            "broken_checks": [{"mode": check.mode, "prompt": check.prompt} for check in self.broken_checks],
        }


def drafts_applied_versions() -> dict[str, int]:
    """The drafts a drafts run applies: mode key → version number."""
    return {key: version.number for key, version in catalog_drafts().items()}


async def routing_compare(*, user: Any, team: Any, model: str = "", limit: int | None = None) -> CompareResult:
    """The routing run over the published catalog, then over the catalog with its drafts applied (each
    at most `limit`, else the setting's, cases at once), and what changed between them."""
    drafts = await sync_to_async(drafts_applied_versions)()
    published = await routing_run(user=user, team=team, model=model, limit=limit)
    drafted = await routing_run(user=user, team=team, model=model, limit=limit, drafts=True)
    return CompareResult(
        published=published, drafted=drafted, changed=cases_changed(published.cases, drafted.cases), drafts=drafts
    )
