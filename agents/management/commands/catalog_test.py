"""Test the active catalog's routing: every utterance of every active mode as the first message of a
new, hidden session in the default mode (agents/catalog_tests). Prints each case, each mode's
precision and recall, and the accuracy; exits 1 below --min-accuracy, so a catalog kept in git can be
tested in its own CI."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from agents.catalog_tests import RoutingResult, routing_run, routing_team
from agents.llm.catalog import models_config

UTTERANCE_WIDTH = 60


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return value


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


async def _run(**arguments: Any) -> RoutingResult:
    try:
        return await routing_run(**arguments)
    finally:  # the database work ran on asgiref's sync thread: its connection ends with the run
        await sync_to_async(connections.close_all)()


class Command(BaseCommand):
    help = (
        "Run the active catalog's routing tests (each mode's example and test utterances) with the chosen "
        "model and print the cases, each mode's precision and recall, and the accuracy. Only routing runs "
        "exist for now: --kind routing is the one kind accepted (checks and drafts runs come later)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--kind", default="routing", choices=["routing"], help="What to run: routing (the only kind so far)."
        )
        parser.add_argument(
            "--model", default="", help="A models.json key (default: each mode's model, or the default)."
        )
        parser.add_argument(
            "--min-accuracy", type=_fraction, default=None, help="Exit 1 when the accuracy is below this (0 to 1)."
        )
        parser.add_argument(
            "--user", default="", help="The curator the run is for: its usage and quota (default: the first superuser)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        model = (options["model"] or "").strip()
        if model and models_config().get(model) is None:
            raise CommandError(f"Unknown model {model!r}. Available: {', '.join(models_config().models)}.")
        user = self._user(options["user"])
        try:
            team = routing_team(user=user)
        except ValidationError as exc:
            raise CommandError(exc.messages[0]) from None
        try:
            result = asyncio.run(_run(user=user, team=team, model=model))
        except ValidationError as exc:  # a case's turn refused: the user's or team's quota is used up
            raise CommandError(" ".join(exc.messages)) from None
        self._print(result)
        threshold = options["min_accuracy"]
        if threshold is not None and (result.accuracy or 0.0) < threshold:
            raise CommandError(f"Accuracy {_share(result.accuracy)} is below {threshold:.2f}.", returncode=1)

    def _user(self, username: str) -> Any:
        users = get_user_model().objects
        if username:
            user = users.filter(username=username).first()
            if user is None:
                raise CommandError(f"No user {username!r}.")
            return user
        user = users.filter(is_superuser=True, is_active=True).order_by("pk").first()
        if user is None:
            raise CommandError("No superuser to run the tests for: name a user with --user.")
        return user

    def _print(self, result: RoutingResult) -> None:
        out = self.stdout.write
        width = min(UTTERANCE_WIDTH, max([len("utterance"), *(len(c.utterance) for c in result.cases)]))
        expected_w = max([len("expected"), *(len(c.expected) for c in result.cases)])
        got_w = max([len("got"), *(len(c.got) for c in result.cases)])
        out(f"{'utterance':<{width}}  {'expected':<{expected_w}}  {'got':<{got_w}}  ok")
        for case in result.cases:
            text = case.utterance if len(case.utterance) <= width else case.utterance[: width - 1] + "…"
            out(f"{text:<{width}}  {case.expected:<{expected_w}}  {case.got:<{got_w}}  {'yes' if case.ok else 'NO'}")
        out("")
        key_w = max([len("mode"), *(len(key) for key in result.modes)])
        out(f"{'mode':<{key_w}}  precision  recall")
        for key, numbers in result.modes.items():
            out(f"{key:<{key_w}}  {_share(numbers['precision']):>9}  {_share(numbers['recall']):>6}")
        out("")
        out("confusion (expected → got: cases)")
        for expected, row in result.matrix.items():
            out(f"  {expected} → " + ", ".join(f"{got}: {count}" for got, count in row.items()))
        out("")
        right = sum(case.ok for case in result.cases)
        out(f"accuracy {_share(result.accuracy)} ({right}/{len(result.cases)} cases, {result.seconds:.1f} s)")
