"""Team catalogs in the pages: the home composer, the mode badge's catalog, the sidebar's filter and the
Settings page offer a member of team A none of team B's modes; a crafted post of one is refused as an
unknown mode; a team's owner sets its default mode on Settings → Teams, a member only reads it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import AgentSession
from agents.sessions import session_create
from modes.models import ModeHistory, TeamDefaultMode
from tests.helpers.catalogs import B_ONLY, team_only_mode

pytestmark = pytest.mark.django_db

VALID_FOR_A = "Valid modes: general, ddr-authoring, workflow-authoring, data-analysis."


@pytest.fixture
def b_only(team_b):
    return team_only_mode(team_b)


def page(client, username, password, url) -> str:
    client.login(username=username, password=password)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_home_composer_offers_only_the_teams_modes(client, alice, carol, password, b_only):
    html = page(client, "alice", password, reverse("home"))
    assert f'value="{B_ONLY}"' not in html and "B Secrets" not in html
    assert 'value="data-analysis"' in html
    html = page(client, "carol", password, reverse("home"))
    assert f'value="{B_ONLY}"' in html and "B Secrets" in html


def test_the_home_composer_starts_on_the_teams_default(client, team_a, alice, password):
    TeamDefaultMode.objects.create(team=team_a, mode_id=_mode_id("ddr-authoring"))
    html = page(client, "alice", password, reverse("home"))
    assert '<option value="ddr-authoring" selected>' in html


def test_the_mode_badges_catalog_and_the_sidebar_filter_offer_only_the_teams_modes(
    client, team_a, team_b, alice, carol, password, b_only
):
    session = session_create(team=team_a, user=alice)
    html = page(client, "alice", password, reverse("session-detail", args=[session.id]))
    assert 'id="mode-catalog"' in html and "Switch to Data Analysis" in html
    assert B_ONLY not in html and "B Secrets" not in html
    theirs = session_create(team=team_b, user=carol)
    html = page(client, "carol", password, reverse("session-detail", args=[theirs.id]))
    assert "Switch to B Secrets" in html


def test_a_crafted_switch_to_another_teams_mode_is_refused_as_an_unknown_mode(client, team_a, alice, password, b_only):
    session = session_create(team=team_a, user=alice)
    client.login(username="alice", password=password)
    answers = [client.post(reverse("session-mode", args=[session.id]), {"mode": m}) for m in [B_ONLY, "astrology"]]
    assert [a.status_code for a in answers] == [422, 422]
    texts = [a.content.decode().replace("&#x27;", "'") for a in answers]
    assert f"Unknown or inactive mode '{B_ONLY}'. {VALID_FOR_A}" in texts[0]
    assert f"Unknown or inactive mode 'astrology'. {VALID_FOR_A}" in texts[1]
    session.refresh_from_db()
    assert session.mode == "general" and not ModeHistory.objects.exists()


def test_a_crafted_new_session_in_another_teams_mode_is_refused_as_an_unknown_mode(
    client, team_a, alice, password, b_only
):
    client.login(username="alice", password=password)
    for mode in [B_ONLY, "astrology"]:
        response = client.post(
            reverse("session-new"), {"team": team_a.id, "mode": mode, "execution": "ask", "message": "hi"}
        )
        assert response.status_code == 400
        assert f"Select a valid choice. {mode} is not one of the available choices." in response.content.decode()
    assert not AgentSession.objects.exists()


def test_a_member_of_both_teams_cannot_start_team_bs_mode_in_team_a(client, team_a, team_b, alice, password, b_only):
    from aptix.models import Membership

    Membership.objects.create(team=team_b, user=alice)
    client.login(username="alice", password=password)
    response = client.post(
        reverse("session-new"), {"team": team_a.id, "mode": B_ONLY, "execution": "ask", "message": "hi"}
    )
    assert response.status_code == 400
    assert f"Unknown or inactive mode &#x27;{B_ONLY}&#x27;. {VALID_FOR_A}" in response.content.decode()
    assert not AgentSession.objects.exists()


def test_a_composer_of_several_teams_says_which_team_may_use_each_mode(
    client, team_a, team_b, alice, carol, password, b_only
):
    from aptix.models import Membership

    Membership.objects.create(team=team_b, user=alice)
    TeamDefaultMode.objects.create(team=team_b, mode=b_only)
    html = page(client, "alice", password, reverse("home"))
    assert f'<option value="{B_ONLY}" data-teams="{team_b.pk}">B Secrets</option>' in html
    assert f'data-teams="{team_a.pk} {team_b.pk}">Data Analysis</option>' in html
    assert f'"{team_a.pk}": "general", "{team_b.pk}": "{B_ONLY}"' in html  # each team's default, for the script
    single = page(client, "carol", password, reverse("home"))  # one team: nothing to follow
    assert "data-teams" not in single and "team-default-modes" not in single


def test_the_settings_default_mode_choice_offers_only_the_users_teams_modes(client, alice, password, b_only):
    html = page(client, "alice", password, reverse("settings"))
    assert f'value="{B_ONLY}"' not in html
    response = client.post(
        reverse("settings-preferences"), {"default_mode": B_ONLY, "default_execution": "ask", "theme": "system"}
    )
    assert response.status_code == 400


# --- Settings → Teams: the team's default mode ---------------------------------------------------


def test_an_owner_picks_the_teams_default_and_a_new_session_starts_there(client, team_a, alice, password, b_only):
    html = page(client, "alice", password, reverse("settings"))
    assert 'id="teams-heading"' in html and 'name="mode" id="team-default-mode-team-a"' in html
    assert f'value="{B_ONLY}"' not in html  # only the team's modes
    url = reverse("settings-team-default-mode", args=[team_a.slug])
    response = client.post(url, {"mode": "data-analysis"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert '<option value="data-analysis" selected>' in response.content.decode()
    assert "new sessions of Team A start in Data Analysis" in response.content.decode()
    assert session_create(team=team_a, user=alice).mode == "data-analysis"


def test_an_owner_cannot_pick_another_teams_mode(client, team_a, alice, password, b_only):
    client.login(username="alice", password=password)
    url = reverse("settings-team-default-mode", args=[team_a.slug])
    response = client.post(url, {"mode": B_ONLY}, headers={"HX-Request": "true"})
    assert response.status_code == 400
    assert f"Unknown or inactive mode &#x27;{B_ONLY}&#x27;. {VALID_FOR_A}" in response.content.decode()
    assert not TeamDefaultMode.objects.exists()


def test_a_member_reads_the_teams_default_and_cannot_set_it(client, team_a, bob, password):
    TeamDefaultMode.objects.create(team=team_a, mode_id=_mode_id("ddr-authoring"))
    html = page(client, "bob", password, reverse("settings"))
    assert "team-default-mode-team-a" not in html  # no form
    assert '<span class="team-default-name">DDR Authoring</span>' in html
    url = reverse("settings-team-default-mode", args=[team_a.slug])
    response = client.post(url, {"mode": "general"}, headers={"HX-Request": "true"})
    assert response.status_code == 403
    assert "Only the team&#x27;s owners and administrators" in response.content.decode()
    assert response.content.decode().count("<select") == 0
    response = client.post(url, {"mode": "general"})  # without JavaScript: the page, saying why
    assert response.status_code == 403
    assert TeamDefaultMode.objects.get(team=team_a).mode.key == "ddr-authoring"


def test_another_teams_settings_are_not_found(client, team_a, carol, password):
    client.login(username="carol", password=password)
    response = client.post(reverse("settings-team-default-mode", args=[team_a.slug]), {"mode": "general"})
    assert response.status_code == 404 and not TeamDefaultMode.objects.exists()


def test_signing_in_comes_first(client, team_a):
    response = client.post(reverse("settings-team-default-mode", args=[team_a.slug]), {"mode": "general"})
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_page_says_when_a_chosen_default_no_longer_applies(client, team_b, carol, password, b_only):
    from aptix.models import Membership

    Membership.objects.filter(user=carol).update(role=Membership.Role.OWNER)
    TeamDefaultMode.objects.create(team=team_b, mode=b_only)
    b_only.is_active = False
    b_only.save()
    html = page(client, "carol", password, reverse("settings"))
    assert f"The chosen default, <code>{B_ONLY}</code>, is no longer available to this team" in html
    assert session_create(team=team_b, user=carol).mode == "general"


def _mode_id(key: str) -> str:
    from modes.models import AgentMode

    return AgentMode.objects.get(key=key).pk


def test_a_proposal_of_another_teams_mode_carries_no_consent(team_a, team_b, b_only):
    from agents.web.timeline import proposal_choices
    from modes.proposal import proposal_text

    answer = proposal_text("B Secrets", B_ONLY)
    assert [c["mode"] for c in proposal_choices(answer, team=team_a.pk)] == ["", "", ""]  # only the replies
    assert [c["mode"] for c in proposal_choices(answer, team=team_b.pk)] == ["", B_ONLY, B_ONLY]
