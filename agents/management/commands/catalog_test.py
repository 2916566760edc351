"""Test the active catalog (agents/catalog_tests): its routing — every utterance of every active mode as
the first message of a new, hidden session in the default mode — and, with `--kind checks` or `both`,
its checks — each a prompt in a new, hidden session in its mode. Prints each case, each mode's
precision and recall and the accuracy, and each check with why it failed; exits 1 below
--min-accuracy or on a failed check, so a catalog kept in git can be tested in its own CI."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from agents.catalog_tests import ChecksResult, RoutingResult, checks_run, routing_run, routing_team
from agents.catalog_tests.compare import drafts_applied_versions
from agents.llm.catalog import models_config
from agents.runner import runner_kind
from tools.mcp import start_mcp_host

UTTERANCE_WIDTH = 60
KINDS = ("routing", "checks", "both")
MCP_START_TIMEOUT = 60.0  # seconds the checks wait for this process's MCP servers to come up (or fail)


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


async def _run(kind: str, **arguments: Any) -> tuple[RoutingResult | None, ChecksResult | None]:
    try:
        routing = await routing_run(**arguments) if kind in ("routing", "both") else None
        checks = await checks_run(**arguments) if kind in ("checks", "both") else None
        return routing, checks
    finally:  # the database work ran on asgiref's sync thread: its connection ends with the run
        await sync_to_async(connections.close_all)()


class Command(BaseCommand):
    help = (
        "Run the active catalog's routing tests (each mode's example and test utterances) and, with --kind "
        "checks or both, its checks, with the chosen model; print the cases, each mode's precision and recall "
        "and the accuracy, and each check with why it failed. Exits 1 below --min-accuracy or on a failed check."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--kind",
            default="routing",
            choices=KINDS,
            help="What to run: routing (default), checks (each mode's checks) or both.",
        )
        parser.add_argument(
            "--drafts",
            action="store_true",
            help="Run over the catalog with its drafts applied (each mode's latest unpublished, unrejected version).",
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
        if options["kind"] != "routing":
            self._start_mcp_servers()
        try:
            drafts = options["drafts"]
            if drafts:
                applied = drafts_applied_versions()
                named = ", ".join(f"{key} v{number}" for key, number in applied.items()) or "none"
                self.stdout.write(f"over the catalog with its drafts applied ({named})\n")
            result, checks = asyncio.run(_run(options["kind"], user=user, team=team, model=model, drafts=drafts))
        except ValidationError as exc:  # a case's turn refused: the user's or team's quota is used up
            raise CommandError(" ".join(exc.messages)) from None
        failures = []
        if result is not None:
            self._print(result)
            threshold = options["min_accuracy"]
            if threshold is not None and (result.accuracy or 0.0) < threshold:
                failures.append(f"Accuracy {_share(result.accuracy)} is below {threshold:.2f}.")
        if checks is not None:
            if result is not None:
                self.stdout.write("")
            self._print_checks(checks)
            if checks.failed:
                failures.append(f"{checks.failed} of {len(checks.checks)} checks failed.")
        if failures:
            raise CommandError(" ".join(failures), returncode=1)

    def _start_mcp_servers(self) -> None:
        """Checks use their modes' MCP tools (routing needs only the catalog's own). Runs in this
        process (no REDIS_URL) get them from this process's MCP host, started here as the web process
        starts its own; the checks begin once every server is up or has failed. With workers, the
        workers' hosts serve the runs."""
        host = start_mcp_host() if runner_kind() == "local" else None
        if host is None:  # workers, or APTIX_MCP_AUTOSTART off
            return
        try:
            host.wait_until_sync(lambda statuses: all(s.settled for s in statuses), MCP_START_TIMEOUT)
        except TimeoutError as exc:  # the checks that need those servers fail, naming the tool
            self.stderr.write(str(exc))

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

    def _print_checks(self, result: ChecksResult) -> None:
        out = self.stdout.write
        width = min(UTTERANCE_WIDTH, max([len("prompt"), *(len(c.prompt) for c in result.checks)]))
        mode_w = max([len("mode"), *(len(c.mode) for c in result.checks)])
        out(f"{'mode':<{mode_w}}  {'prompt':<{width}}  ok   reasons")
        for check in result.checks:
            text = check.prompt if len(check.prompt) <= width else check.prompt[: width - 1] + "…"
            notes = [*check.failed]
            notes += [f"approved {name}" for name in check.approved]
            notes += [f"declined {name}" for name in check.declined]
            ok = "yes" if check.ok else "NO "
            out(f"{check.mode:<{mode_w}}  {text:<{width}}  {ok}  {'; '.join(notes)}".rstrip())
        out("")
        out(f"checks {result.passed}/{len(result.checks)} passed ({result.failed} failed, {result.seconds:.1f} s)")
