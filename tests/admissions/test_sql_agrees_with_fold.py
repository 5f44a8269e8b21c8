"""The database's reads agree with the pure fold, on random histories.

Each example writes a random history of records straight into PostgreSQL
(so the triggers maintain the derived state as they would for any writer),
then compares every read in ``admissions.selectors`` with the pure fold of
the same records, shuffled. The example's writes are rolled back after it.
"""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from admissions import status
from admissions.models import FactVerdict, OpenChallenge, Record, Role, ScopeTally
from admissions.selectors import (
    challenge_summary,
    fact_status,
    fold_as_known_at,
    scope_statuses,
    share_percent,
    with_admission_status,
)
from memories.store.models import Fact
from tests.admissions.conftest import write_fact
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, tzinfo=UTC)
FACTS = 6
ACCOUNTS = 2


@st.composite
def histories(draw) -> list[dict]:
    """Steps of a history: indexes into the fixed facts and accounts, ids, times."""
    steps = []
    challenges = []
    ids = draw(st.lists(st.uuids(), min_size=40, max_size=40, unique=True))
    for record_id in ids[: draw(st.integers(0, 40))]:
        at = T0 + timedelta(minutes=draw(st.integers(0, 5)))  # few times: many ties
        # Weighted towards admissions and evidenced challenges, so the flood
        # cap is reached often enough to be tested (see the events).
        kind = draw(st.sampled_from(["verdict"] * 4 + ["challenge"] * 5 + ["refutation"]))
        if kind == "refutation" and challenges:
            steps.append(
                {
                    "role": Role.REFUTATION,
                    "id": record_id,
                    "at": at,
                    "of": draw(st.sampled_from(challenges)),
                }
            )
        elif kind == "challenge":
            challenges.append(record_id)
            steps.append(
                {
                    "role": Role.CHALLENGE,
                    "id": record_id,
                    "at": at,
                    "fact": draw(st.integers(0, FACTS - 1)),
                    "by": draw(st.integers(0, ACCOUNTS - 1)),
                    "evidenced": draw(st.sampled_from([True, True, True, False])),
                }
            )
        else:
            steps.append(
                {
                    "role": Role.ADMISSION,
                    "id": record_id,
                    "at": at,
                    "fact": draw(st.integers(0, FACTS - 1)),
                    "verdict": draw(st.sampled_from(["admitted", "admitted", "rejected"])),
                }
            )
    return steps


def write(steps: list[dict], facts: list[Fact], accounts: list, steward) -> None:
    written: dict = {}
    for step in steps:
        if step["role"] == Role.REFUTATION:
            challenge = written[step["of"]]
            record = Record(
                fact=challenge.fact,
                challenge=challenge,
                challenge_role=Role.CHALLENGE,
                author=steward,
            )
        elif step["role"] == Role.CHALLENGE:
            record = Record(
                fact=facts[step["fact"]],
                author=accounts[step["by"]],
                evidence=[{"ref": "ticket", "quote": ""}] if step["evidenced"] else None,
            )
        else:
            record = Record(fact=facts[step["fact"]], verdict=step["verdict"], author=steward)
        record.id = step["id"]
        record.role = step["role"]
        record.scope_id = record.fact.scope_id
        record.inserted_at = step["at"]
        record.ground = "because"
        record.save(force_insert=True)
        written[record.id] = record


def derived_state() -> tuple:
    return (
        sorted(FactVerdict.objects.values_list("fact_id", "verdict", "record_id", "decided_at")),
        sorted(
            OpenChallenge.objects.values_list(
                "challenge_id", "fact_id", "author_id", "evidenced", "fact_admitted"
            )
        ),
        sorted(ScopeTally.objects.values_list("scope_id", "admitted")),
    )


@pytest.fixture
def people_and_facts(author, steward, scope):
    accounts = [make_user(f"challenger{n}") for n in range(ACCOUNTS)]
    scope.members.add(*accounts)
    facts = [write_fact(author, f"lib-{n}") for n in range(FACTS)]
    return facts, accounts, steward


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=histories(), seed=st.randoms(use_true_random=False))
def test_every_read_of_the_database_agrees_with_the_pure_fold(people_and_facts, scope, steps, seed):
    facts, accounts, steward = people_and_facts
    with transaction.atomic():
        write(steps, facts, accounts, steward)

        records = list(fold_as_known_at_records(scope))
        seed.shuffle(records)
        folded = status.derive(records, share_percent=share_percent())
        assert folded == fold_as_known_at(scope)

        statuses = scope_statuses(scope)
        annotated = dict(
            with_admission_status(Fact.objects.filter(scope=scope)).values_list(
                "pk", "admission_status"
            )
        )
        for fact in facts:
            expected = folded.status_of(fact.pk)
            event(f"status {expected.status}" + (", one queued" if expected.queued else ""))
            assert fact_status(fact) == expected
            assert fact_status(fact, explain=False) == replace(expected, findings=())
            assert statuses[fact.pk] == expected.status
            assert annotated[fact.pk] == expected.status
        assert challenge_summary(scope) == sorted(
            folded.accounts.values(), key=lambda usage: usage.author_name
        )

        # The triggers' incremental state is what a rebuild from scratch gives.
        incremental = derived_state()
        with connection.cursor() as cursor:
            cursor.execute("SELECT admissions_rebuild_state()")
        assert derived_state() == incremental
        transaction.set_rollback(True)


def fold_as_known_at_records(scope):
    """The scope's records as the fold takes them, read plainly from the table."""
    for record in Record.objects.filter(scope=scope).select_related("author"):
        yield status.PlainRecord(
            id=record.id,
            fact_id=record.fact_id,
            role=record.role,
            author_id=record.author_id,
            inserted_at=record.inserted_at,
            verdict=record.verdict,
            evidenced=record.evidence is not None,
            challenge_id=record.challenge_id,
            author_name=record.author.username,
        )
