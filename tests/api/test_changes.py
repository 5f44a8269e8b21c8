"""GET /api/v1/changes and POST /api/v1/changes/{id}/revert (SPEC §12)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from admissions.actions import record_verdict
from memories.core.effects import SUPERSEDE_RULE
from memories.store.models import AuditEntry, Fact
from memories.store.vocabulary import load_vocabulary
from memories.write.actions import invalidate_fact
from tests.changes_world import (
    backdated_closings,
    maintain,
    maintenance_closings,
    one_two_three,
    state,
    write,
    write_path_supersession,
)

pytestmark = pytest.mark.django_db


def test_the_list_holds_write_path_supersessions_with_the_writer_newest_first(member, agent_for):
    entry, older, newer, _ = write_path_supersession(member)
    invalidate_fact(actor=member, fact_id=newer.pk, reason="a human action, not listed")
    body = agent_for(member).get("/changes", scope="project").json()
    assert [c["id"] for c in body["results"]] == [entry.pk]
    [change] = body["results"]
    assert change["rule"] == SUPERSEDE_RULE
    assert change["triggered_by"] == member.username
    assert change["after"]["fact"] == str(older.pk)
    assert change["reverted"] is None and body["next"] is None


def test_the_list_filters_by_rule_prefix_and_pages_with_signed_cursors(member, agent_for):
    for i in range(3):
        write(member, f"svc-{i}", "core/has-version", "1.0")
        write(member, f"svc-{i}", "core/has-version", "1.1")
    agent = agent_for(member)
    first = agent.get("/changes", rule="write path", limit=2).json()
    assert len(first["results"]) == 2 and first["next"]
    second = agent.get("/changes", rule="write path", limit=2, cursor=first["next"]).json()
    assert len(second["results"]) == 1 and second["next"] is None
    ids = [c["id"] for c in first["results"] + second["results"]]
    assert ids == sorted(ids, reverse=True)
    assert agent.get("/changes", rule="crawler").json()["results"] == []
    forged = agent.get("/changes", cursor="not-a-cursor")
    assert forged.status_code == 400 and forged.json()["field"] == "cursor"


def test_an_outsider_sees_no_changes_and_no_scope(member, outsider, agent_for):
    write_path_supersession(member)
    agent = agent_for(outsider)
    assert agent.get("/changes").json()["results"] == []
    assert agent.get("/changes", scope="project").status_code == 404


def test_a_steward_reverts_a_change_with_a_reason(member, steward, agent_for):
    entry, older, _, before = write_path_supersession(member)
    response = agent_for(steward).post(f"/changes/{entry.pk}/revert", {"reason": "premature"})
    assert response.status_code == 200, response.content
    reverted = response.json()["reverted"]
    assert (reverted["by"], reverted["reason"]) == (steward.username, "premature")
    assert state(older) == before
    again = agent_for(steward).post(f"/changes/{entry.pk}/revert", {"reason": "again"})
    assert again.status_code == 409
    assert again.json() == {"code": "state_conflict", "message": "this change was already reverted"}


@pytest.mark.parametrize("body", [{"reason": "  "}, {}, {"reason": 3}])
def test_a_revert_without_a_reason_is_refused_and_nothing_written(member, steward, agent_for, body):
    entry, older, _, _ = write_path_supersession(member)
    closed, written = state(older), AuditEntry.objects.count()
    response = agent_for(steward).post(f"/changes/{entry.pk}/revert", body)
    assert response.status_code == 400
    assert response.json()["field"] == "reason"
    assert state(older) == closed and AuditEntry.objects.count() == written


def test_a_member_is_forbidden_and_an_outsider_finds_nothing(member, outsider, agent_for):
    entry, older, _, _ = write_path_supersession(member)
    closed = state(older)
    forbidden = agent_for(member).post(f"/changes/{entry.pk}/revert", {"reason": "mine"})
    assert forbidden.status_code == 403 and forbidden.json()["code"] == "forbidden"
    missing = agent_for(outsider).post(f"/changes/{entry.pk}/revert", {"reason": "x"})
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert agent_for(outsider).post("/changes/nope/revert", {"reason": "x"}).status_code == 404
    assert state(older) == closed
    assert Fact.objects.get(pk=older.pk).superseded_by_id is not None


# --- query count -------------------------------------------------------------------

# The page, its reverts. The token check, the account's roles and the scope
# (one prepared statement each, on psycopg cursors) are not among the counted.
CHANGE_QUERIES = {"member": 2, "steward": 2}


@pytest.fixture
def many_changes(member, steward, settings):
    settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = 3600
    load_vocabulary()
    for i in range(55):
        write(member, f"svc-{i:02}", "core/has-version", "1.0")
        write(member, f"svc-{i:02}", "core/has-version", "1.1")
    entries = list(AuditEntry.objects.automatic().order_by("-id")[:10])
    for entry in entries:  # some reverted: their reverts are read once for the page
        AuditEntry.objects.create(
            at=entry.at,
            scope_id=entry.scope_id,
            action="reverted",
            target_type="auditentry",
            target_id=str(entry.pk),
            actor=steward,
            reason="test",
        )


@pytest.mark.parametrize("role", ["member", "steward"])
def test_the_list_makes_the_same_queries_for_5_and_50_changes(
    many_changes, request, agent_for, role
):
    agent = agent_for(request.getfixturevalue(role))
    agent.get("/changes", limit=1)
    counts = []
    for limit in (5, 50):
        with CaptureQueriesContext(connection) as captured:
            response = agent.get("/changes", scope="project", limit=limit)
        assert len(response.json()["results"]) == limit
        counts.append(len(captured))
    assert counts[0] == counts[1] == CHANGE_QUERIES[role]


def test_a_revert_of_the_first_of_two_supersessions_leaves_the_slot_contested(
    member, steward, agent_for
):
    """1, 2 (X), 3 (Y), X reverted: 1 and 3 are both disputed, the slot contested, and stays so."""
    (one, _, three), x, _ = one_two_three(member)
    for fact in (one, three):
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="checked")
    response = agent_for(steward).post(f"/changes/{x.pk}/revert", {"reason": "the 2 was a mistake"})
    assert response.status_code == 200, response.content
    reverted_at = AuditEntry.objects.get(pk=response.json()["reverted"]["revert"]).at
    agent = agent_for(member)

    def contested():
        body = agent.get(
            "/truth",
            scope="project",
            subject="AuthService",
            predicate="core/has-version",
            contested="true",
        ).json()
        assert body["results"] == []  # both admitted, neither undisputed: nothing to serve
        [slot] = body["contested"]
        return {
            value["fact"]["id"]: [dispute["kind"] for dispute in value["disputes"]]
            for value in slot["values"]
        }

    assert contested() == {str(one.pk): ["reverted"], str(three.pk): ["reverted"]}
    for minutes in (1, 2):
        maintain(one, now=reverted_at + timedelta(minutes=minutes))
    assert contested() == {str(one.pk): ["reverted"], str(three.pk): ["reverted"]}
    assert list(maintenance_closings()) == [] and backdated_closings() == []
    again = agent_for(steward).post(f"/changes/{x.pk}/revert", {"reason": "again"})
    assert again.status_code == 409
    assert again.json()["message"] == "this change was already reverted"
