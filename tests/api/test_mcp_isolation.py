"""One agent's MCP call waiting on the database never holds up another agent's calls.

The site is served as in production (the ASGI application under uvicorn, one
process); each call is the SDK's own client over Streamable HTTP.
"""

import threading

import pytest
from django.db import connection, transaction

from accounts.actions import issue_token
from admissions.actions import record_verdict
from memories.store.models import Scope
from memories.store.slots import lock_slot
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body
from tests.api.mcp_client import call_http, live_site
from tests.conftest import make_user
from tests.deadlines import PROCESS_DEADLINE, wait_until
from tests.racing import a_session_waits_on_a_lock

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def test_a_call_waiting_on_a_slot_lock_does_not_hold_up_another_accounts_recall(steward):
    alpha, beta = Scope.objects.create(name="alpha"), Scope.objects.create(name="beta")
    agent_a, agent_b = make_user("agent-a"), make_user("agent-b")
    alpha.members.add(agent_a)
    beta.members.add(agent_b)
    standing = assert_fact(actor=steward, data=fact_body(scope="alpha", object="2.0.0")).fact
    billing = assert_fact(
        actor=steward, data=fact_body(scope="beta", subject="Billing", object="1.0")
    ).fact
    record_verdict(actor=steward, fact_id=billing.pk, verdict="admitted", ground="in the code")
    secret_a = issue_token(actor=agent_a, name="a")[1]
    secret_b = issue_token(actor=agent_b, name="b")[1]

    locked, release = threading.Event(), threading.Event()
    held: dict[str, bool] = {}

    def hold_the_slot() -> None:
        # A long transaction elsewhere (an import, a withdrawal) holding A's
        # slot until B has been answered: held["until B"] says it lasted.
        try:
            with transaction.atomic():
                lock_slot(alpha.pk, standing.subject_id, "predicate:core/has-version")
                locked.set()
                held["until B"] = release.wait(PROCESS_DEADLINE)
        finally:
            connection.close()

    answers: dict[str, object] = {}

    def write_as_a() -> None:
        answers["a"] = call_http(
            url, secret_a, "assert_fact", fact_body(scope="alpha", object="2.1.0")
        )

    with live_site() as running:
        url = f"{running.url}/mcp/"
        holder = threading.Thread(target=hold_the_slot)
        holder.start()
        try:
            assert locked.wait(PROCESS_DEADLINE)
            writer = threading.Thread(target=write_as_a)
            writer.start()
            # A's call is in the server, its database session waiting on the lock.
            wait_until(a_session_waits_on_a_lock, what="A's call to wait on the slot's lock")
            recalled = call_http(url, secret_b, "recall", {"scope": "beta", "subject": "Billing"})
            assert writer.is_alive(), "A's write must still be waiting while B is answered"
        finally:
            release.set()
            holder.join()
        writer.join(PROCESS_DEADLINE)

    # Had B's call queued behind A's, it would have been answered only once the
    # holder gave up the lock on its own, at the deadline.
    assert held == {"until B": True}, "B's recall waited for A's call to get its lock"
    assert not recalled.is_error
    assert [fact["object"] for fact in recalled.structured_content["results"]] == ["1.0"]
    assert not answers["a"].is_error
    assert answers["a"].structured_content["status"] == "superseded"
