from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from aptix.tokens import api_token_create


def _listed(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


class Command(BaseCommand):
    help = (
        "Create a bearer token for programs (the JSON API, the MCP server, the A2A agent). "
        "The token is printed once and cannot be shown again."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label to recognise the token later.")
        parser.add_argument(
            "--only",
            default="",
            help="Comma-separated interfaces the token works for (api, mcp, a2a); default: all.",
        )
        parser.add_argument(
            "--modes", default="", help="Comma-separated mode keys the token may use; default: all of the user's."
        )

    def handle(self, *args, username: str, name: str, only: str, modes: str, **options):
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"No active user named {username!r}.")
        try:
            token, secret = api_token_create(user=user, name=name, interfaces=_listed(only), modes=_listed(modes))
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(secret)
        self.stderr.write(
            f"Created API token {token.key_prefix}… for {username}. Keep it secret; it is not shown again."
        )
