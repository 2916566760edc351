"""Team catalogs in the catalog itself: which modes a team may use, a team's own default mode (who
sets it, and what happens when it stops applying), and the admin's teams field."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from aptix.models import Team
from modes.catalog import (
    ModeValidationError,
    catalog_service,
    default_mode_for_team,
    mode_validate,
    modes_for_team,
)
from modes.models import AgentMode, CatalogEvent, TeamDefaultMode
from modes.services import ERROR_DEFAULT_FOR_EVERY_TEAM, mode_make_default
from modes.teams import ERROR_NOT_TEAM_OWNER, team_default_mode_set, team_default_rows
from tests.helpers import inline_db, mode_admin_form
from tests.helpers.catalogs import B_ONLY, team_only_mode

pytestmark = pytest.mark.django_db

SEED = ["general", "ddr-authoring", "workflow-authoring", "data-analysis"]


@pytest.fixture
def b_only(team_b):
    return team_only_mode(team_b)


# --- which modes a team may use -----------------------------------------------------------------


def test_a_mode_without_teams_is_for_every_team_and_one_with_teams_only_for_those(team_a, team_b, b_only):
    assert [m.key for m in modes_for_team(team_a)] == SEED
    assert [m.key for m in modes_for_team(team_b)] == [*SEED, B_ONLY]  # the catalog's order (B's is 50th)
    assert B_ONLY not in [m.key for m in modes_for_team(None)]  # no team: only the modes for every team
    b_only.teams.add(team_a)
    assert B_ONLY in [m.key for m in modes_for_team(team_a)]


def test_a_mode_another_team_may_use_is_refused_exactly_as_an_unknown_mode(team_a, team_b, b_only):
    with pytest.raises(ModeValidationError) as foreign:
        mode_validate(B_ONLY, team=team_a)
    with pytest.raises(ModeValidationError) as unknown:
        mode_validate("astrology", team=team_a)
    valid = "Valid modes: general, ddr-authoring, workflow-authoring, data-analysis."
    assert str(foreign.value) == f"Unknown or inactive mode '{B_ONLY}'. {valid}"
    assert str(unknown.value) == f"Unknown or inactive mode 'astrology'. {valid}"
    assert mode_validate(f" {B_ONLY.upper()} ", team=team_b).key == B_ONLY


def test_deactivating_a_team_mode_takes_it_from_the_team_as_today(team_b, b_only):
    b_only.is_active = False
    b_only.save()
    assert B_ONLY not in [m.key for m in modes_for_team(team_b)]
    with pytest.raises(ModeValidationError, match=f"Unknown or inactive mode '{B_ONLY}'"):
        mode_validate(B_ONLY, team=team_b)


@inline_db
async def test_the_catalog_service_lists_a_teams_modes_and_marks_its_default(team_a, team_b, b_only):
    await TeamDefaultMode.objects.acreate(team=team_b, mode=b_only)
    for_a = await catalog_service.get_modes_for_team(team_a)
    for_b = await catalog_service.get_modes_for_team(team_b)
    assert [m.key for m in for_a] == SEED and [m.key for m in for_a if m.is_default] == ["general"]
    assert B_ONLY in [m.key for m in for_b] and [m.key for m in for_b if m.is_default] == [B_ONLY]
    assert B_ONLY in [m.key for m in await catalog_service.get_all_modes()]  # the whole catalog, as before


# --- a team's own default mode -------------------------------------------------------------------


def test_an_owner_sets_the_teams_default_and_a_member_cannot(team_a, alice, bob):
    choice = team_default_mode_set(team=team_a, mode="data-analysis", user=alice)
    assert choice is not None and (choice.mode.key, choice.set_by) == ("data-analysis", alice)
    assert default_mode_for_team(team_a) == "data-analysis"
    with pytest.raises(PermissionDenied, match=ERROR_NOT_TEAM_OWNER):
        team_default_mode_set(team=team_a, mode="ddr-authoring", user=bob)
    assert default_mode_for_team(team_a) == "data-analysis"
    assert team_default_mode_set(team=team_a, mode="", user=alice) is None  # back to the catalog's
    assert default_mode_for_team(team_a) == "general" and not TeamDefaultMode.objects.exists()
    team_default_mode_set(team=team_a, mode="", user=alice)  # nothing to clear: nothing to audit


def test_a_teams_default_changed_or_cleared_is_in_the_catalogs_audit(team_a, alice):
    team_default_mode_set(team=team_a, mode="data-analysis", user=alice)
    team_default_mode_set(team=team_a, mode="data-analysis", user=alice)  # the same again: no change
    team_default_mode_set(team=team_a, mode="", user=alice)
    rows = list(
        CatalogEvent.objects.filter(action=CatalogEvent.Action.DEFAULT_CHANGED)
        .order_by("id")
        .values_list("mode_key", "user", "version", "note")
    )
    assert rows == [
        ("data-analysis", alice.pk, 1, "team team-a's default"),
        ("data-analysis", alice.pk, None, "no longer team team-a's default: the catalog's default applies"),
    ]


def test_an_owner_of_another_team_cannot_set_this_ones(team_a, team_b, carol):
    from aptix.models import Membership

    Membership.objects.filter(user=carol).update(role=Membership.Role.OWNER)  # carol owns team B only
    with pytest.raises(PermissionDenied):
        team_default_mode_set(team=team_a, mode="data-analysis", user=carol)


def test_an_administrator_or_a_curator_sets_any_teams_default(team_a, django_user_model, curator, auditor):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "x")
    team_default_mode_set(team=team_a, mode="ddr-authoring", user=admin)
    assert default_mode_for_team(team_a) == "ddr-authoring"
    team_default_mode_set(team=team_a, mode="workflow-authoring", user=curator)
    assert default_mode_for_team(team_a) == "workflow-authoring"
    with pytest.raises(PermissionDenied):
        team_default_mode_set(team=team_a, mode="general", user=auditor)


def test_a_team_default_must_be_a_mode_the_team_may_use(team_a, alice, b_only):
    with pytest.raises(ValidationError) as refused:
        team_default_mode_set(team=team_a, mode=B_ONLY, user=alice)
    assert refused.value.message_dict["mode"] == [
        f"Unknown or inactive mode '{B_ONLY}'. Valid modes: general, ddr-authoring, workflow-authoring, data-analysis."
    ]
    assert not TeamDefaultMode.objects.exists()


@pytest.mark.parametrize("how", ["deactivated", "closed to the team", "deleted"])
def test_a_team_default_that_stops_applying_falls_back_to_the_catalogs(team_b, b_only, how):
    TeamDefaultMode.objects.create(team=team_b, mode=b_only)
    assert default_mode_for_team(team_b) == B_ONLY
    if how == "deactivated":
        b_only.is_active = False
        b_only.save()
    elif how == "closed to the team":
        b_only.teams.set([Team.objects.create(name="Team C", slug="team-c")])
    else:
        b_only.delete()
    assert default_mode_for_team(team_b) == "general"
    [row] = team_default_rows(user=_member(team_b))
    assert row.default_key == "general" and not row.applies


def test_a_deactivated_team_default_applies_again_once_reactivated(team_b, b_only):
    TeamDefaultMode.objects.create(team=team_b, mode=b_only)
    AgentMode.objects.filter(pk=b_only.pk).update(is_active=False)
    assert default_mode_for_team(team_b) == "general"
    AgentMode.objects.filter(pk=b_only.pk).update(is_active=True)
    assert default_mode_for_team(team_b) == B_ONLY


def _member(team):
    from django.contrib.auth import get_user_model

    from aptix.models import Membership

    user = get_user_model().objects.create_user(username=f"member-{team.slug}", password="x")
    Membership.objects.create(team=team, user=user)
    return user


# --- the admin ---------------------------------------------------------------------------------


def test_the_mode_admin_shows_teams_and_says_none_means_every_team(client, curator, password, team_b, b_only):
    client.login(username=curator.username, password=password)
    page = client.get(reverse("admin:modes_agentmode_change", args=[b_only.pk])).content.decode()
    assert 'name="teams"' in page and "None: every team." in page
    listing = client.get(reverse("admin:modes_agentmode_changelist")).content.decode()
    assert "Every team" in listing and "Team B" in listing


def test_a_curator_limits_a_mode_to_teams_in_the_admin(client, curator, password, team_a, team_b):
    client.login(username=curator.username, password=password)
    mode = AgentMode.objects.get(key="data-analysis")
    response = client.post(
        reverse("admin:modes_agentmode_change", args=[mode.pk]), mode_admin_form(mode, teams=[team_b.pk])
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert list(mode.teams.all()) == [team_b]
    assert "data-analysis" not in [m.key for m in modes_for_team(team_a)]


def test_the_catalog_default_stays_for_every_team(client, curator, password, team_b):
    client.login(username=curator.username, password=password)
    general = AgentMode.objects.get(key="general")
    response = client.post(
        reverse("admin:modes_agentmode_change", args=[general.pk]), mode_admin_form(general, teams=[team_b.pk])
    )
    assert response.status_code == 200 and ERROR_DEFAULT_FOR_EVERY_TEAM in response.content.decode().replace(
        "&#x27;", "'"
    )
    assert not general.teams.exists()
    # ... and a mode for chosen teams cannot be made the default until it is for every team again.
    mode = AgentMode.objects.get(key="data-analysis")
    mode.teams.set([team_b])
    with pytest.raises(ValidationError, match="for every team"):
        mode_make_default(mode=mode)
    assert AgentMode.objects.get(is_default=True).key == "general"


def test_the_team_default_admin_refuses_a_mode_the_team_cannot_use(client, password, team_a, b_only, django_user_model):
    django_user_model.objects.create_superuser("root", "root@example.com", password)
    client.login(username="root", password=password)
    url = reverse("admin:modes_teamdefaultmode_add")
    refused = client.post(url, {"team": team_a.pk, "mode": b_only.pk})
    assert refused.status_code == 200 and f"Unknown or inactive mode &#x27;{B_ONLY}&#x27;" in refused.content.decode()
    accepted = client.post(url, {"team": team_a.pk, "mode": AgentMode.objects.get(key="ddr-authoring").pk})
    assert accepted.status_code == 302
    assert default_mode_for_team(team_a) == "ddr-authoring"


def test_the_team_default_change_page_refuses_a_mode_the_team_cannot_use(client, password, team_a, b_only, curator):
    choice = TeamDefaultMode.objects.create(team=team_a, mode=AgentMode.objects.get(key="ddr-authoring"))
    client.login(username=curator.username, password=password)
    url = reverse("admin:modes_teamdefaultmode_change", args=[choice.pk])
    refused = client.post(url, {"mode": b_only.pk})
    assert refused.status_code == 200 and f"Unknown or inactive mode &#x27;{B_ONLY}&#x27;" in refused.content.decode()
    assert client.post(url, {"mode": AgentMode.objects.get(key="data-analysis").pk}).status_code == 302
    assert default_mode_for_team(team_a) == "data-analysis" and TeamDefaultMode.objects.count() == 1
    assert "Team default modes" in client.get(reverse("admin:index")).content.decode()
