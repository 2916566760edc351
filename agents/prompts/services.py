"""The only writer of saved prompts (agents.models.SavedPrompt). A user's own prompt is theirs to
change; a prompt shared with a team is curated by the team's owners and the administrators among its
members (selectors.prompt_curated_teams): only they share a prompt with the team, change it, stop
sharing it (it goes back to its author's own prompts) or delete it. Every refusal is a
ValidationError naming the field, with a code the API maps to its status (CODE_FORBIDDEN: 403), and
writes nothing."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from aptix.models import Team
from aptix.teams import team_list_for_user

from ..models import SavedPrompt
from .selectors import prompt_can_edit, prompt_curated_teams
from .variables import CODE_INVALID, variables_check, variables_fill

logger = logging.getLogger("aptix.prompts")

TITLE_MAX = 200
TEXT_MAX = 20_000
FILLED_MAX = 100_000  # what the composer sends at most (agents.turns.MAX_MESSAGE_LENGTH)
CODE_FORBIDDEN = "prompt_forbidden"
UNCHANGED: Any = object()  # prompt_update's "leave this as it is"

ERROR_TITLE_EMPTY = "The title is empty."
ERROR_TITLE_TOO_LONG = f"The title is longer than {TITLE_MAX} characters."
ERROR_TEXT_EMPTY = "The text is empty."
ERROR_TEXT_TOO_LONG = f"The text is longer than {TEXT_MAX} characters."
ERROR_FILLED_TOO_LONG = f"The filled prompt is longer than {FILLED_MAX} characters."
ERROR_NO_TEAM = "You are not a member of any team, so there is no team to share with."
ERROR_WHICH_TEAM = 'You are a member of several teams: say which one to share with ("team": one of {slugs}).'
ERROR_NOT_IN_TEAM = 'You are not a member of a team "{slug}".'
ERROR_SHARE_FORBIDDEN = (
    "Only the owners of {team} and administrators share prompts with the team; save it as your own instead."
)
ERROR_CURATE_FORBIDDEN = (
    "This prompt is shared with {team}: only the team's owners and administrators change, unshare or delete it."
)
ERROR_NOT_YOURS = "This prompt is someone else's: only its author changes or deletes it."


def _refuse(field: str, message: str, code: str = CODE_INVALID) -> ValidationError:
    return ValidationError({field: ValidationError(message, code=code)})


def _checked(title: Any, text: Any) -> tuple[str, str]:
    """The title (trimmed) and text, or a ValidationError naming the first problem."""
    if not isinstance(title, str) or not title.strip():
        raise _refuse("title", ERROR_TITLE_EMPTY)
    title = title.strip()
    if len(title) > TITLE_MAX:
        raise _refuse("title", ERROR_TITLE_TOO_LONG)
    if not isinstance(text, str) or not text.strip():
        raise _refuse("text", ERROR_TEXT_EMPTY)
    if len(text) > TEXT_MAX:
        raise _refuse("text", ERROR_TEXT_TOO_LONG)
    variables_check(text)
    return title, text


def prompt_share_team(*, user: Any, slug: str | None = None) -> Team:
    """The team `user` shares a prompt with: the one named by `slug` among theirs, or their only
    team; refused (403) unless they curate it."""
    teams = list(team_list_for_user(user=user))
    if slug:
        team = next((t for t in teams if t.slug == slug), None)
        if team is None:
            raise _refuse("team", ERROR_NOT_IN_TEAM.format(slug=slug))
    elif not teams:
        raise _refuse("shared", ERROR_NO_TEAM)
    elif len(teams) > 1:
        raise _refuse("team", ERROR_WHICH_TEAM.format(slugs=", ".join(t.slug for t in teams)))
    else:
        team = teams[0]
    if not prompt_curated_teams(user=user).filter(pk=team.pk).exists():
        raise _refuse("shared", ERROR_SHARE_FORBIDDEN.format(team=team.name), CODE_FORBIDDEN)
    return team


def _may_edit(*, user: Any, prompt: SavedPrompt) -> None:
    if prompt_can_edit(user=user, prompt=prompt):
        return
    if prompt.team is not None:
        raise _refuse("shared", ERROR_CURATE_FORBIDDEN.format(team=prompt.team.name), CODE_FORBIDDEN)
    raise _refuse("id", ERROR_NOT_YOURS, CODE_FORBIDDEN)


def prompt_create(*, user: Any, title: Any, text: Any, team: Team | None = None) -> SavedPrompt:
    """A new prompt of `user`'s: their own, or shared with `team` (from prompt_share_team)."""
    title, text = _checked(title, text)
    prompt = SavedPrompt(user=user, team=team, title=title, text=text)
    prompt.full_clean()
    prompt.save()
    logger.info(
        "Prompt %s saved%s",
        prompt.pk,
        f" and shared with team {team.pk}" if team else "",
        extra={"event": "prompt.created", "prompt_id": prompt.pk, "user_id": user.pk},
    )
    return prompt


def prompt_update(
    *, user: Any, prompt: SavedPrompt, title: Any = UNCHANGED, text: Any = UNCHANGED, team: Any = UNCHANGED
) -> SavedPrompt:
    """Change the prompt's title, text, or where it is shared (`team`: a team from
    prompt_share_team, or None to stop sharing: it is its author's own again)."""
    _may_edit(user=user, prompt=prompt)
    title, text = _checked(prompt.title if title is UNCHANGED else title, prompt.text if text is UNCHANGED else text)
    moved = team is not UNCHANGED and team is not None and team.pk != prompt.team_id
    # Sharing is the team's curators' (prompt_share_team checks it too, for the callers that use it);
    # moving a prompt from one team to another needs both (_may_edit checked the first).
    if moved and not prompt_curated_teams(user=user).filter(pk=team.pk).exists():
        raise _refuse("shared", ERROR_SHARE_FORBIDDEN.format(team=team.name), CODE_FORBIDDEN)
    prompt.title, prompt.text = title, text
    if team is not UNCHANGED:
        prompt.team = team
    prompt.full_clean()
    prompt.save()
    logger.info(
        "Prompt %s changed",
        prompt.pk,
        extra={"event": "prompt.updated", "prompt_id": prompt.pk, "user_id": user.pk, "team_id": prompt.team_id},
    )
    return prompt


def prompt_delete(*, user: Any, prompt: SavedPrompt) -> None:
    _may_edit(user=user, prompt=prompt)
    prompt_id = prompt.pk
    prompt.delete()
    logger.info(
        "Prompt %s deleted", prompt_id, extra={"event": "prompt.deleted", "prompt_id": prompt_id, "user_id": user.pk}
    )


def prompt_use(*, prompt: SavedPrompt, values: Any) -> str:
    """The prompt's text with its variables filled (variables_fill's checks), counted as one use.
    Callers pass a prompt the user may use (selectors.prompt_get)."""
    filled = variables_fill(prompt.text, values)
    if len(filled) > FILLED_MAX:
        raise _refuse("variables", ERROR_FILLED_TOO_LONG)
    with transaction.atomic():
        now = timezone.now()
        # Not `updated_at` (auto_now, via .update() untouched): a use is no change to the prompt.
        SavedPrompt.objects.filter(pk=prompt.pk).update(use_count=F("use_count") + 1, last_used_at=now)
    prompt.refresh_from_db(fields=["use_count", "last_used_at"])
    return filled
