"""Every text field of every write: whatever text arrives, never a 5xx, and a 4xx writes nothing.

The text is drawn to include what PostgreSQL cannot store (a NUL, a lone
surrogate, which JSON spells as an escape like ``"\\ud800"``) beside ordinary
text. Such text must be refused with a 400 naming the field, before anything
is written (SPEC §10). Bodies, too, arrive in any bytes and under any
declared type, and only UTF-8 JSON sent as ``application/json`` is read.

Each example runs in a savepoint rolled back after it, so every one meets the
same store: a standing fact with a conflict and a challenge, and an episode
to withdraw.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admissions.models import Record
from memories.store.models import AuditEntry, Conflict, ConflictMember, Entity, Fact, Outcome
from memories.write.actions import assert_fact
from tests.api.conftest import Agent, fact_body

pytestmark = pytest.mark.django_db

UNSTORABLE = ("\x00", "\ud800", "\udbff", "\udc00", "\udfff")

# Letters, digits, punctuation, spaces, control characters (NUL among them)
# and surrogates; Hypothesis leaves surrogates out unless asked.
any_text = st.text(st.characters(categories=("L", "N", "P", "Zs", "Cc", "Cs")), max_size=12)
# And, so that most examples carry one, ordinary text with an unstorable
# character put somewhere inside it.
spiked_text = st.builds(
    lambda before, bad, after: before + bad + after,
    st.text(max_size=8),
    st.sampled_from(UNSTORABLE),
    st.text(max_size=8),
)
texts = st.one_of(spiked_text, any_text, st.text(min_size=1, max_size=12))


def counts() -> dict[str, int]:
    models = (Fact, Record, Conflict, ConflictMember, AuditEntry, Entity, Outcome)
    return {model.__name__: model.objects.count() for model in models}


def with_text(body: dict[str, Any], path: str, text: str) -> dict[str, Any]:
    """``body`` with ``text`` at a dotted ``path`` ("evidence.0.quote")."""
    body = json.loads(json.dumps(body))
    *parents, last = path.split(".")
    node: Any = body
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = text
    else:
        node[last] = text
    return body


@dataclass
class Store:
    """The rows every example may write against, and an agent for each character."""

    fact: Fact
    rival: Fact
    conflict: Conflict
    challenge: Record
    change: AuditEntry
    as_member: Agent
    as_steward: Agent


@dataclass(frozen=True)
class Write:
    """One write operation: how to send it, and each text field with the field its refusal names."""

    name: str
    # The agent that sends it and the path.
    send: Callable[[Store], tuple[Agent, str]]
    body: Callable[[Store], dict[str, Any]]
    # The dotted path the text goes to, and the field a refusal must name.
    fields: dict[str, str]


FACT_FIELDS = {
    "subject": "subject",
    "predicate": "predicate",
    "object": "object",
    "source_type": "source_type",
    "object_kind": "object_kind",
    "epistemic": "epistemic",
    "t_valid": "t_valid",
    "episode": "episode",
    "statement": "statement",
    # a bare string is a ref
    "evidence.0": "evidence.0.ref",
    "evidence.1.ref": "evidence.1.ref",
    "evidence.1.quote": "evidence.1.quote",
}
EVIDENCE = ["ADR-7", {"ref": "CHANGELOG", "quote": "2.0.0"}]

WRITES = [
    Write(
        "facts",
        lambda store: (store.as_member, "/facts"),
        lambda store: fact_body(object="9.9.9", evidence=EVIDENCE, statement="it says so"),
        {
            **FACT_FIELDS,
            "scope": "scope",
            "t_invalid": "t_invalid",
            "bucket": "bucket",
        },
    ),
    Write(
        "invalidate",
        lambda store: (store.as_member, f"/facts/{store.fact.pk}/invalidate"),
        lambda store: {"reason": "retired"},
        {"reason": "reason"},
    ),
    Write(
        "outcomes",
        lambda store: (store.as_member, "/outcomes"),
        lambda store: {"fact_ids": [str(store.fact.pk)], "outcome": "accepted"},
        {"fact_ids.0": "fact_ids.0", "outcome": "outcome"},
    ),
    Write(
        "resolve",
        lambda store: (store.as_steward, f"/conflicts/{store.conflict.pk}/resolve"),
        lambda store: {"action": "keep", "keep": [str(store.fact.pk)], "reason": "checked"},
        {"action": "action", "keep.0": "keep.0", "reason": "reason"},
    ),
    Write(
        "admissions",
        lambda store: (store.as_steward, f"/facts/{store.fact.pk}/admissions"),
        lambda store: {"verdict": "admitted", "ground": "checked"},
        {"verdict": "verdict", "ground": "ground"},
    ),
    Write(
        "challenges",
        lambda store: (store.as_member, f"/facts/{store.fact.pk}/challenges"),
        lambda store: {"ground": "the release says 2.0.1", "evidence": EVIDENCE},
        {
            "ground": "ground",
            "evidence.0": "evidence.0.ref",
            "evidence.1.ref": "evidence.1.ref",
            "evidence.1.quote": "evidence.1.quote",
        },
    ),
    Write(
        "refutations",
        lambda store: (store.as_steward, f"/challenges/{store.challenge.pk}/refutations"),
        lambda store: {"ground": "2.0.1 is a tag"},
        {"ground": "ground"},
    ),
    Write(
        "corrections",
        lambda store: (store.as_steward, f"/facts/{store.fact.pk}/corrections"),
        lambda store: {
            "ground": "typo",
            "object": "2.0.1",
            "statement": "corrected",
            "episode": "review",
            "evidence": EVIDENCE,
        },
        {**FACT_FIELDS, "ground": "ground"},
    ),
    Write(
        "withdraw",
        lambda store: (store.as_steward, "/episodes/run-1/withdraw"),
        lambda store: {"scope": "project", "reason": "poisoned"},
        {"scope": "scope", "reason": "reason"},
    ),
    Write(
        "revert",
        lambda store: (store.as_steward, f"/changes/{store.change.pk}/revert"),
        lambda store: {"reason": "the older version still runs"},
        {"reason": "reason"},
    ),
]


@pytest.fixture
def store(member, steward, scope, agent_for, settings) -> Store:
    settings.CLAIMGRAPH_API_WRITE_RATE = 0  # a burst of examples is not what is under test
    scope.members.add(steward)
    fact = assert_fact(
        actor=member, data=fact_body(confidence=0.95, episode="run-1", evidence=["ADR-1"])
    ).fact
    # A weaker source's rival value: outranked, so a conflict opens.
    flagged = assert_fact(
        actor=member, data=fact_body(object="3.0.0", source_type="agent-note", episode="run-1")
    )
    # An automatic change to revert: the write path supersedes an older version.
    assert_fact(actor=member, data=fact_body(subject="Billing", object="1.0.0"))
    assert_fact(actor=member, data=fact_body(subject="Billing", object="1.1.0"))
    change = AuditEntry.objects.automatic().get(action="superseded")
    as_member, as_steward = agent_for(member), agent_for(steward)
    challenge_id = as_member.post(
        f"/facts/{fact.pk}/challenges", {"ground": "wrong", "evidence": ["log-1"]}
    ).json()["id"]
    return Store(
        fact=fact,
        rival=flagged.fact,
        conflict=flagged.conflict,
        challenge=Record.objects.get(pk=challenge_id),
        change=change,
        as_member=as_member,
        as_steward=as_steward,
    )


def check_write(store: Store, write: Write, path: str, text: str) -> None:
    body = with_text(write.body(store), path, text)
    agent, url = write.send(store)
    with transaction.atomic():
        before = counts()
        # json.dumps escapes a lone surrogate as "\ud800": the bytes on the
        # wire are ASCII, as an agent's JSON library would send them.
        response = agent.post(url, raw=json.dumps(body).encode("ascii"))
        after = counts()
        transaction.set_rollback(True)
    assert response.status_code < 500, (write.name, path, ascii(text), response.content)
    assert response["Content-Type"].startswith("application/json")
    if response.status_code >= 400:
        assert after == before, (write.name, path, ascii(text), response.json())
    if "\x00" in text or any("\ud800" <= char <= "\udfff" for char in text):
        assert response.status_code == 400, (write.name, path, ascii(text), response.json())
        assert response.json()["field"] == write.fields[path]


PROPERTY = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("write", WRITES, ids=[write.name for write in WRITES])
def test_no_text_in_any_field_of_a_write_gives_a_5xx_and_a_refusal_writes_nothing(store, write):
    @PROPERTY
    @given(path=st.sampled_from(sorted(write.fields)), text=texts)
    def run(path: str, text: str) -> None:
        check_write(store, write, path, text)

    run()


def test_every_write_operation_of_the_api_is_in_the_property():
    from api.app import api

    document = api.get_openapi_schema(path_prefix="")
    posts = {path for path, operations in document["paths"].items() if "post" in operations}
    covered = {
        "/facts",
        "/facts/{fact_id}/invalidate",
        "/outcomes",
        "/conflicts/{conflict_id}/resolve",
        "/facts/{fact_id}/admissions",
        "/facts/{fact_id}/challenges",
        "/challenges/{challenge_id}/refutations",
        "/facts/{fact_id}/corrections",
        "/episodes/{episode}/withdraw",
        "/changes/{entry_id}/revert",
    }
    assert posts == covered


@PROPERTY
@given(
    name=st.sampled_from(["scope", "subject", "predicate", "as_of", "known_at", "cursor"]),
    text=st.text(st.characters(categories=("L", "N", "P", "Zs", "Cc")), max_size=12),
)
def test_no_text_in_a_query_parameter_gives_a_5xx(store, name, text):
    # A query string cannot carry a surrogate (Django decodes it with
    # replacement characters), but a NUL or any control character it can.
    query = {"scope": "project", name: text}
    response = store.as_member.get("/truth", **query)
    assert response.status_code < 500, (name, ascii(text), response.content)
    assert response["Content-Type"].startswith("application/json")
    if "\x00" in text:
        assert response.status_code == 400
        assert response.json()["field"] == name


@PROPERTY
@given(
    raw=st.one_of(
        st.binary(max_size=64),
        st.builds(
            lambda text, encoding: json.dumps(fact_body(statement=text), ensure_ascii=False).encode(
                encoding, errors="ignore"
            ),
            st.text(max_size=12),
            st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32", "latin-1"]),
        ),
    ),
    content_type=st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-16",
            "text/plain",
            "application/x-www-form-urlencoded",
            "",
        ]
    ),
)
def test_no_body_in_any_encoding_gives_a_5xx_and_a_refusal_writes_nothing(store, raw, content_type):
    agent = store.as_member
    with transaction.atomic():
        before = counts()
        response = agent.client.generic(
            "POST", "/api/v1/facts", raw, content_type, headers=agent.headers
        )
        after = counts()
        transaction.set_rollback(True)
    assert response.status_code < 500, (ascii(raw), content_type, response.content)
    assert response["Content-Type"].startswith("application/json")
    if response.status_code >= 400:
        assert after == before
    if content_type != "application/json" and raw:
        assert response.status_code == 415
    if response.status_code < 400:
        # Only UTF-8 JSON, declared as such, can be a write.
        assert content_type == "application/json" and is_utf8(raw)


def is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
