"""The Django admin shows admission records and offers no way to change them."""

import pytest
from django.urls import reverse

from admissions.actions import file_challenge, record_verdict
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def records(steward, member, system_fact):
    verdict = record_verdict(
        actor=steward, fact_id=system_fact.pk, verdict="admitted", ground="ok"
    ).record
    challenge = file_challenge(
        actor=member, fact_id=system_fact.pk, ground="outdated since March", evidence=["t-7"]
    )
    return verdict, challenge


def test_records_are_listed_and_searchable(admin_client, records):
    url = reverse("admin:admissions_record_changelist")
    listing = admin_client.get(url)
    assert listing.status_code == 200
    assert listing.context["cl"].result_count == 2
    found = admin_client.get(url, {"q": "outdated"})
    assert list(found.context["cl"].result_list) == [records[1]]


def test_a_record_can_be_viewed_but_not_changed_added_or_deleted(admin_client, records):
    verdict, _ = records
    change_url = reverse("admin:admissions_record_change", args=[verdict.pk])
    page = admin_client.get(change_url)
    assert page.status_code == 200
    assert not page.context["has_change_permission"]
    assert b'name="_save"' not in page.content

    admin_client.post(change_url, {"ground": "rewritten"})
    verdict.refresh_from_db()
    assert verdict.ground == "ok"

    assert admin_client.get(reverse("admin:admissions_record_add")).status_code == 403
    delete_url = reverse("admin:admissions_record_delete", args=[verdict.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 403
