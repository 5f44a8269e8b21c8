"""The OpenAPI document, held to account by schemathesis: no 5xx, no answer off its schema.

Every operation gets generated requests, valid and deliberately invalid,
with a real token on a store that holds a fact and a conflict. The run is
bounded (a few dozen examples per operation, a fixed seed) to stay well under
two minutes.
"""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from accounts.actions import issue_token
from claimgraph_site.wsgi import application
from memories.maintenance.tasks import record_heartbeat
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@pytest.fixture
def in_process_wsgi():
    # schemathesis calls the WSGI application itself, not Django's test
    # client, so Django would close the test's connection (and with it the
    # test's transaction) at the end of each request. The test client
    # unhooks the same signals.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def bearer(in_process_wsgi, member, steward, scope, settings) -> dict[str, str]:
    settings.CLAIMGRAPH_API_WRITE_RATE = 0  # a fuzzing burst is not what is under test here
    scope.members.add(steward)
    assert_fact(actor=member, data=fact_body(confidence=0.95))
    assert_fact(actor=member, data=fact_body(object="3.0.0", source_type="agent-note"))
    # A live worker, so GET /health answers 200: its 503 for a dead worker is
    # documented, but any 5xx fails the fuzz's "no server error" check.
    record_heartbeat("schemathesis", now=timezone.now())
    _, secret = issue_token(actor=steward, name="schemathesis")
    return {"Authorization": f"Bearer {secret}"}


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_the_api_keeps_to_its_openapi_document(case, bearer):
    # Left out on purpose: positive_data_acceptance. A request can match the
    # schema and still be refused with a 400 by a rule the schema cannot
    # state (an unknown predicate, t_invalid before t_valid, a reason of
    # spaces); SPEC §10 wants exactly that 400.
    case.call_and_validate(headers=bearer, excluded_checks=[positive_data_acceptance])


# --- every field described, every closed set enumerated (issue 31 §2) -----------------

# Fields whose values are a closed set fixed in code: each must carry its enum.
CLOSED_SETS = frozenset(
    {
        "epistemic",
        "default_epistemic",
        "bucket",
        "buckets",
        "object_kind",
        "object_kinds",
        "status",
        "outcome",
        "verdict",
        "role",
        "kind",
        "how",
        "resolution",
        "action",
        "cardinality",
        "policy",
    }
)
# Where one of those names is free text: an audit entry's action is whatever
# the code that wrote it named it, not a set a client chooses from.
NOT_CLOSED = frozenset({("ChangeOut", "action")})
# Admin-edited at run time: never an enum (it would go stale), always pointing
# to discovery.
VOCABULARY_FIELDS = frozenset({"predicate", "source_type"})


def _resolve(node: dict, definitions: dict) -> dict:
    reference = node.get("$ref")
    if reference:
        return definitions.get(reference.rsplit("/", 1)[-1], {})
    return node


def _has_enum(node: dict, definitions: dict) -> bool:
    node = _resolve(node, definitions)
    if "enum" in node or "const" in node:
        return True
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        return _has_enum(node["items"], definitions)
    choices = [
        _resolve(choice, definitions)
        for choice in node.get("anyOf", node.get("oneOf", []))
        if _resolve(choice, definitions).get("type") != "null"
    ]
    return bool(choices) and all(_has_enum(choice, definitions) for choice in choices)


def schema_problems(document: dict, definitions: dict, where: str) -> list[str]:
    """Every property without a description, and every closed-set field without an enum."""
    problems: list[str] = []

    def walk(node) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        shape = node.get("title", "?")
        for name, field in (node.get("properties") or {}).items():
            at = f"{where}: {shape}.{name}"
            if not field.get("description"):
                problems.append(f"{at} has no description")
            closed = name in CLOSED_SETS and (shape, name) not in NOT_CLOSED
            if closed and not _has_enum(field, definitions):
                problems.append(f"{at} is a closed set without an enum")
            if name in VOCABULARY_FIELDS:
                if _has_enum(field, definitions):
                    problems.append(f"{at} is admin-edited and must not be an enum")
                elif "vocabulary" not in field.get("description", ""):
                    problems.append(f"{at} does not point to the vocabulary")
        if node.get("in") in ("query", "path") and not node.get("description"):
            problems.append(f"{where}: parameter {node.get('name')} has no description")
        for value in node.values():
            walk(value)

    walk(document)
    return problems


@pytest.mark.django_db
def test_every_openapi_property_is_described_and_every_closed_set_enumerated(client):
    document = client.get("/api/v1/openapi.json").json()
    definitions = document["components"]["schemas"]
    assert schema_problems(document, definitions, "openapi") == []
    # The flagged reason is a closed set too, though its name is shared with free text.
    assert _has_enum(definitions["AssertOut"]["properties"]["reason"], definitions)
    # The predicate's description no longer lists a hand-picked few.
    predicate = definitions["FactIn"]["properties"]["predicate"]["description"]
    assert "core/uses" not in predicate


def test_every_mcp_tool_schema_is_described_and_every_closed_set_enumerated():
    from api.mcp.server import OPERATIONS, build_server

    server = build_server(lambda request: None)
    tools = {tool.name: tool for tool in server._tool_manager.list_tools()}
    assert set(tools) == {operation.name for operation in OPERATIONS}
    problems = []
    for name, tool in tools.items():
        for kind, schema in (
            ("input", tool.parameters),
            ("output", tool.fn_metadata.output_schema),
        ):
            problems += schema_problems(schema, schema.get("$defs", {}), f"{name} {kind}")
    assert problems == []
