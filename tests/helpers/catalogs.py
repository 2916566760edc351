"""Team catalogs in tests: a catalog mode only for chosen teams."""

from __future__ import annotations

from modes.models import AgentMode

B_ONLY = "b-secrets"  # the key of the mode only team B may use (team_only_mode's default)


def team_only_mode(*teams, key: str = B_ONLY, display_name: str = "B Secrets", **fields) -> AgentMode:
    """An active mode only `teams` may use, with a description and examples of its own."""
    fields.setdefault("description", "Team B's confidential playbooks.")
    fields.setdefault("example_utterances", ["Open the secret playbook"])
    fields.setdefault("ordering", 50)
    mode = AgentMode.objects.create(key=key, display_name=display_name, **fields)
    mode.teams.set(teams)
    return mode
