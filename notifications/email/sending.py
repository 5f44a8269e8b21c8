"""Sending digests: at once after the events that call for one, or once per hour or day.

Both ways end in :func:`send_digest`, which builds the digest from the
queues as they stand when it runs (in the worker, after the events
committed), sends nothing when nothing waits, and records what it sent.

A digest is sent inside the transaction that holds its account's preference
row locked and records the sending: two workers never send one period's
digest twice (the second finds the row locked and passes it by, or, once it
is committed, finds the period handled). A failure to send rolls the record
back, so the next run tries again; a crash after the message left and before
the commit can repeat it once (at least once, never lost).
"""

import logging
import re
from collections.abc import Sequence
from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.tasks import task
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from memories.maintenance.tasks import enqueue_on_commit
from notifications.email.contents import Digest, build_digest, subscribed
from notifications.email.models import STEWARD_DEFAULT, DigestPreference, Frequency
from notifications.email.schedule import due_period
from notifications.email.unsubscribe import unsubscribe_url
from notifications.links import absolute
from notifications.models import Event

logger = logging.getLogger(__name__)

TEMPLATE = "notifications/email/digest.html"


def render_digest(user, digest: Digest) -> tuple[str, str]:
    """The digest as (plain text, HTML), both from the one template."""
    context = {
        "user": user,
        "digest": digest,
        "unsubscribe_url": unsubscribe_url(user),
        "account_url": absolute(reverse("account")),
    }
    html = render_to_string(TEMPLATE, {**context, "html": True})
    text = render_to_string(TEMPLATE, {**context, "html": False})
    # The template's tags leave blank lines behind in the text: at most one in a row.
    return re.sub(r"\n\s*\n(\s*\n)+", "\n\n", text).strip() + "\n", html


def digest_message(user, digest: Digest) -> EmailMultiAlternatives:
    """The message to send: plain text with an HTML alternative, and RFC 8058's headers."""
    text, html = render_digest(user, digest)
    message = EmailMultiAlternatives(
        subject=digest.subject,
        body=text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[user.email],
        headers={
            "List-Unsubscribe": f"<{unsubscribe_url(user)}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    )
    message.attach_alternative(html, "text/html")
    return message


def send_digest(user, *, now: datetime, period: datetime | None = None) -> bool:
    """Send ``user`` its digest as of ``now``, if anything waits; whether one was sent.

    With ``period`` (an hourly or daily run), only if that period is not
    handled yet, and it is handled from then on, sent or found empty.
    """
    if not settings.CLAIMGRAPH_SITE_URL:
        raise ImproperlyConfigured("CLAIMGRAPH_SITE_URL must be set to send digests with links")
    if not user.is_active or not user.email:
        return False
    with transaction.atomic():
        DigestPreference.objects.get_or_create(user=user)
        preference = (
            DigestPreference.objects.select_for_update(skip_locked=True).filter(pk=user.pk).first()
        )
        if preference is None:  # another worker is sending this account's digest now
            return False
        if period is not None and preference.period_done and preference.period_done >= period:
            return False
        # Read under the lock, so the news starts after what the last digest told.
        digest = build_digest(user, preference, now=now)
        if period is not None:
            preference.period_done = period
        if not digest.empty:
            digest_message(user, digest).send()
            preference.sent_at = now
            preference.heard_to = max(preference.heard_to, digest.heard_to)
        preference.save(update_fields=["period_done", "sent_at", "heard_to", "updated_at"])
    return not digest.empty


def frequency_of(user, preference: DigestPreference | None) -> str:
    """How often ``user`` gets a digest: its choice, else daily for a steward, off otherwise."""
    if preference is not None:
        return preference.frequency
    return STEWARD_DEFAULT if subscribed(user, None) else Frequency.OFF


def send_due_digests(*, now: datetime) -> int:
    """Send every hourly and daily digest due at ``now`` (each at most once a period); how many.

    One account's failure does not hold up the others: each is logged, and
    the run fails visibly at the end, naming how many failed.
    """
    accounts = (
        get_user_model()
        ._default_manager.filter(is_active=True)
        .exclude(email="")
        .exclude(digest_preference__frequency__in=[Frequency.OFF, Frequency.IMMEDIATELY])
        .select_related("digest_preference")
        .order_by("pk")
    )
    sent = failed = 0
    for user in accounts:
        preference = getattr(user, "digest_preference", None)
        period = due_period(
            frequency_of(user, preference),
            preference.period_done if preference else None,
            now,
            daily_hour=settings.CLAIMGRAPH_DIGEST_DAILY_HOUR,
        )
        if period is None:
            continue
        try:
            sent += send_digest(user, now=now, period=period)
        except Exception:
            logger.exception("sending the digest of account %s failed", user.pk)
            failed += 1
    if failed:
        raise DigestsFailed(f"{failed} digest(s) could not be sent; {sent} were")
    return sent


class DigestsFailed(Exception):
    """Some digests could not be sent (each is logged with its error)."""


@task
def send_due_digests_task() -> int:
    """The periodic job (``notifications.worker.PERIODIC_JOBS``): the digests due now."""
    return send_due_digests(now=timezone.now())


@task
def send_digest_task(user_id: int) -> bool:
    """One account's digest now, for an account that chose to hear at once."""
    user = get_user_model()._default_manager.filter(pk=user_id).first()
    if user is None:
        return False
    preference = DigestPreference.objects.filter(pk=user_id).first()
    if preference is None or preference.frequency != Frequency.IMMEDIATELY:
        return False  # changed its mind since the events were announced
    return send_digest(user, now=timezone.now())


def on_events(events: Sequence[Event]) -> None:
    """The email channel (``notifications.channels.CHANNELS``): a digest for each account
    that chose to hear at once and hears of one of ``events``, sent after they commit."""
    ids = [event.pk for event in events]
    waiting = DigestPreference.objects.filter(
        frequency=Frequency.IMMEDIATELY, user__is_active=True
    ).select_related("user")
    for preference in waiting.exclude(user__email=""):
        user = preference.user
        kinds = subscribed(user, preference)
        heard = Event.objects.for_recipient(user).filter(pk__in=ids)
        if any(
            event.kind in kinds.get(event.scope_id, ())
            or (preference.own_challenges and event.addressee_id == user.pk)
            for event in heard
        ):
            enqueue_on_commit(send_digest_task, user_id=user.pk)
