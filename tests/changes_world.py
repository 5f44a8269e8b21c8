"""Automatic changes to revert, made the way the system makes them, for the revert tests."""

from datetime import datetime, timedelta

from django.utils import timezone

from memories.core.effects import SUPERSEDE_RULE
from memories.maintenance.crawler import run_crawl
from memories.maintenance.doctor import unlinked_values
from memories.maintenance.judge import run_judge
from memories.maintenance.truth import recompute_slot
from memories.store.models import AuditEntry, Conflict, ConflictMember, Fact, Predicate
from memories.store.vocabulary import forget_vocabulary
from memories.write.actions import assert_fact
from tests.adjudicators import ScriptedAdjudicator

STATE = (
    "t_invalid",
    "invalidated_at",
    "invalidated_by_id",
    "invalidation_kind",
    "invalidation_reason",
    "superseded_by_id",
    "decayed_at",
)


def state(*facts: Fact) -> list[tuple]:
    """What a revert restores of each fact: its interval, how it ended, its decay mark."""
    rows = Fact.objects.filter(pk__in=[f.pk for f in facts]).values_list("pk", *STATE)
    by_id = {row[0]: row[1:] for row in rows}
    return [by_id[f.pk] for f in facts]


def write(actor, subject, predicate, obj, *, source="code", now=None, **extra):
    data = {
        "scope": "project",
        "subject": subject,
        "predicate": predicate,
        "object": obj,
        "source_type": source,
        **extra,
    }
    return assert_fact(actor=actor, data=data, now=now).fact


def write_path_supersession(member):
    """1.0 then 1.1 of AuthService's version: the write path supersedes 1.0 (credited to member)."""
    older = write(member, "AuthService", "core/has-version", "1.0")
    before = state(older)
    newer = write(member, "AuthService", "core/has-version", "1.1")
    entry = AuditEntry.objects.get(action="superseded", rule=SUPERSEDE_RULE)
    return entry, older, newer, before


def crawler_supersession(member):
    """Heroku, then Fly with an update cue, on a slot made one-valued: the crawler supersedes."""
    now = timezone.now()
    older = write(
        member, "shoply", "core/uses", "Heroku", t_valid=(now - timedelta(days=10)).isoformat()
    )
    newer = write(
        member,
        "shoply",
        "core/uses",
        "Fly",
        t_valid=(now - timedelta(days=2)).isoformat(),
        statement="we now deploy on Fly",
    )
    Predicate.objects.filter(name="core/uses").update(cardinality="one", policy="supersede")
    forget_vocabulary()
    before = state(older)
    run_crawl()
    entry = AuditEntry.objects.get(action="superseded", rule="crawler: superseded")
    return entry, older, newer, before


def decay_mark(member, settings):
    """A fact unused for 90 days, below a threshold of 0.5: the crawler marks it decayed."""
    fact = write(
        member,
        "AuthService",
        "core/has-version",
        "2.0.0",
        confidence=0.9,
        now=timezone.now() - timedelta(days=90),
    )
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = 0.5
    before = state(fact)
    run_crawl()
    entry = AuditEntry.objects.get(action="decayed")
    return entry, fact, before


def crawler_conflict(member):
    """Two values without an update cue on a one-valued slot: the crawler opens a conflict."""
    now = timezone.now()
    facts = [
        write(member, "shoply", "core/uses", name, t_valid=(now - timedelta(days=d)).isoformat())
        for name, d in (("Heroku", 10), ("Fly", 2))
    ]
    Predicate.objects.filter(name="core/uses").update(cardinality="one", policy="supersede")
    forget_vocabulary()
    run_crawl()
    entry = AuditEntry.objects.get(action="opened-conflict", rule="crawler: opened-conflict")
    return entry, Conflict.objects.get(pk=entry.target_id), facts


def judge_resolution(member):
    """Mara at two employers in a conflict; the judge, sure of a supersede, ends the older."""
    Predicate.objects.filter(name="core/works-at").update(policy="parallel", cardinality="many")
    forget_vocabulary()
    facts = [
        write(
            member,
            "Mara",
            "core/works-at",
            employer,
            source="user-assertion",
            t_valid=f"2026-0{month}-01T00:00:00",
        )
        for month, employer in ((1, "Northstar Labs"), (2, "Cedar Works"))
    ]
    Predicate.objects.filter(name="core/works-at").update(cardinality="one")
    forget_vocabulary()
    conflict = Conflict.objects.create(
        scope_id=facts[0].scope_id,
        kind="contradiction",
        subject_id=facts[0].subject_id,
        predicate_id=facts[0].predicate_id,
        opened_at=timezone.now(),
    )
    for fact in facts:
        ConflictMember.objects.create(
            conflict=conflict, scope_id=conflict.scope_id, fact=fact, role="existing", disputes=True
        )
    before = state(*facts)
    adjudicator = ScriptedAdjudicator("supersede", 0.95)
    [judgement] = run_judge(resolve=True, adjudicator=adjudicator)
    assert judgement.outcome == "resolved: keep"
    entry = AuditEntry.objects.get(action="resolved-conflict", rule="judge: supersede")
    return entry, conflict, facts, before, adjudicator


# --- a slot a steward reverted on, and what automatic maintenance may do to it -------


def one_two_three(member, *, subject="AuthService", start=None):
    """1, then 2, then 3 of one one-valued slot, a minute apart.

    The write path supersedes 1 by 2 (change X), then 2 by 3 (change Y).
    Returns the three facts, X and Y.
    """
    start = start or timezone.now() - timedelta(hours=1)
    facts = [
        write(member, subject, "core/has-version", value, now=start + timedelta(minutes=n))
        for n, value in enumerate(("1", "2", "3"))
    ]
    x, y = (
        AuditEntry.objects.get(action="superseded", rule=SUPERSEDE_RULE, after__fact=str(f.pk))
        for f in facts[:2]
    )
    return facts, x, y


def maintain(fact, *, now, adjudicator=None):
    """One pass of each automatic maintainer: truth maintenance of ``fact``'s slot, the
    crawler (a full pass) and the judge (resolving, on a confident supersede)."""
    recompute_slot(fact.scope_id, fact.subject_id, fact.predicate_id, now=now)
    run_crawl(full=True)
    run_judge(
        resolve=True, adjudicator=adjudicator or ScriptedAdjudicator("supersede", 0.95), now=now
    )


def unlinked_values_now():
    """The doctor's ``unlinked-values`` violations: competing live values outside a conflict."""
    return unlinked_values(timezone.now(), 100)


MAINTAINERS = ("truth:", "crawler:", "judge:")


def maintenance_closings():
    """Every fact truth maintenance, the crawler or the judge closed: (fact id, t_invalid, when)."""
    entries = AuditEntry.objects.filter(actor=None).exclude(rule="").order_by("at", "id")
    for entry in entries:
        if not entry.rule.startswith(MAINTAINERS):
            continue
        after = entry.after or {}
        if entry.action == "superseded" and after.get("t_invalid"):
            yield entry.target_id, datetime.fromisoformat(after["t_invalid"]), entry.at
        for fact_id in after.get("invalidated", ()):
            # A resolution ends the facts it does not keep at its own time.
            yield fact_id, entry.at, entry.at


def reopenings():
    """Every fact a steward's revert reopened: (fact id, when)."""
    for entry in AuditEntry.objects.filter(action="reverted"):
        after = entry.after or {}
        if after.get("kind") == "supersession":
            yield after["fact"], entry.at
        for fact_id in after.get("reopened", ()):
            yield fact_id, entry.at


def backdated_closings():
    """Closings by a maintainer dated before a revert, made before them, reopened the fact."""
    reopened = list(reopenings())
    return [
        (fact_id, t_invalid, revert_at)
        for fact_id, t_invalid, at in maintenance_closings()
        for reopened_id, revert_at in reopened
        if reopened_id == fact_id and revert_at <= at and t_invalid < revert_at
    ]
