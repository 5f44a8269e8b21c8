"""GET /conflicts and POST /conflicts/{id}/resolve (SPEC §3, §10)."""

import pytest

from memories.store.models import Conflict, Fact
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db


def outranked(actor, subject="AuthService", **extra):
    code = assert_fact(actor=actor, data=fact_body(subject=subject, confidence=0.95, **extra))
    note = assert_fact(
        actor=actor,
        data=fact_body(subject=subject, object="3.0.0", source_type="agent-note", **extra),
    )
    return code.fact, note.fact, note.conflict


def test_conflicts_list_with_their_candidates_and_roles(member, agent_for):
    code, note, conflict = outranked(member)
    body = agent_for(member).get("/conflicts", scope="project").json()
    assert body["next"] is None
    [listed] = body["results"]
    assert listed["id"] == str(conflict.pk)
    assert (listed["kind"], listed["status"], listed["resolution"]) == ("outranked", "open", None)
    assert [(f["id"], f["role"]) for f in listed["facts"]] == [
        (str(code.pk), "existing"),
        (str(note.pk), "incoming"),
    ]
    assert [f["disputed"] for f in listed["facts"]] == [False, True]


def test_conflicts_filter_by_status_and_page_in_a_stable_order(member, steward, agent_for):
    conflicts = [outranked(member, subject=f"svc-{n}")[2] for n in range(3)]
    agent = agent_for(member)
    agent_for(steward).post(
        f"/conflicts/{conflicts[0].pk}/resolve", {"action": "dismiss", "reason": "noise"}
    )
    open_ids = [c["id"] for c in agent.get("/conflicts", status="open").json()["results"]]
    assert open_ids == [str(c.pk) for c in conflicts[1:]]
    resolved = agent.get("/conflicts", status="resolved").json()["results"]
    assert [c["id"] for c in resolved] == [str(conflicts[0].pk)]
    assert resolved[0]["resolved_by"] == "stella" and resolved[0]["reason"] == "noise"

    first = agent.get("/conflicts", limit=2).json()
    second = agent.get("/conflicts", limit=2, cursor=first["next"]).json()
    assert second["next"] is None
    paged = [c["id"] for c in first["results"] + second["results"]]
    assert paged == [str(c.pk) for c in conflicts]


def test_outsiders_see_no_conflicts_and_no_scope(member, outsider, agent_for):
    outranked(member)
    agent = agent_for(outsider)
    assert agent.get("/conflicts").json()["results"] == []
    hidden = agent.get("/conflicts", scope="project")
    assert hidden.status_code == 404
    assert hidden.json() == agent.get("/conflicts", scope="missing").json()


def test_a_conflict_among_another_members_private_facts_is_not_listed(member, author, agent_for):
    outranked(author, bucket="user")
    assert agent_for(member).get("/conflicts").json()["results"] == []
    assert len(agent_for(author).get("/conflicts").json()["results"]) == 1


def test_stewards_of_the_scope_list_a_conflict_among_private_facts(
    member, author, steward, scope_steward, outsider, agent_for
):
    outranked(author, bucket="user")
    assert len(agent_for(scope_steward).get("/conflicts").json()["results"]) == 1
    assert len(agent_for(steward).get("/conflicts").json()["results"]) == 1
    assert agent_for(outsider).get("/conflicts").json()["results"] == []


def test_a_steward_keeps_one_candidate_and_the_other_is_invalidated(member, steward, agent_for):
    code, note, conflict = outranked(member)
    response = agent_for(steward).post(
        f"/conflicts/{conflict.pk}/resolve",
        {"action": "keep", "keep": [str(note.pk)], "reason": "checked the release"},
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["resolution"], body["resolved_by"]) == (
        "resolved",
        "kept",
        "stella",
    )
    assert not Fact.objects.get(pk=code.pk).is_live
    assert Fact.objects.get(pk=code.pk).invalidation_reason == "checked the release"


def test_both_stand_leaves_every_candidate_valid(member, steward, agent_for):
    _code, _note, conflict = outranked(member)
    response = agent_for(steward).post(
        f"/conflicts/{conflict.pk}/resolve", {"action": "coexist", "reason": "both true"}
    )
    assert response.json()["resolution"] == "coexist"
    assert Fact.objects.live().count() == 2


def test_a_member_gets_403_and_an_outsider_the_same_404_as_a_missing_conflict(
    member, outsider, agent_for
):
    _code, _note, conflict = outranked(member)
    body = {"action": "dismiss", "reason": "mine"}
    assert agent_for(member).post(f"/conflicts/{conflict.pk}/resolve", body).status_code == 403
    hidden = agent_for(outsider).post(f"/conflicts/{conflict.pk}/resolve", body)
    missing = agent_for(outsider).post(
        "/conflicts/00000000-0000-0000-0000-000000000000/resolve", body
    )
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    assert Conflict.objects.get(pk=conflict.pk).is_open


def test_resolving_twice_is_409_and_a_stranger_to_keep_is_400(member, steward, agent_for):
    code, _note, conflict = outranked(member)
    other = assert_fact(actor=member, data=fact_body(subject="elsewhere")).fact
    agent = agent_for(steward)
    path = f"/conflicts/{conflict.pk}/resolve"
    stranger = agent.post(path, {"action": "keep", "keep": [str(other.pk)], "reason": "x"})
    assert stranger.status_code == 400 and stranger.json()["field"] == "keep"
    assert agent.post(path, {"action": "keep", "reason": "x"}).status_code == 400
    assert agent.post(path, {"action": "dismiss", "reason": ""}).status_code == 400
    assert agent.post(path, {"action": "shrug", "reason": "x"}).status_code == 400
    assert Conflict.objects.get(pk=conflict.pk).is_open
    assert (
        agent.post(path, {"action": "keep", "keep": [str(code.pk)], "reason": "x"}).status_code
        == 200
    )
    again = agent.post(path, {"action": "dismiss", "reason": "again"})
    assert again.status_code == 409
