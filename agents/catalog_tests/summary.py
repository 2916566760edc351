"""The numbers of a routing run, from its cases alone (plain Python).

Per mode (the default mode's row is `stay`): precision, of the cases that went to it, the share that
belonged there; recall, of the cases that belonged there, the share that went there (None when nothing
went there, or nothing belonged there). Accuracy: the share of cases whose `got` is their `expected`.
The confusion matrix counts cases by expected, then got."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Protocol


class _Case(Protocol):
    @property
    def expected(self) -> str: ...
    @property
    def got(self) -> str: ...


def routing_summary(
    cases: Iterable[_Case],
) -> tuple[dict[str, dict[str, float | None]], float | None, dict[str, dict[str, int]]]:
    """(modes {key: {"precision", "recall"}}, accuracy, matrix {expected: {got: count}})."""
    cases = list(cases)
    pairs = Counter((case.expected, case.got) for case in cases)
    matrix: dict[str, dict[str, int]] = {}
    for (expected, got), count in sorted(pairs.items()):
        matrix.setdefault(expected, {})[got] = count
    expected_counts = Counter(case.expected for case in cases)
    got_counts = Counter(case.got for case in cases)
    modes: dict[str, dict[str, float | None]] = {}
    for key in [*expected_counts, *(got for got in got_counts if got not in expected_counts)]:
        right = pairs[(key, key)]
        modes[key] = {
            "precision": _share(right, got_counts[key]),
            "recall": _share(right, expected_counts[key]),
        }
    accuracy = _share(sum(pairs[(key, key)] for key in expected_counts), len(cases))
    return modes, accuracy, matrix


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None
