"""Sending digests: once per period on the clock, at once on announce, and to whom."""

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from notifications.channels import CHANNELS, announce
from notifications.email.actions import choose_digest
from notifications.email.models import DigestPreference
from notifications.email.sending import on_events, send_due_digests
from notifications.models import Event, EventKind
from notifications.worker import PERIODIC_JOBS
from tests.conftest import at
from tests.console.conftest import signed_in, world, write  # noqa: F401 (world: a fixture)
from tests.taskqueue import run_queued_tasks

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def site_url(settings) -> None:
    settings.CLAIMGRAPH_SITE_URL = "http://testserver"
    settings.CLAIMGRAPH_DIGEST_DAILY_HOUR = 7


def with_email(user):
    user.email = f"{user.username}@example.org"
    user.save(update_fields=["email"])
    return user


def every_kind(scope) -> dict[int, list[str]]:
    return {scope.pk: ["conflict.opened", "candidate.waiting", "challenge.filed"]}


def event(scope, kind=EventKind.CONFLICT_OPENED, *, source="audit:1", addressee=None, **data):
    return Event.objects.create(
        kind=kind,
        scope=scope,
        addressee=addressee,
        occurred_at=timezone.now(),
        source=source,
        data={"summary": "Something happened.", **data},
    )


def test_the_channel_and_the_periodic_job_are_registered():
    assert on_events in CHANNELS
    assert "email digests" in [job.name for job in PERIODIC_JOBS]


def test_an_hourly_digest_is_sent_once_an_hour(world, steward, scope):  # noqa: F811
    choose_digest(
        actor=with_email(steward),
        frequency="hourly",
        subscriptions=every_kind(scope),
        own_challenges=True,
    )
    assert send_due_digests(now=at("2026-06-02T09:05")) == 1
    # A second worker, or a second run, in the same hour sends nothing.
    assert send_due_digests(now=at("2026-06-02T09:05")) == 0
    assert send_due_digests(now=at("2026-06-02T09:55")) == 0
    assert len(mail.outbox) == 1
    assert send_due_digests(now=at("2026-06-02T10:00")) == 1
    assert len(mail.outbox) == 2
    preference = DigestPreference.objects.get(user=steward)
    assert preference.period_done == at("2026-06-02T10:00")
    assert preference.sent_at == at("2026-06-02T10:00")


def test_a_steward_who_never_chose_gets_a_daily_digest_once_a_day(world, steward):  # noqa: F811
    with_email(steward)
    assert send_due_digests(now=at("2026-06-02T08:00")) == 1
    assert send_due_digests(now=at("2026-06-02T20:00")) == 0
    assert send_due_digests(now=at("2026-06-03T06:59")) == 0
    assert send_due_digests(now=at("2026-06-03T07:00")) == 1
    assert len(mail.outbox) == 2
    assert mail.outbox[0].to == ["stella@example.org"]


def test_a_member_who_never_chose_gets_none(world, member):  # noqa: F811
    with_email(member)
    assert send_due_digests(now=at("2026-06-02T08:00")) == 0
    assert mail.outbox == []


def test_a_period_with_nothing_waiting_sends_nothing_and_is_handled(steward, scope):
    with_email(steward)
    assert send_due_digests(now=at("2026-06-02T08:00")) == 0
    assert mail.outbox == []
    assert DigestPreference.objects.get(user=steward).period_done == at("2026-06-02T07:00")


def test_immediately_sends_a_digest_after_the_announced_events_commit(
    world,  # noqa: F811
    steward,
    scope,
    scope_steward,
    django_capture_on_commit_callbacks,
):
    choose_digest(
        actor=with_email(steward),
        frequency="immediately",
        subscriptions=every_kind(scope),
        own_challenges=True,
    )
    with_email(scope_steward)  # daily, by default: nothing at once
    with django_capture_on_commit_callbacks(execute=True):
        announce([event(scope)])
    assert mail.outbox == []  # sent by the worker, not by the announcing transaction
    run_queued_tasks()
    (message,) = mail.outbox
    assert message.to == ["stella@example.org"]
    assert "api-layer core/prefers" in message.body


def test_immediately_sends_nothing_for_a_kind_not_subscribed(
    world,  # noqa: F811
    steward,
    scope,
    django_capture_on_commit_callbacks,
):
    choose_digest(
        actor=with_email(steward),
        frequency="immediately",
        subscriptions={scope.pk: ["candidate.waiting"]},
        own_challenges=True,
    )
    with django_capture_on_commit_callbacks(execute=True):
        announce([event(scope, EventKind.CONFLICT_OPENED)])
    run_queued_tasks()
    assert mail.outbox == []


def test_immediately_never_sends_another_scopes_events(
    scope, other_scope, scope_steward, outsider, django_capture_on_commit_callbacks
):
    write(outsider, "secret-app", "core/uses", "Vault", "session-log", scope="elsewhere")
    choose_digest(
        actor=with_email(scope_steward),
        frequency="immediately",
        subscriptions=every_kind(scope),
        own_challenges=True,
    )
    with django_capture_on_commit_callbacks(execute=True):
        announce([event(other_scope, EventKind.CANDIDATE_WAITING)])
    run_queued_tasks()
    assert mail.outbox == []


def test_a_member_hears_at_once_how_its_own_challenge_ended(
    world,  # noqa: F811
    member,
    scope,
    django_capture_on_commit_callbacks,
):
    choose_digest(
        actor=with_email(member), frequency="immediately", subscriptions={}, own_challenges=True
    )
    settled = event(
        scope,
        EventKind.CHALLENGE_SETTLED,
        addressee=member,
        summary="Your challenge of AuthService core/has-version was refuted.",
        item={
            "type": "challenge",
            "id": "c1",
            "title": "AuthService core/has-version",
            "url": f"http://testserver{reverse('fact', args=[world.admitted.pk])}",
        },
    )
    event(scope, EventKind.CHALLENGE_SETTLED, source="audit:2", summary="Someone else's.")
    with django_capture_on_commit_callbacks(execute=True):
        announce(list(Event.objects.all()))
    run_queued_tasks()
    (message,) = mail.outbox
    assert "Your challenge of AuthService core/has-version was refuted." in message.body
    assert "Someone else's" not in message.body
    assert "Open conflicts" not in message.body  # a member stewards no queue
    # Told once: the next digest starts after it.
    assert DigestPreference.objects.get(user=member).heard_to == settled.pk
    with django_capture_on_commit_callbacks(execute=True):
        announce([settled])
    run_queued_tasks()
    assert len(mail.outbox) == 1
