from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from aptix.tokens import api_token_create


class Command(BaseCommand):
    help = "Create a bearer token for the JSON API. The token is printed once and cannot be shown again."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label to recognise the token later.")

    def handle(self, *args, username: str, name: str, **options):
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"No active user named {username!r}.")
        token, secret = api_token_create(user=user, name=name)
        self.stdout.write(secret)
        self.stderr.write(
            f"Created API token {token.key_prefix}… for {username}. Keep it secret; it is not shown again."
        )
