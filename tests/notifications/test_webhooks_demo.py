"""The demo's webhook: an endpoint of the demo steward's, delivering to the console's receiver."""

import pytest
from django.core.management import call_command

from memories.store.models import Scope
from notifications.webhook.actions import DEMO_RECEIVER_PATH, create_endpoint
from notifications.webhook.models import Delivery, Endpoint
from tests.notifications.test_webhooks import record_event
from tests.taskqueue import run_queued_tasks


def test_the_demo_has_one_endpoint_at_the_receiver(db, settings):
    settings.CLAIMGRAPH_WEBHOOK_RECEIVER = True
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    endpoint = Endpoint.objects.get()
    assert endpoint.url == settings.CLAIMGRAPH_SITE_URL + DEMO_RECEIVER_PATH
    assert (endpoint.scope.name, endpoint.owner.username, endpoint.kinds) == ("demo", "steward", [])


# serialized_rollback: data migrations seed the vocabulary and the stewards group.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_delivery_to_the_demo_receiver_is_verified_and_answered_204(
    live_server, settings, scope_steward
):
    settings.CLAIMGRAPH_WEBHOOK_RECEIVER = True
    settings.CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS = ["localhost"]
    scope = Scope.objects.get(name="project")
    url = live_server.url.replace("127.0.0.1", "localhost") + DEMO_RECEIVER_PATH
    endpoint, _ = create_endpoint(owner=scope_steward, scope=scope, url=url)
    record_event(scope)
    run_queued_tasks()
    attempt = Delivery.objects.get(endpoint=endpoint).attempt_log.get()
    assert attempt.status_code == 204
    # Signed with a secret the receiver does not know (this endpoint's URL is
    # not one of the demo's): refused.
    stranger, _ = create_endpoint(owner=scope_steward, scope=scope, url=url + "?from=elsewhere")
    Endpoint.objects.filter(pk=endpoint.pk).delete()
    record_event(scope)
    run_queued_tasks()
    refused = Delivery.objects.get(endpoint=stranger).attempt_log.get()
    assert (refused.status_code, refused.response_head) == (400, "bad signature\n")
