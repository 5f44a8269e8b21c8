"""What one person's digest lists: the items waiting in the queues as they stand, and news.

Waiting items are read from the queues at the moment the digest is built,
through the QuerySets the console's queue pages list them with (open
conflicts with their candidates, ``admissions.selectors.candidates``,
``admissions.selectors.open_challenge_entries``) and counted by
``admissions.queues.waiting``, the one home of a queue's count. Each item
carries its sides and the absolute link of the console page that acts on it.
News is the events addressed to the person, or of a kind that is not a queue,
recorded since the last digest, read through ``Event.objects.for_recipient``,
the one rule of who may hear of an event.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q

from admissions.models import QueueKind
from admissions.queues import QueueName, waiting
from admissions.selectors import candidates, open_challenge_entries
from memories.store.models import Conflict, Fact, Scope
from notifications.email.models import DigestPreference
from notifications.links import console_url, queue_url
from notifications.models import Event, EventKind

# The kinds a digest tells of, per scope. A queue's kind lists what waits in
# that queue; the others are news. Site-wide kinds (a stale worker, the
# doctor) name no scope and are left to the Health page and the webhooks.
QUEUE_KINDS: dict[str, QueueName] = {
    EventKind.CONFLICT_OPENED: "conflicts",
    EventKind.CANDIDATE_WAITING: "candidates",
    EventKind.CHALLENGE_FILED: "challenges",
}
NEWS_KINDS = (EventKind.CHALLENGE_SETTLED, EventKind.CHANGE_AUTOMATIC, EventKind.QUEUE_OVERDUE)
DIGEST_KINDS: tuple[str, ...] = (*QUEUE_KINDS, *NEWS_KINDS)

# How many items of each queue a digest lists; the rest are counted, with the queue's link.
ITEMS_PER_QUEUE = 20
# How many news items one digest tells of; later ones wait for the next digest.
NEWS_LIMIT = 50
# A first digest's news reaches this far back, not to the beginning of the store.
FIRST_NEWS = timedelta(days=1)


@dataclass(frozen=True)
class Side:
    """One side of an item: a value, where it came from, and the page that shows it."""

    value: str
    source: str
    url: str
    confidence: float | None = None


@dataclass(frozen=True)
class Item:
    """One thing waiting for a ruling, with its sides and the link that acts on it."""

    title: str
    url: str
    scope: str
    since: datetime
    sides: tuple[Side, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Section:
    """One queue's items in the digest: the first ``ITEMS_PER_QUEUE``, and how many wait."""

    label: str
    action: str
    url: str
    items: tuple[Item, ...]
    count: int
    more: bool

    @property
    def unlisted(self) -> int:
        return self.count - len(self.items)


@dataclass(frozen=True)
class News:
    kind: str
    summary: str
    title: str
    url: str
    occurred_at: datetime
    sides: tuple[dict, ...] = ()


@dataclass(frozen=True)
class Digest:
    sections: tuple[Section, ...] = ()
    news: tuple[News, ...] = ()
    # The newest event this digest tells of (0: none).
    heard_to: int = 0
    built_at: datetime | None = None

    @property
    def empty(self) -> bool:
        """Nothing waits and nothing happened: no digest is sent."""
        return not self.sections and not self.news

    @property
    def subject(self) -> str:
        parts = [
            f"{section.label.lower()}: {section.count}{'+' if section.more else ''}"
            for section in self.sections
        ]
        if self.news:
            parts.append(f"news: {len(self.news)}")
        return "claimgraph: " + ", ".join(parts)


def stewarded_scope_ids(user) -> set[int]:
    """The scopes ``user`` stewards now (``memories.store.roles``): the only ones it hears of."""
    return set(Scope.objects.stewarded_by(user).values_list("pk", flat=True))


def subscribed(user, preference: DigestPreference | None) -> dict[int, frozenset[str]]:
    """The kinds ``user`` hears of in each scope: its choice, else every kind of every scope
    it stewards. A scope it no longer stewards is left out whatever it chose."""
    stewarded = stewarded_scope_ids(user)
    if preference is None or not preference.chosen:
        return dict.fromkeys(stewarded, frozenset(DIGEST_KINDS))
    return {
        subscription.scope_id: frozenset(subscription.kinds)
        for subscription in preference.subscriptions.all()
        if subscription.scope_id in stewarded
    }


def build_digest(user, preference: DigestPreference | None, *, now: datetime) -> Digest:
    """``user``'s digest at ``now``: empty when nothing it subscribed to waits or happened."""
    kinds = subscribed(user, preference)
    sections = []
    for kind, queue in QUEUE_KINDS.items():
        scope_ids = sorted(scope_id for scope_id, chosen in kinds.items() if kind in chosen)
        if not scope_ids:
            continue
        counted = waiting(Scope.objects.filter(pk__in=scope_ids))[queue]
        if not counted.count:
            continue
        action, read = _QUEUE_READS[queue]
        sections.append(
            Section(
                QueueKind(queue).label,
                action,
                queue_url(queue),
                tuple(read(scope_ids)),
                counted.count,
                counted.more,
            )
        )
    news = _news(user, preference, kinds, now=now)
    return Digest(
        sections=tuple(sections),
        news=tuple(_told(event) for event in news),
        heard_to=max((event.pk for event in news), default=0),
        built_at=now,
    )


def _news(
    user, preference: DigestPreference | None, kinds: dict[int, frozenset[str]], *, now: datetime
) -> Sequence[Event]:
    """The events since the last digest that ``user`` hears of as news, oldest first."""
    wanted = Q()
    for kind in NEWS_KINDS:
        scope_ids = [scope_id for scope_id, chosen in kinds.items() if kind in chosen]
        if scope_ids:
            wanted |= Q(kind=kind, scope_id__in=scope_ids)
    if preference is not None and preference.own_challenges:
        wanted |= Q(addressee=user)
    if not wanted:
        return ()
    events = Event.objects.for_recipient(user).filter(wanted)
    if preference is not None and preference.heard_to:
        events = events.filter(pk__gt=preference.heard_to)
    else:
        events = events.filter(recorded_at__gt=now - FIRST_NEWS)
    return list(events.order_by("id")[:NEWS_LIMIT])


def _told(event: Event) -> News:
    data = event.data or {}
    item = data.get("item") or {}
    return News(
        kind=event.get_kind_display(),
        summary=str(data.get("summary", "")),
        title=str(item.get("title", "")),
        url=str(item.get("url", "")),
        occurred_at=event.occurred_at,
        sides=tuple(side for side in data.get("sides") or () if isinstance(side, dict)),
    )


# --- the queues' items ------------------------------------------------------------------


def _fact_url(fact: Fact) -> str:
    return console_url("fact", fact_id=fact.pk)


def _side_of(fact: Fact) -> Side:
    return Side(fact.object_display, fact.source_type.name, _fact_url(fact), fact.confidence)


def _open_conflicts(scope_ids: list[int]) -> list[Item]:
    # The conflicts queue's own read (console.views.conflicts): open, oldest
    # first, each with its candidates in their one order (SPEC §9).
    listed = (
        Conflict.objects.open()
        .filter(scope_id__in=scope_ids)
        .select_related("scope", "subject", "predicate")
        .with_candidates()
        .order_by("opened_at", "id")[:ITEMS_PER_QUEUE]
    )
    items = []
    for conflict in listed:
        group = bool(conflict.predicate.exclusion_group)
        items.append(
            Item(
                title=f"{conflict.subject.name} {conflict.predicate.name}",
                url=console_url("conflict", conflict_id=conflict.pk),
                scope=conflict.scope.name,
                since=conflict.opened_at,
                sides=tuple(
                    Side(
                        f"{member.fact.predicate.name} {member.fact.object_display}"
                        if group
                        else member.fact.object_display,
                        member.fact.source_type.name,
                        _fact_url(member.fact),
                        member.fact.confidence,
                    )
                    for member in conflict.candidates
                ),
                note=f"{conflict.get_kind_display()} conflict",
            )
        )
    return items


def _waiting_candidates(scope_ids: list[int]) -> list[Item]:
    return [
        Item(
            title=f"{fact.subject.name} {fact.predicate.name}",
            url=_fact_url(fact),
            scope=fact.scope.name,
            since=fact.recorded_at,
            sides=(_side_of(fact),),
            note=f"written by {fact.author.get_username()}",
        )
        for fact in candidates(scope_ids)[:ITEMS_PER_QUEUE]
    ]


def _open_challenges(scope_ids: list[int]) -> list[Item]:
    items = []
    for entry in open_challenge_entries(scope_ids)[:ITEMS_PER_QUEUE]:
        record = entry.challenge
        fact = record.fact
        evidence = "; ".join(str(piece.get("ref", "")) for piece in record.evidence or ())
        items.append(
            Item(
                title=f"{fact.subject.name} {fact.predicate.name}",
                url=_fact_url(fact) + f"#record-{record.pk}",
                scope=record.scope.name,
                since=entry.inserted_at,
                sides=(
                    Side(fact.object_display, "the fact as it stands", _fact_url(fact)),
                    Side(
                        record.ground,
                        f"challenge by {record.author.get_username()}"
                        + (f", evidence: {evidence}" if evidence else ", no evidence"),
                        _fact_url(fact) + f"#record-{record.pk}",
                    ),
                ),
                note="with evidence" if entry.evidenced else "without evidence: no effect",
            )
        )
    return items


# Each queue a digest lists (headed by QueueKind's label, linked by links.queue_url):
# what a steward does there, and how its items are read.
_QUEUE_READS: dict[QueueName, tuple[str, Callable[[list[int]], list[Item]]]] = {
    "conflicts": ("Rule on it", _open_conflicts),
    "candidates": ("Admit or reject it", _waiting_candidates),
    "challenges": ("Refute it or let it stand", _open_challenges),
}
