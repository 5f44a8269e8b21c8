"""Which source types an account may claim is part of its role (issue 29 item 8).

A source type says how far a fact is trusted: a member may claim what an
agent or a person says from a session (agent-note, session-log,
user-assertion by default), a steward every source type; an admin sets both
lists on the scope. Every write face refuses the rest with 403 and writes
nothing.
"""

import json

import pytest

from accounts.actions import issue_token
from memories.store.models import Entity, Fact, Scope
from memories.write.ingest import import_lines
from tests.api.conftest import fact_body
from tests.api.mcp_client import body, call_http

# The scopes here keep the real defaults (tests/conftest.py lets members of
# every other test's scopes claim every source type).
REAL_SOURCE_ROLES = True

DECIDED = {
    "scope": "project",
    "subject": "api-layer",
    "predicate": "core/decided-against",
    "object": "GraphQL",
    "source_type": "decision-record",
    "epistemic": "commitment",
}


@pytest.mark.django_db
def test_a_member_claiming_a_decision_record_is_refused_with_the_sources_it_may_claim(
    agent_for, member
):
    response = agent_for(member).post("/facts", DECIDED)
    assert response.status_code == 403
    answer = response.json()
    assert answer["code"] == "source_type_not_allowed"
    assert answer["field"] == "source_type"
    assert "agent-note, session-log, user-assertion" in answer["message"]
    assert not Fact.objects.exists()
    assert not Entity.objects.exists()


@pytest.mark.django_db
def test_a_member_may_claim_an_agent_note_and_a_steward_code(agent_for, member, steward):
    note = agent_for(member).post("/facts", fact_body(source_type="agent-note"))
    assert note.status_code == 201, note.json()
    code = agent_for(steward).post("/facts", fact_body(object="2.1.0", source_type="code"))
    assert code.status_code == 201, code.json()


@pytest.mark.django_db
def test_a_scope_setting_lets_members_claim_another_source_type(agent_for, member, scope):
    scope.member_source_types = [*scope.member_source_types, "decision-record"]
    scope.save()
    response = agent_for(member).post("/facts", DECIDED)
    assert response.status_code == 201, response.json()


@pytest.mark.django_db
def test_new_scopes_default_to_the_members_three_and_every_source_for_stewards(db):
    scope = Scope.objects.create(name="fresh")
    assert scope.member_source_types == ["agent-note", "session-log", "user-assertion"]
    assert scope.steward_source_types is None


@pytest.mark.django_db
def test_a_batch_rejects_the_line_claiming_a_source_outside_the_role(member):
    lines = [json.dumps(DECIDED), json.dumps(fact_body(source_type="agent-note"))]
    report = import_lines(lines, actor=member)
    refused, written = report.outcomes
    assert (refused.status, refused.field) == ("rejected", "source_type")
    assert "you may claim: agent-note, session-log, user-assertion" in refused.reason
    assert written.status == "created"
    assert list(Fact.objects.values_list("source_type__name", flat=True)) == ["agent-note"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_mcp_refuses_a_member_claiming_a_decision_record(site, member):
    _token, secret = issue_token(actor=member, name="tests")
    result = call_http(f"{site}/mcp/", secret, "assert_fact", DECIDED)
    assert result.is_error
    assert body(result)["code"] == "source_type_not_allowed"
    assert not Fact.objects.exists()
