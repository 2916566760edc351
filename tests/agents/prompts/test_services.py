"""Who shares and curates a team's prompts (agents/prompts/services.py): its owners, and
administrators only in teams they are members of; a refusal writes nothing. The admin lists prompts."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.models import SavedPrompt
from agents.prompts.selectors import prompt_list
from agents.prompts.services import (
    CODE_FORBIDDEN,
    ERROR_SHARE_FORBIDDEN,
    prompt_create,
    prompt_share_team,
    prompt_update,
    prompt_use,
)
from aptix.models import Membership

pytestmark = pytest.mark.django_db


def test_an_administrator_outside_the_team_curates_nothing_there(django_user_model, alice, team_a, team_b):
    admin = django_user_model.objects.create_superuser("root", password="x")
    Membership.objects.create(team=team_b, user=admin)
    shared = prompt_create(user=alice, title="A's", text="x", team=team_a)
    assert list(prompt_list(user=admin)) == []  # isolation holds for administrators too
    with pytest.raises(ValidationError) as refused:
        prompt_update(user=admin, prompt=shared, title="Taken over")
    assert refused.value.error_dict["shared"][0].code == CODE_FORBIDDEN
    assert prompt_share_team(user=admin) == team_b  # their own team: yes


def test_a_demoted_owner_no_longer_curates(alice, team_a):
    shared = prompt_create(user=alice, title="Notes", text="x", team=team_a)
    Membership.objects.filter(user=alice).update(role=Membership.Role.MEMBER)
    with pytest.raises(ValidationError) as refused:
        prompt_update(user=alice, prompt=shared, team=None)
    assert "only the team's owners and administrators" in refused.value.messages[0]
    with pytest.raises(ValidationError) as refused:
        prompt_share_team(user=alice)
    assert refused.value.messages == [ERROR_SHARE_FORBIDDEN.format(team="Team A")]
    assert SavedPrompt.objects.get().team == team_a


def test_a_use_is_no_change_to_the_prompt(bob):
    prompt = prompt_create(user=bob, title="T", text="Hi {{name}}")
    changed = prompt.updated_at
    assert prompt_use(prompt=prompt, values={"name": "Ada"}) == "Hi Ada"
    prompt.refresh_from_db()
    assert (prompt.use_count, prompt.updated_at) == (1, changed) and prompt.last_used_at is not None


def test_the_admin_lists_prompts(admin_client, bob, team_a):
    prompt_create(user=bob, title="Bob's standup", text="Yesterday {{done}}")
    page = admin_client.get("/admin/agents/savedprompt/")
    assert page.status_code == 200 and "Bob&#x27;s standup" in page.content.decode()
    assert admin_client.get("/admin/agents/savedprompt/add/").status_code == 403
