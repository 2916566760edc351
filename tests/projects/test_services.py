"""Projects' services: creating, changing and deleting a project, its members (the whole team or the
chosen members of it), and that nobody outside those members can find it."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from aptix.models import Membership
from projects.models import Project
from projects.services import (
    ERROR_DELETE,
    ERROR_MANAGE_MEMBERS,
    ERROR_MEMBER_NOT_IN_TEAM,
    ERROR_NAME_EMPTY,
    ERROR_NAME_TAKEN,
    ERROR_NOT_IN_TEAM,
    ProjectNotFoundError,
    project_create,
    project_delete,
    project_get,
    project_list,
    project_member,
    project_members,
    project_update,
)
from tests.helpers.catalogs import team_only_mode

pytestmark = pytest.mark.django_db


@pytest.fixture
def dave(django_user_model, password, team_a):
    user = django_user_model.objects.create_user(username="dave", password=password)
    Membership.objects.create(team=team_a, user=user)
    return user


def test_a_project_is_the_whole_teams_by_default(team_a, alice, bob, carol):
    project = project_create(
        team=team_a,
        user=alice,
        name="  Sales Q3 ",
        description="The quarter's numbers",
        instructions="Answer in euros.",
        default_mode="Data-Analysis",
    )
    assert (project.name, project.default_mode, project.whole_team) == ("Sales Q3", "data-analysis", True)
    assert project.created_by == alice and len(project.id) == 32
    assert project_member(bob, project) and project_member(alice, project)
    assert not project_member(carol, project)
    assert [u.username for u in project_members(project=project)] == ["alice", "bob"]
    assert list(project_list(user=bob)) == [project]
    assert project_get(user=bob, project_id=project.id) == project


def test_chosen_members_only_and_everyone_else_gets_not_found(team_a, alice, bob, carol, dave):
    project = project_create(team=team_a, user=alice, name="Board", members=["bob"])
    assert project.whole_team is False
    assert [u.username for u in project_members(project=project)] == ["alice", "bob"]  # the creator too
    assert project_member(bob, project) and not project_member(dave, project)
    for outsider in (dave, carol):
        assert list(project_list(user=outsider)) == []
        with pytest.raises(ProjectNotFoundError):
            project_get(user=outsider, project_id=project.id)
    for crafted in ("0" * 32, "not-an-id", None, project.id.upper()):
        with pytest.raises(ProjectNotFoundError):
            project_get(user=alice, project_id=crafted)


def test_a_member_who_leaves_the_team_leaves_its_projects(team_a, alice, bob):
    project = project_create(team=team_a, user=alice, name="Board", members=["bob"])
    Membership.objects.filter(user=bob).delete()
    assert not project_member(bob, project)
    with pytest.raises(ProjectNotFoundError):
        project_get(user=bob, project_id=project.id)


def test_names_are_unique_per_team_whatever_the_case(team_a, team_b, alice, carol):
    project_create(team=team_a, user=alice, name="Policies")
    with pytest.raises(ValidationError) as taken:
        project_create(team=team_a, user=alice, name="POLICIES")
    assert taken.value.message_dict == {"name": [ERROR_NAME_TAKEN]}
    assert project_create(team=team_b, user=carol, name="policies").team == team_b  # another team's: fine
    with pytest.raises(ValidationError) as empty:
        project_create(team=team_a, user=alice, name="  ")
    assert empty.value.message_dict == {"name": [ERROR_NAME_EMPTY]}


def test_bad_fields_are_refused_by_name_and_nothing_is_written(team_a, team_b, alice, carol):
    b_only = team_only_mode(team_b)
    with pytest.raises(ValidationError) as mode:
        project_create(team=team_a, user=alice, name="X", default_mode=b_only.key)
    assert list(mode.value.message_dict) == ["default_mode"]
    assert "Unknown or inactive mode" in mode.value.message_dict["default_mode"][0]
    with pytest.raises(ValidationError) as member:
        project_create(team=team_a, user=alice, name="X", members=["carol"])
    assert member.value.message_dict == {"members": [ERROR_MEMBER_NOT_IN_TEAM.format(who="'carol'")]}
    with pytest.raises(ValidationError) as text:
        project_create(team=team_a, user=alice, name="X", instructions=["no"])
    assert list(text.value.message_dict) == ["instructions"]
    with pytest.raises(PermissionDenied, match=ERROR_NOT_IN_TEAM):
        project_create(team=team_b, user=alice, name="X")
    assert not Project.objects.exists()


def test_members_edit_but_only_the_creator_or_an_owner_changes_members_or_deletes(team_a, alice, bob, dave):
    project = project_create(team=team_a, user=bob, name="Ops")
    project_update(project=project, user=dave, instructions="Be brief.", default_mode="")
    project.refresh_from_db()
    assert project.instructions == "Be brief."
    with pytest.raises(PermissionDenied, match=ERROR_MANAGE_MEMBERS):
        project_update(project=project, user=dave, members=["dave"])
    with pytest.raises(PermissionDenied, match=ERROR_DELETE):
        project_delete(project=project, user=dave)
    project_update(project=project, user=alice, members=["alice", "dave"])  # alice owns the team
    assert [u.username for u in project_members(project=project)] == ["alice", "dave"]
    project_update(project=project, user=bob, members=None)  # bob made it: back to the whole team
    assert [u.username for u in project_members(project=project)] == ["alice", "bob", "dave"]
    project_delete(project=project, user=bob)
    assert not Project.objects.exists()
