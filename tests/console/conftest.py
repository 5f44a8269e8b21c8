"""A small world for the console's page tests: one scope with a conflict, candidates,
an admitted fact and its challenge, seen by a steward, a member and an outsider."""

from dataclasses import dataclass

import pytest
from django.test import Client

from admissions.actions import record_verdict
from memories.store.models import Conflict, Fact
from memories.write.actions import assert_fact
from tests.conftest import at

NOW = at("2026-06-01T12:00")


def write(actor, subject, predicate, obj, source, *, now=NOW, scope="project", **extra):
    return assert_fact(
        actor=actor,
        data={
            "scope": scope,
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "source_type": source,
            **extra,
        },
        now=now,
    )


@dataclass
class World:
    conflict: Conflict
    decided: Fact
    newcomer: Fact
    candidates: list[Fact]
    admitted: Fact


@pytest.fixture
def world(member, steward) -> World:
    decided = write(
        steward,
        "api-layer",
        "core/decided-against",
        "GraphQL",
        "decision-record",
        epistemic="commitment",
        evidence=[{"ref": "ADR-12", "quote": "We will not adopt GraphQL."}],
        now=at("2026-05-01T09:00"),
    )
    newcomer = write(member, "api-layer", "core/prefers", "GraphQL", "session-log")
    candidates = [
        write(
            member, "shoply", "core/uses", name, "session-log", now=at(f"2026-05-0{day}T10:00")
        ).fact
        for day, name in [(2, "Redis"), (3, "Kafka"), (4, "Celery")]
    ]
    admitted = write(steward, "AuthService", "core/has-version", "2.0.0", "code").fact
    record_verdict(actor=steward, fact_id=admitted.pk, verdict="admitted", ground="seen in code")
    return World(
        conflict=newcomer.conflict,
        decided=decided.fact,
        newcomer=newcomer.fact,
        candidates=candidates,
        admitted=admitted,
    )


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def as_steward(steward) -> Client:
    return signed_in(steward)


@pytest.fixture
def as_member(member) -> Client:
    return signed_in(member)


@pytest.fixture
def as_outsider(outsider) -> Client:
    return signed_in(outsider)
