"""Recall's prepared statement answers as its QuerySet definition (``recall_through_orm``).

Same facts, same order, same rows loaded, for every reader and question: who
may read, valid time, disputes, verdicts, suspension by an evidenced
challenge, refutation, private facts, a subject and a predicate.
"""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from admissions.actions import file_challenge, record_verdict, refute_challenge
from admissions.selectors import recall, recall_through_orm
from memories.store.errors import NotFound
from memories.store.models import FACT_DISPLAY_RELATIONS, Fact
from memories.write.actions import assert_fact, invalidate_fact
from tests.admissions.conftest import write_fact
from tests.conftest import at

pytestmark = pytest.mark.django_db

T = at("2026-03-01T12:00:00")
READERS = ("member", "author", "steward", "scope_steward", "outsider", "deactivated_steward")
QUESTIONS = [
    {},
    {"subject": "AuthService"},
    {"subject": "authservice", "predicate": "core/uses"},
    {"predicate": "core/has-version"},
    {"subject": "Billing"},
    {"subject": "nobody"},
    {"predicate": "core/unknown"},
]


@pytest.fixture
def store(author, member, steward):
    """Admitted, candidate, rejected, suspended, refuted, invalidated, future,
    disputed and private facts on two subjects."""
    old = T - timedelta(days=30)
    facts = {
        name: write_fact(author, name, now=old)
        for name in ("admitted", "candidate", "rejected", "suspended", "refuted", "ended")
    }
    facts["billing"] = write_fact(author, "stripe", subject="Billing", now=old)
    facts["later"] = write_fact(author, "later", t_valid="2026-06-01T00:00:00Z", now=old)
    facts["version"] = write_fact(
        author, "2.0.0", predicate="core/has-version", confidence=0.95, now=old
    )
    for name in ("admitted", "suspended", "refuted", "ended", "billing", "later", "version"):
        record_verdict(actor=steward, fact_id=facts[name].pk, verdict="admitted", ground="ok")
    record_verdict(actor=steward, fact_id=facts["rejected"].pk, verdict="rejected", ground="no")
    for name, challenger in (("suspended", member), ("refuted", author)):
        file_challenge(actor=challenger, fact_id=facts[name].pk, ground="wrong", evidence=["t"])
    [challenge] = facts["refuted"].records.filter(role="challenge")
    refute_challenge(actor=steward, challenge_id=challenge.pk, ground="fine")
    invalidate_fact(actor=author, fact_id=facts["ended"].pk, reason="gone")
    flagged = assert_fact(
        actor=member,
        data={
            "scope": "project",
            "subject": "AuthService",
            "predicate": "core/has-version",
            "object": "3.0.0",
            "source_type": "agent-note",
        },
    )
    assert flagged.status == "flagged"
    write_fact(author, "private", bucket="user", now=old)
    write_fact(member, "hers", bucket="user", now=old)
    return facts


def shown(entries) -> list[tuple]:
    rows = []
    for entry in entries:
        fact = entry.fact
        related = tuple(
            None if getattr(fact, name) is None else getattr(fact, name).pk
            for name in FACT_DISPLAY_RELATIONS
        )
        columns = tuple(getattr(fact, f.attname) for f in Fact._meta.concrete_fields)
        rows.append((columns, related, entry.effective_confidence))
    return rows


@pytest.mark.parametrize("reader", READERS)
def test_the_statement_answers_as_the_querysets(request, store, scope, reader):
    actor = request.getfixturevalue(reader)
    as_of = T + timedelta(days=1)
    for question in QUESTIONS:
        for when in (as_of, at("2026-07-01T00:00:00"), at("2027-01-01T00:00:00")):
            try:
                expected = shown(
                    recall_through_orm(
                        viewer=User.objects.get(pk=actor.pk), scope=scope, as_of=when, **question
                    )
                )
            except NotFound:
                with pytest.raises(NotFound):
                    recall(viewer=User.objects.get(pk=actor.pk), scope=scope, as_of=when)
                continue
            found = recall(
                viewer=User.objects.get(pk=actor.pk), scope=scope, as_of=when, **question
            )
            assert shown(found) == expected, question


def test_the_store_holds_what_the_comparison_needs(store, member, author, scope):
    """Guards the comparison above against an empty answer on both sides."""
    as_of = T + timedelta(days=1)
    served = {e.fact.object_display for e in recall(viewer=author, scope=scope, as_of=as_of)}
    # "ended" was invalidated now, after both valid times asked about.
    assert served == {"admitted", "refuted", "ended", "stripe", "2.0.0", "private"}
    later = at("2026-07-01T00:00:00")
    served = {e.fact.object_display for e in recall(viewer=member, scope=scope, as_of=later)}
    assert served == {"admitted", "refuted", "ended", "stripe", "2.0.0", "later", "hers"}
    now = at("2027-01-01T00:00:00")
    served = {e.fact.object_display for e in recall(viewer=member, scope=scope, as_of=now)}
    assert served == {"admitted", "refuted", "stripe", "2.0.0", "later", "hers"}
