"""Who may hear about an event: the one rule every channel applies."""

from django.utils import timezone

from notifications.models import Event, EventKind


def event(scope, source: str, addressee=None) -> Event:
    return Event.objects.create(
        kind=EventKind.CONFLICT_OPENED,
        scope=scope,
        addressee=addressee,
        occurred_at=timezone.now(),
        source=source,
        data={},
    )


def test_a_scope_steward_hears_about_its_scope_only(scope, other_scope, scope_steward):
    mine = event(scope, "a")
    event(other_scope, "b")
    assert list(Event.objects.for_recipient(scope_steward)) == [mine]


def test_a_global_steward_hears_about_every_scope(scope, other_scope, steward):
    assert Event.objects.for_recipient(steward).count() == 0
    event(scope, "a")
    event(other_scope, "b")
    assert Event.objects.for_recipient(steward).count() == 2


def test_a_member_hears_only_what_is_addressed_to_it(scope, member, outsider):
    event(scope, "a")
    own = event(scope, "b", addressee=member)
    assert list(Event.objects.for_recipient(member)) == [own]
    assert list(Event.objects.for_recipient(outsider)) == []


def test_a_deactivated_steward_hears_nothing(scope, scope_steward):
    event(scope, "a")
    scope_steward.is_active = False
    scope_steward.save()
    assert Event.objects.for_recipient(scope_steward).count() == 0
