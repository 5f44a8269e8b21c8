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
