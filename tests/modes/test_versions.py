"""A mode's versions: drafts change nothing live, publishing makes a version the mode's row and number,
a restore is a new version, two-person review is enforced by the services, and every action is audited."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import connection

from modes.models import AgentMode, CatalogEvent, ModeVersion
from modes.services import mode_make_default, mode_set_active
from modes.versioning import VERSIONED_FIELDS, snapshot_diff, snapshot_of
from modes.versions import (
    CODE_FORBIDDEN,
    CODE_NEEDS_REVIEW,
    draft_save,
    mode_create,
    version_approve,
    version_get,
    version_publish,
    version_reject,
)

pytestmark = pytest.mark.django_db
State = ModeVersion.State


@pytest.fixture
def publisher(django_user_model, password):
    user = django_user_model.objects.create_user("pia", password=password, is_staff=True)
    user.groups.add(Group.objects.get(name="Catalog curators"), Group.objects.get(name="Catalog publishers"))
    return user


@pytest.fixture
def drafter(django_user_model, password):
    user = django_user_model.objects.create_user("dan", password=password, is_staff=True)
    user.groups.add(Group.objects.get(name="Catalog curators"))
    return user


def actions(key: str) -> list[tuple[str, int | None]]:
    return [(e.action, e.version) for e in CatalogEvent.objects.filter(mode_key=key).order_by("id")]


def test_every_existing_mode_starts_with_its_published_version_1():
    for mode in AgentMode.objects.all():
        (version,) = mode.versions.all()
        assert (version.number, version.state, mode.version) == (1, State.PUBLISHED, 1)
        assert version.snapshot == snapshot_of(mode)
        assert set(version.snapshot) == set(VERSIONED_FIELDS)


def test_a_draft_changes_nothing_until_it_is_published(curator):
    draft = draft_save(mode="general", fields={"system_prompt": "Answer in haiku."}, author=curator, note="poetry")
    mode = AgentMode.objects.get(key="general")
    assert (draft.number, draft.state, mode.version) == (2, State.DRAFT, 1)
    assert mode.system_prompt != "Answer in haiku."
    assert draft.snapshot["display_name"] == mode.display_name  # unsent fields keep the published values

    published = version_publish(version=draft, by=curator)
    mode.refresh_from_db()
    assert (published.number, mode.version, mode.system_prompt) == (2, 2, "Answer in haiku.")
    assert version_get("general", 1).state == State.SUPERSEDED
    assert actions("general") == [("draft_saved", 2), ("published", 2)]


def test_restore_publishes_an_earlier_version_as_a_new_one(curator):
    original = AgentMode.objects.get(key="general").system_prompt
    version_publish(version=draft_save(mode="general", fields={"system_prompt": "v2"}, author=curator), by=curator)
    restored = version_publish(version=version_get("general", 1), by=curator)
    mode = AgentMode.objects.get(key="general")
    assert (restored.number, restored.restored_from, mode.version, mode.system_prompt) == (3, 1, 3, original)
    assert [v.state for v in mode.versions.order_by("number")] == [State.SUPERSEDED, State.SUPERSEDED, State.PUBLISHED]
    assert version_get("general", 1).snapshot["system_prompt"] == original  # nothing rewritten
    assert actions("general")[-1] == ("restored", 3)


def test_a_bad_field_is_refused_naming_it(curator):
    with pytest.raises(ValidationError) as caught:
        draft_save(mode="general", fields={"tool_policy": ["nope..x"]}, author=curator)
    assert "tool_policy" in caught.value.message_dict
    with pytest.raises(ValidationError) as caught:
        draft_save(mode="general", fields={"teams": ["no-such-team"]}, author=curator)
    assert "no-such-team" in str(caught.value)
    assert not ModeVersion.objects.filter(number=2).exists()


def test_publishing_needs_the_permission(drafter):
    draft = draft_save(mode="general", fields={"description": "Edited"}, author=drafter)
    with pytest.raises(ValidationError) as caught:
        version_publish(version=draft, by=drafter)
    assert caught.value.code == CODE_FORBIDDEN
    assert AgentMode.objects.get(key="general").version == 1


def test_two_person_review_publishes_only_what_someone_else_approved(settings, curator, publisher):
    settings.APTIX_CATALOG_REVIEW = "two-person"
    draft = draft_save(mode="general", fields={"system_prompt": "Reviewed"}, author=curator)
    with pytest.raises(ValidationError) as caught:
        version_publish(version=draft, by=curator)
    assert caught.value.code == CODE_NEEDS_REVIEW
    draft.refresh_from_db()
    assert draft.state == State.PENDING  # marked waiting for review, though the publish was refused
    with pytest.raises(ValidationError) as caught:
        version_approve(version=draft, by=curator)  # never one's own
    assert caught.value.code == CODE_FORBIDDEN
    assert AgentMode.objects.get(key="general").version == 1

    approved = version_approve(version=draft, by=publisher, comment="fine")
    assert (approved.state, approved.reviewer, approved.review_comment) == (State.APPROVED, publisher, "fine")
    version_publish(version=draft, by=curator)
    assert AgentMode.objects.get(key="general").system_prompt == "Reviewed"
    assert [a for a, _ in actions("general")] == ["draft_saved", "submitted", "approved", "published"]


def test_a_rejected_draft_is_never_published(settings, curator, publisher):
    settings.APTIX_CATALOG_REVIEW = "two-person"
    draft = draft_save(mode="general", fields={"system_prompt": "Nope"}, author=curator)
    rejected = version_reject(version=draft, by=publisher, comment="too terse")
    assert (rejected.state, rejected.review_comment) == (State.REJECTED, "too terse")
    with pytest.raises(ValidationError):
        version_approve(version=draft, by=publisher)
    settings.APTIX_CATALOG_REVIEW = "off"
    with pytest.raises(ValidationError):
        version_publish(version=draft, by=curator)
    assert AgentMode.objects.get(key="general").version == 1


def test_version_numbers_count_up_per_mode(curator):
    for n in range(3):
        draft_save(mode="general", fields={"description": f"d{n}"}, author=curator)
    draft_save(mode="data-analysis", fields={"description": "x"}, author=curator)
    assert list(version_get("general", 4).mode.versions.values_list("number", flat=True)) == [4, 3, 2, 1]
    assert version_get("data-analysis", 2).state == State.DRAFT


def test_a_new_mode_is_version_1_and_a_drafters_new_mode_stays_out_of_the_catalog(curator, drafter):
    new = AgentMode(key="legal", display_name="Legal", description="Contracts", system_prompt="Be careful.")
    version = mode_create(mode=new, by=curator, note="new")
    assert (version.number, version.state, AgentMode.objects.get(key="legal").version) == (1, State.PUBLISHED, 1)

    other = AgentMode(key="hr", display_name="HR", description="People", system_prompt="Be kind.")
    draft = mode_create(mode=other, by=drafter)
    row = AgentMode.objects.get(key="hr")
    assert (draft.state, row.is_active, row.version) == (State.DRAFT, False, 0)
    assert draft.snapshot["is_active"] is True
    row = AgentMode.objects.get(key="hr")
    with pytest.raises(ValidationError):
        version_publish(version=draft, by=drafter)
    version_publish(version=draft, by=curator)
    row.refresh_from_db()
    assert (row.is_active, row.version) == (True, 1)


def test_catalog_actions_are_audited(curator):
    mode = AgentMode.objects.get(key="data-analysis")
    mode_make_default(mode=mode, by=curator)
    mode_set_active(mode=AgentMode.objects.get(key="general"), active=False, by=curator)
    mode_set_active(mode=AgentMode.objects.get(key="general"), active=True, by=curator)
    rows = [(e.action, e.mode_key, e.user) for e in CatalogEvent.objects.order_by("id")]
    assert rows == [
        ("default_changed", "data-analysis", curator),
        ("deactivated", "general", curator),
        ("activated", "general", curator),
    ]


def test_the_diff_shows_the_prompt_by_line_and_lists_by_item(curator):
    before = snapshot_of(AgentMode.objects.get(key="data-analysis"))
    after = {**before, "system_prompt": before["system_prompt"] + "\nAlways cite the table.", "tool_policy": ["sql.*"]}
    changes = {c["name"]: c for c in snapshot_diff(before, after)}
    assert set(changes) == {"prompt", "tools"}
    assert "+Always cite the table." in changes["prompt"]["lines"]
    assert "sql.*" in before["tool_policy"]
    assert changes["tools"]["added"] == []
    assert changes["tools"]["removed"] == [item for item in before["tool_policy"] if item != "sql.*"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_drafts_get_distinct_consecutive_numbers(curator):
    """Curators saving drafts of one mode at once: the mode's row lock serialises them, so each gets
    its own number and none fails on the unique (mode, number)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (SQLite serialises writers anyway)")
    count = 8
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def save(n: int) -> None:
        from django.db import connections

        try:
            barrier.wait()
            draft_save(mode="general", fields={"description": f"draft {n}"}, author=curator)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=save, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    numbers = sorted(ModeVersion.objects.filter(mode__key="general").values_list("number", flat=True))
    assert numbers == list(range(1, count + 2))


def test_a_mode_written_without_versions_numbers_its_first_draft_after_its_own(curator):
    mode = AgentMode.objects.create(key="bare", display_name="Bare", description="Made directly")
    draft = draft_save(mode=mode, fields={"system_prompt": "Now versioned."}, author=curator)
    assert draft.number == 2
    version_publish(version=draft, by=curator)
    assert AgentMode.objects.get(key="bare").version == 2
