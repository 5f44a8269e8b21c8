"""The conflicts queue reads the API's name of its status filter too (issue 30 §14)."""

import pytest
from django.urls import reverse

from memories.write.actions import resolve_conflict
from tests.console.conftest import signed_in

pytestmark = pytest.mark.django_db


def _listed(client, **query):
    response = client.get(reverse("conflicts"), query)
    assert response.status_code == 200
    return response.context["state"], [item.pk for item in response.context["page"]]


def test_status_resolved_lists_the_resolved_conflicts(steward, world):
    resolve_conflict(actor=steward, conflict_id=world.conflict.pk, action="dismiss", reason="x")
    client = signed_in(steward)
    assert _listed(client) == ("open", [])
    assert _listed(client, status="resolved") == ("resolved", [world.conflict.pk])
    assert _listed(client, state="resolved") == ("resolved", [world.conflict.pk])
    # The console's own name wins when both are given.
    assert _listed(client, state="open", status="resolved") == ("open", [])


def test_an_unknown_status_is_an_error_on_the_form_not_the_open_queue(steward, world):
    response = signed_in(steward).get(reverse("conflicts"), {"status": "closed"})
    assert response.status_code == 200
    assert "state" in response.context["form"].errors
