"""The account page's digest section: choosing a digest, and what it refuses."""

import pytest
from django.test import Client
from django.urls import reverse

from notifications.email.models import DigestPreference, DigestSubscription
from tests.console.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_the_account_page_shows_the_digest_with_the_stewarded_scopes(
    scope, other_scope, scope_steward
):
    page = signed_in(scope_steward).get(reverse("account"))
    assert page.status_code == 200
    assert 'id="email-digest"' in page.text
    assert f'value="{scope.pk}:conflict.opened"' in page.text
    assert f'value="{other_scope.pk}:' not in page.text
    assert page.context["digest_form"]["frequency"].value() == "daily"  # a steward's default


def test_a_steward_chooses_an_hourly_digest_of_one_kind(scope, scope_steward):
    browser = signed_in(scope_steward)
    answer = browser.post(
        reverse("digest-choose"),
        {"frequency": "hourly", "subscriptions": [f"{scope.pk}:conflict.opened"]},
    )
    assert answer.status_code == 302
    preference = DigestPreference.objects.get(user=scope_steward)
    assert (preference.frequency, preference.chosen, preference.own_challenges) == (
        "hourly",
        True,
        False,
    )
    (subscription,) = DigestSubscription.objects.all()
    assert (subscription.scope_id, subscription.kinds) == (scope.pk, ["conflict.opened"])
    assert "Your email digest is saved." in browser.get(reverse("account")).text


def test_the_form_refuses_a_scope_the_user_does_not_steward(scope, other_scope, scope_steward):
    answer = signed_in(scope_steward).post(
        reverse("digest-choose"),
        {"frequency": "daily", "subscriptions": [f"{other_scope.pk}:conflict.opened"]},
    )
    assert answer.status_code == 400
    assert "You can only subscribe to scopes you steward." in answer.text
    assert "elsewhere" not in answer.text
    assert not DigestPreference.objects.exists()


@pytest.mark.parametrize(
    ("posted", "said"),
    [
        ({"frequency": "weekly"}, "Select a valid choice"),
        ({"frequency": "daily", "subscriptions": ["nonsense"]}, "is not a scope and a kind"),
        ({"frequency": "daily", "subscriptions": ["{scope}:worker.exploded"]}, "is not a kind"),
    ],
)
def test_bad_input_is_refused_by_name_and_saves_nothing(scope, scope_steward, posted, said):
    posted = {
        key: [v.format(scope=scope.pk) for v in value] if isinstance(value, list) else value
        for key, value in posted.items()
    }
    answer = signed_in(scope_steward).post(reverse("digest-choose"), posted)
    assert answer.status_code == 400
    assert said in answer.text
    assert not DigestPreference.objects.exists()


def test_the_digest_form_needs_csrf_and_a_signed_in_account(scope, scope_steward):
    assert Client().post(reverse("digest-choose"), {"frequency": "off"}).status_code == 302
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(scope_steward)
    assert strict.post(reverse("digest-choose"), {"frequency": "off"}).status_code == 403
    assert not DigestPreference.objects.exists()
