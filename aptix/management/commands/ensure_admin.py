"""On first run, create an administrator with a generated password, printed once and kept in var/."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from aptix.teams import team_ensure


class Command(BaseCommand):
    help = "Create the first admin login (and a default team) if no superuser exists yet."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--team", default="Default team")

    def handle(self, *args, username: str, team: str, **options):
        User = get_user_model()
        password_file = settings.VAR_DIR / "admin-password.txt"
        if User.objects.filter(is_superuser=True).exists():
            where = f" (password kept in {password_file})" if password_file.exists() else ""
            self.stdout.write(f"Admin login exists{where}.")
            return
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=username, email="", password=password)
        team_ensure(name=team, owner=user)
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        password_file.write_text(f"username: {username}\npassword: {password}\n")
        password_file.chmod(0o600)
        banner = "=" * 64
        self.stdout.write(
            f"{banner}\nCreated the admin login (shown once; kept in {password_file}):\n"
            f"  username: {username}\n  password: {password}\n{banner}"
        )
