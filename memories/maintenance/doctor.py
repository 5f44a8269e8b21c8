"""The doctor's checks of the memory store and its workers: invariants no constraint holds.

PostgreSQL refuses what a constraint can state (one live fact per slot
value, a member in its conflict's scope, append-only records). What needs
several rows compared, or the clock, it cannot refuse; these checks find it.
Each is a read returning :class:`Violation` values — what is wrong, the ids
of the rows, what to do — and changes nothing. ``admissions.doctor`` adds
the check that needs the admission fold and runs them all (``manage.py
doctor``, and the hourly periodic job); a run is a ``DoctorRun``.

The checks, as docs/background.md ("The doctor") defines them:

- ``unlinked-values``: two active values of one slot that should compete
  and are not linked (``memories.core.rulings.linked``).
- ``moot-conflict``: an open conflict that should have closed by itself
  (``memories.core.decisions.conflict_is_moot``).
- ``unused-entity``: an entity no fact and no merge record names.
- ``look-alike-entities``: two entities of a scope whose names look alike (one
  confusable skeleton), neither merged away: made before look-alike names
  resolved, or by hand.
- ``stuck-task``: a task running far too long, or whose worker is gone.
- ``stale-heartbeat``: a worker that neither stopped nor beats.
"""

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import combinations, groupby
from typing import Any

from django.conf import settings
from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Case, Count, Exists, F, OuterRef, Q, Value, When, Window
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from memories.core.decisions import conflict_is_moot
from memories.core.rulings import linked
from memories.store.models import (
    Bucket,
    Cardinality,
    ConflictMember,
    DoctorRun,
    Entity,
    EntityMerge,
    Fact,
    Policy,
    WorkerHeartbeat,
)

# How many violations of one check a run lists: past that, the check is
# named as capped, and fixing the first ones comes before reading more.
LIST_AT_MOST = 100
# How many runs are kept.
KEEP_RUNS = 100


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which check, what is wrong, the rows, what to do."""

    check: str
    what: str
    ids: tuple[str, ...]
    todo: str

    def as_json(self) -> dict[str, Any]:
        return {"check": self.check, "what": self.what, "ids": list(self.ids), "todo": self.todo}


@dataclass(frozen=True)
class Check:
    """A named invariant and the read that finds its violations at ``now``, at most ``limit``."""

    name: str
    invariant: str
    find: Callable[[datetime, int], list[Violation]]


@dataclass(frozen=True)
class Examination:
    started_at: datetime
    finished_at: datetime
    violations: tuple[Violation, ...]
    # The checks that found more than LIST_AT_MOST: only the first are listed.
    capped: tuple[str, ...]


def examine(
    checks: Sequence[Check], *, now: datetime, clock: Callable[[], datetime]
) -> Examination:
    """Run ``checks`` as of ``now``; ``clock`` times the run."""
    violations: list[Violation] = []
    capped = []
    for check in checks:
        found = check.find(now, LIST_AT_MOST + 1)
        if len(found) > LIST_AT_MOST:
            capped.append(check.name)
        violations += found[:LIST_AT_MOST]
    return Examination(now, clock(), tuple(violations), tuple(capped))


def record_examination(examination: Examination) -> DoctorRun:
    """Keep ``examination`` as a ``DoctorRun`` (the Health page shows the latest)."""
    run = DoctorRun.objects.create(
        started_at=examination.started_at,
        finished_at=examination.finished_at,
        violations=[violation.as_json() for violation in examination.violations],
        capped=list(examination.capped),
    )
    old = DoctorRun.objects.order_by("-started_at", "-id").values("pk")[KEEP_RUNS:]
    DoctorRun.objects.filter(pk__in=list(old)).delete()
    return run


# --- the store -----------------------------------------------------------------------

UNLINKED_VALUES = "unlinked-values"
MOOT_CONFLICT = "moot-conflict"
UNUSED_ENTITY = "unused-entity"
LOOK_ALIKE_ENTITIES = "look-alike-entities"

# How many facts of crowded slots are weighed per read of their conflicts.
_FACTS_PER_READ = 2_000


def unlinked_values(now: datetime, limit: int) -> list[Violation]:
    """Active values of one slot that compete and share no open conflict and no ruling.

    A slot here is (scope, subject, predicate, bucket, and the author for a
    ``user`` fact): the facts the write path weighs against each other. Its
    values compete when the predicate is one-valued, not event-like and of
    policy ``supersede`` or ``review`` (under ``parallel`` they coexist by
    rule, SPEC §2). Active: live and not marked decayed (a decayed value
    does not compete, docs/background.md). Two such values are linked when
    they share an open conflict or were both members of a conflict a
    steward ruled on (``coexist``, ``dismissed``, ``kept``): the write path
    supersedes or flags, and the crawler links, every other pair.
    """
    owner = Case(When(bucket=Bucket.USER, then=F("author_id")), default=Value(None))
    crowded = (
        Fact.objects.live()
        .filter(
            decayed_at__isnull=True,
            predicate__cardinality=Cardinality.ONE,
            predicate__event_like=False,
        )
        .exclude(predicate__policy=Policy.PARALLEL)
        .annotate(
            owner=owner,
            values=Window(
                Count("pk"),
                partition_by=[
                    F("scope_id"),
                    F("subject_id"),
                    F("predicate_id"),
                    F("bucket"),
                    owner,
                ],
            ),
        )
        .filter(values__gt=1)
        .order_by("scope_id", "subject_id", "predicate_id", "bucket", "owner", "recorded_at", "id")
        .values_list("id", "scope_id", "subject_id", "predicate__name", "bucket", "owner")
    )
    violations: list[Violation] = []
    for slots in _batches(_slots(crowded.iterator()), _FACTS_PER_READ):
        ties = ConflictMember.objects.ties(fact_id for _, facts in slots for fact_id in facts)
        for key, facts in slots:
            unlinked = _unlinked(facts, ties)
            if unlinked:
                violations.append(_unlinked_violation(key, unlinked))
                if len(violations) >= limit:
                    return violations
    return violations


def _slots(rows: Iterator[tuple]) -> Iterator[tuple[tuple, list]]:
    for key, group in groupby(rows, key=lambda row: row[1:]):
        yield key, [row[0] for row in group]


def _batches(slots: Iterator[tuple[tuple, list]], size: int) -> Iterator[list[tuple[tuple, list]]]:
    batch: list[tuple[tuple, list]] = []
    held = 0
    for slot in slots:
        batch.append(slot)
        held += len(slot[1])
        if held >= size:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def _unlinked(facts: list, ties: dict) -> list:
    """The facts of one slot in at least one pair that is not linked, in the slot's order."""
    none = (frozenset(), frozenset())
    loose = set()
    for a, b in combinations(facts, 2):
        if not linked(*ties.get(a, none), *ties.get(b, none)):
            loose |= {a, b}
    return [fact for fact in facts if fact in loose]


def _unlinked_violation(key: tuple, facts: list) -> Violation:
    scope_id, subject_id, predicate, bucket, owner = key
    whose = f"the user bucket of account {owner}" if bucket == Bucket.USER else "the system bucket"
    if bucket == Bucket.USER:
        todo = (
            "The author, or a steward of the scope, invalidates the values that no longer hold "
            "(the crawler walks the system bucket only)."
        )
    else:
        todo = (
            "Run manage.py crawl --full: it links competing values with a conflict for a "
            "steward to rule on. A vocabulary change (a predicate made one-valued), or a "
            "revert made before reverts linked every live value of the slot, can leave values "
            "like this."
        )
    return Violation(
        UNLINKED_VALUES,
        f"{len(facts)} live values of the one-valued {predicate} on subject {subject_id} in "
        f"scope {scope_id} ({whose}) share no open conflict and no steward's ruling",
        tuple(str(fact) for fact in facts),
        todo,
    )


def moot_conflicts(now: datetime, limit: int) -> list[Violation]:
    """Open conflicts that should have closed by themselves (SPEC §3).

    An open conflict is moot when ``decisions.conflict_is_moot`` says so of
    its members' roles and liveness: its incoming fact is no longer live, or
    none of its standing facts is; without an incoming side, fewer than two
    members are live. ``do_apply`` closes one as soon as a member's change makes
    it so; one left open was closed around, not through, ``do_apply``.
    """
    members = (
        ConflictMember.objects.filter(conflict__resolved_at__isnull=True)
        .order_by("conflict__opened_at", "conflict_id", "fact_id")
        .values_list("conflict_id", "conflict__scope_id", "role", "fact_id", "fact__t_invalid")
    )
    violations: list[Violation] = []
    for (conflict_id, scope_id), group in groupby(members.iterator(), key=lambda row: row[:2]):
        rows = list(group)
        if not conflict_is_moot([(role, t_invalid is None) for *_, role, _, t_invalid in rows]):
            continue
        gone = [str(fact_id) for *_, fact_id, t_invalid in rows if t_invalid is not None]
        violations.append(
            Violation(
                MOOT_CONFLICT,
                f"open conflict {conflict_id} in scope {scope_id} should have closed as moot: "
                f"{len(gone)} of its {len(rows)} members are no longer live",
                (str(conflict_id), *gone),
                "Dismiss it from its page in the console (Conflicts), saying its members are no "
                "longer live. Nothing else closes it: a conflict closes as moot when a change to "
                "one of its members goes through the write path.",
            )
        )
        if len(violations) >= limit:
            break
    return violations


def unused_entities(now: datetime, limit: int) -> list[Violation]:
    """Entities that no fact and no merge record names.

    An entity is used by a fact that has it as subject or object, live or not
    (nothing is deleted), and by an entity merge, on either side: an entity
    merged into another is that one's alias, and answers as it. (Its
    ``aliases`` are other names of the entity itself, not other entities.)
    The write path creates an entity in the transaction of the fact that
    names it, so an unused one was left by an import stopped between its
    entities and its facts, or made by hand.
    """
    unused = (
        Entity.objects.filter(
            ~Exists(Fact.objects.filter(subject_id=OuterRef("pk"))),
            ~Exists(Fact.objects.filter(object_ref_id=OuterRef("pk"))),
            ~Exists(
                EntityMerge.objects.filter(Q(entity_id=OuterRef("pk")) | Q(into_id=OuterRef("pk")))
            ),
        )
        .order_by("pk")
        .values_list("pk", "scope_id", "name")[:limit]
    )
    return [
        Violation(
            UNUSED_ENTITY,
            f"entity {pk} ({name!r}) in scope {scope_id} is named by no fact and no merge",
            (str(pk),),
            "Nothing refers to it: delete it in the admin (Entities), or leave it, which "
            "costs a name that the next write naming it will use.",
        )
        for pk, scope_id, name in unused
    ]


def look_alike_entities(now: datetime, limit: int) -> list[Violation]:
    """Entities of one scope with one name skeleton, none of them merged into another.

    A new name that looks like an entity's is that entity
    (``claimgraph_entity``), so the write path makes no such pair; the ones
    that exist were made before skeletons were kept (memories 0024), or by
    hand. Their facts meet no conflict check across them: a steward merges
    them, or leaves them when they are truly different things.
    """
    groups = (
        Entity.objects.exclude(skeleton="")
        .filter(~Exists(EntityMerge.objects.in_force().filter(entity_id=OuterRef("pk"))))
        .values("scope_id", "skeleton")
        .annotate(count=Count("pk"), ids=ArrayAgg("pk", ordering="pk"))
        .filter(count__gt=1)
        .order_by("scope_id", "skeleton")[:limit]
    )
    groups = list(groups)
    names = dict(
        Entity.objects.filter(pk__in=[pk for g in groups for pk in g["ids"]]).values_list(
            "pk", "name"
        )
    )
    return [
        Violation(
            LOOK_ALIKE_ENTITIES,
            f"entities {', '.join(repr(names[pk]) for pk in group['ids'])} in scope"
            f" {group['scope_id']} look alike (one confusable skeleton) and are separate",
            tuple(str(pk) for pk in group["ids"]),
            "New writes naming any of them reach the first; merge the others into it"
            " (console: Entities), or leave them if they are different things.",
        )
        for group in groups
    ]


# --- the workers ---------------------------------------------------------------------

STUCK_TASK = "stuck-task"
STALE_HEARTBEAT = "stale-heartbeat"


def stuck_tasks(now: datetime, limit: int) -> list[Violation]:
    """Tasks running past their time: longer than ``CLAIMGRAPH_TASK_STUCK_MINUTES``, or
    longer than ``CLAIMGRAPH_HEARTBEAT_STALE_SECONDS`` on a worker that is not alive.

    The worker is the last to claim the task (``worker_ids``); alive means
    not stopped and beating within ``CLAIMGRAPH_HEARTBEAT_STALE_SECONDS``
    (``memories.maintenance.health``). django-tasks-db never takes a running task back,
    so one whose worker died stays running, and its periodic job, which
    waits for it, is never enqueued again.
    """
    stale_after = timedelta(seconds=settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS)
    too_long = timedelta(minutes=settings.CLAIMGRAPH_TASK_STUCK_MINUTES)
    alive = set(_alive_workers(now))
    running = (
        DBTaskResult.objects.filter(
            status=TaskResultStatus.RUNNING, started_at__lt=now - min(stale_after, too_long)
        )
        .order_by("started_at")
        .values_list("pk", "task_path", "started_at", "worker_ids")
    )
    violations = []
    for pk, task_path, started_at, worker_ids in running:
        worker = worker_ids[-1] if worker_ids else None
        minutes = (now - started_at).total_seconds() / 60
        if worker not in alive:
            why = f"its worker {worker} is not alive"
        elif now - started_at > too_long:
            why = f"longer than {settings.CLAIMGRAPH_TASK_STUCK_MINUTES} minutes"
        else:
            continue
        violations.append(
            Violation(
                STUCK_TASK,
                f"task {pk} ({task_path}) has been running for {minutes:.0f} minutes: {why}",
                (str(pk),),
                "If its worker is gone, a live worker marks the task failed and enqueues it again "
                "within one and a half stale periods; with no worker running, mark it failed in "
                "the admin (Task results: 'Mark the selected running tasks failed') and retry it. "
                "If the worker is alive, look at what the task is waiting for.",
            )
        )
        if len(violations) >= limit:
            break
    return violations


def stale_heartbeats(now: datetime, limit: int) -> list[Violation]:
    """Workers that have not stopped and whose last heartbeat is older than
    ``CLAIMGRAPH_HEARTBEAT_STALE_SECONDS``."""
    stale_after = settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS
    silent = WorkerHeartbeat.objects.filter(
        stopped_at__isnull=True, beat_at__lt=now - timedelta(seconds=stale_after)
    ).order_by("beat_at")[:limit]
    return [
        Violation(
            STALE_HEARTBEAT,
            f"worker {beat.worker_id} (pid {beat.pid} on {beat.host}) has not beaten for "
            f"{(now - beat.beat_at).total_seconds():.0f} s (stale after {stale_after:.0f} s) "
            "and did not stop",
            (beat.worker_id,),
            "If it still runs, its scheduler is stuck: restart it. If it is gone (killed, its "
            "machine lost), any live worker marks it stopped within half a stale period; with "
            "none running, mark it stopped in the admin (Worker heartbeats: 'Mark the "
            "selected workers stopped').",
        )
        for beat in silent
    ]


def _alive_workers(now: datetime) -> Iterable[str]:
    stale_after = timedelta(seconds=settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS)
    return WorkerHeartbeat.objects.filter(
        stopped_at__isnull=True, beat_at__gte=now - stale_after
    ).values_list("worker_id", flat=True)


STORE_CHECKS = (
    Check(
        UNLINKED_VALUES,
        "two active values of a one-valued slot share an open conflict or a steward's ruling",
        unlinked_values,
    ),
    Check(MOOT_CONFLICT, "no open conflict is moot", moot_conflicts),
)
ENTITY_CHECKS = (
    Check(UNUSED_ENTITY, "every entity is named by a fact or a merge", unused_entities),
    Check(
        LOOK_ALIKE_ENTITIES,
        "no two entities of a scope look alike unless one is merged into another",
        look_alike_entities,
    ),
)
WORKER_CHECKS = (
    Check(STUCK_TASK, "no task runs past its time or outlives its worker", stuck_tasks),
    Check(STALE_HEARTBEAT, "every worker that did not stop beats", stale_heartbeats),
)
