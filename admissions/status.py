"""The admission status of system facts: a fold over their records (SPEC §6).

This module is the pure core of admissions. It reads no database, no clock
and no settings: callers pass plain records (:class:`PlainRecord`) and the
challenge share, and get back values (:class:`Status`, :class:`Fold`).

A system fact's status — ``candidate``, ``admitted``, ``rejected`` or
``suspended`` — follows from the set of its scope's records by these rules,
in precedence order. Every ordering uses the key ``(inserted_at, id)``, so
the same set of records yields the same statuses in whatever order they were
written or are passed in.

1. The latest admission record decides the verdict; with no admission record
   the fact is a ``candidate``.
2. Only an admitted fact can be suspended. A challenge against a candidate or
   rejected fact is recorded and changes nothing, and costs its author none
   of the cap. The rules read the current set of records, not their arrival:
   a challenge filed while the fact was a candidate takes effect once it is
   admitted.
3. An open evidenced challenge suspends its target → ``suspended``. A
   challenge without evidence is recorded and has no effect.
4. A refutation resolves exactly the challenge it names: a challenge is open
   while no refutation names it. That is set membership, not a comparison of
   dates, so a refutation with an earlier ``inserted_at`` than its challenge
   still resolves it and a second refutation changes nothing.
5. Only a refutation closes a challenge: a later admission record leaves a
   suspended fact suspended.
6. Flood cap: one account's open evidenced challenges suspend at most
   ``ceil(share% * A)`` facts, A being the scope's facts whose latest verdict
   is ``admitted`` (suspended ones included). The account's earliest
   challenges by ``(inserted_at, id)`` take effect; several challenges by one
   account on one fact count once, dated by the earliest. The rest are
   queued with no effect.

``derive`` applies all six rules to a whole scope. Rule 6 is the only one
that looks beyond one fact, and what it needs from the rest of the scope is
two numbers: A, and for each challenger of the fact how many of their
challenges on other facts rank before this one. ``judge`` takes those
numbers and applies the rules to one fact; ``derive`` computes them from the
records and calls ``judge`` for every fact, and ``admissions.selectors``
computes them in SQL and calls the same ``judge``, which is why the two paths
can be tested for equality down to the words of the explanation.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal
from uuid import UUID

RoleName = Literal["admission", "challenge", "refutation"]
StatusName = Literal["candidate", "admitted", "rejected", "suspended"]


@dataclass(frozen=True)
class PlainRecord:
    """What the fold needs to know about one record."""

    id: UUID
    fact_id: UUID
    role: RoleName
    author_id: int
    inserted_at: datetime
    verdict: Literal["admitted", "rejected"] | None = None
    evidenced: bool = False
    challenge_id: UUID | None = None
    # Only for the words of an explanation; grouping is by ``author_id``.
    author_name: str = ""

    @property
    def key(self) -> tuple[datetime, UUID]:
        """The total order of every rule."""
        return (self.inserted_at, self.id)

    @property
    def author(self) -> str:
        return self.author_name or f"account {self.author_id}"

    @property
    def short_id(self) -> str:
        return str(self.id)[:8]


@dataclass(frozen=True)
class Finding:
    """One reason behind a status: the rule, in plain words, and the records it rests on."""

    rule: int
    text: str
    records: tuple[UUID, ...] = ()


@dataclass(frozen=True)
class Status:
    """A system fact's derived status and why."""

    fact_id: UUID
    status: StatusName
    # The admission record that decided the verdict (rule 1), if any.
    verdict_record: UUID | None
    # The challenges in effect, one per account (rules 3 and 6).
    suspended_by: tuple[UUID, ...]
    # Open evidenced challenges held back by their author's cap (rule 6).
    queued: tuple[UUID, ...]
    admitted_count: int
    cap: int
    findings: tuple[Finding, ...]

    @property
    def explanation(self) -> str:
        return " ".join(finding.text for finding in self.findings)


@dataclass(frozen=True)
class AccountUsage:
    """One account's open evidenced challenges against the flood cap (rule 6)."""

    author_id: int
    author_name: str
    cap: int
    # Challenge ids, one per fact, in the order the cap ranks them.
    in_effect: tuple[UUID, ...]
    queued: tuple[UUID, ...]
    # Facts the account challenges with evidence that are not admitted:
    # no effect and no cost (rule 2), until the fact is admitted.
    dormant: int
    open_evidenced: int


@dataclass(frozen=True)
class Fold:
    """Every status of a scope, and each challenger's use of the cap."""

    statuses: Mapping[UUID, Status]
    accounts: Mapping[int, AccountUsage]
    admitted_count: int
    cap: int
    share_percent: int = field(default=25)

    def status_of(self, fact_id: UUID) -> Status:
        """A fact with no record at all is a candidate."""
        found = self.statuses.get(fact_id)
        if found is not None:
            return found
        return judge(
            fact_id, (), admitted_count=self.admitted_count, share_percent=self.share_percent
        )


def challenge_cap(admitted_count: int, share_percent: int) -> int:
    """``ceil(share% * A)``: rounded up, so one admitted fact can still be challenged."""
    return -(-admitted_count * share_percent // 100)


EffectName = Literal["suspended", "queued", "dormant", "none"]
# The closed set of what one open challenge does to its fact, in the order a
# reader meets them: in effect, held back by the flood cap, waiting for the
# fact to be admitted, never (no evidence, or another of its author's
# challenges on the fact counts for it).
EFFECTS: tuple[EffectName, ...] = ("suspended", "queued", "dormant", "none")


@dataclass(frozen=True)
class Effect:
    """What one open challenge does to its fact now, and why (rules 2, 3 and 6).

    Its words are addressed to the challenge's author ("your"): every face
    that shows it shows it to them (the flash, the form before filing, their
    dashboard, the API and MCP answers to the account that filed it).
    """

    effect: EffectName
    # What it does, in one sentence, and why (the cap, what it counts, when it frees up).
    headline: str
    why: str
    # The flood cap of the challenge's scope and the A it is computed from.
    cap: int
    admitted_count: int
    # How many of the author's challenges on other admitted facts rank before this one.
    earlier: int

    @property
    def reason(self) -> str:
        return f"{self.headline} {self.why}"

    @property
    def label(self) -> str:
        """The effect in a few words, for a badge."""
        return {
            "suspended": "suspends the fact",
            "queued": "queued with no effect",
            "dormant": "no effect until admitted",
            "none": "no effect",
        }[self.effect]


def effect_of(
    *,
    evidenced: bool,
    verdict: Literal["admitted", "rejected"] | None,
    earlier: int | None,
    cap: int,
) -> EffectName:
    """What an open challenge does to its fact: the one home of rules 2, 3 and 6 for one challenge.

    ``verdict`` is the fact's latest verdict (None: a candidate). ``earlier``
    counts the author's open evidenced challenges on *other* admitted facts
    that rank before this one by ``(inserted_at, id)``, one per fact; None
    when an earlier open evidenced challenge of the same author on this same
    fact counts instead (a repeat: several count once). A challenge not yet
    filed ranks after all of its author's, so ``earlier`` is then all of them:
    that is how the form says, before filing, what a challenge would do.

    In precedence order: no evidence → ``none`` (rule 3); the fact not
    admitted → ``dormant`` (rule 2); a repeat → ``none`` (rule 6); fewer than
    ``cap`` earlier → ``suspended``; else ``queued`` (rule 6).
    """
    if not evidenced:
        return "none"
    if verdict != "admitted":
        return "dormant"
    if earlier is None:
        return "none"
    return "suspended" if earlier < cap else "queued"


def split_by_cap[T](ranked: Sequence[T], cap: int) -> tuple[tuple[T, ...], tuple[T, ...]]:
    """One account's challenges on admitted facts, in rank order, as (in effect, queued)."""
    effects = [
        effect_of(evidenced=True, verdict="admitted", earlier=position, cap=cap)
        for position in range(len(ranked))
    ]
    return (
        tuple(item for item, name in zip(ranked, effects, strict=True) if name == "suspended"),
        tuple(item for item, name in zip(ranked, effects, strict=True) if name == "queued"),
    )


def challenge_effect(
    *,
    evidenced: bool,
    verdict: Literal["admitted", "rejected"] | None,
    earlier: int | None,
    admitted_count: int,
    share_percent: int,
) -> Effect:
    """``effect_of`` with its reason in words: the cap, what it counts and when it frees up."""
    cap = challenge_cap(admitted_count, share_percent)
    name = effect_of(evidenced=evidenced, verdict=verdict, earlier=earlier, cap=cap)
    rank = earlier or 0
    if not evidenced:
        headline = "No effect: filed without evidence."
        why = (
            "It is on the record and never suspends the fact; a challenge with at least one"
            " evidence ref would."
        )
    elif name == "dormant":
        what = "a candidate (no verdict yet)" if verdict is None else "rejected"
        headline = "No effect while the fact is not admitted."
        why = (
            f"The fact is {what}: a challenge changes nothing and costs none of your flood cap"
            " until a steward admits the fact; then it takes effect within your cap."
        )
    elif name == "none":
        headline = "No effect of its own: your earlier open challenge on this fact counts."
        why = (
            "Several challenges by one account on one fact count once; this one counts if"
            " that one is refuted."
        )
    else:
        of_scope = f"{share_percent}% of its {_plural(admitted_count, 'admitted fact')}, rounded up"
        if name == "suspended":
            headline = "Suspends the fact until a steward refutes it."
            why = (
                f"It is within your flood cap: number {rank + 1} of your open evidenced"
                f" challenges in this scope, where the cap is {cap} ({of_scope})."
            )
        else:
            ahead = rank - cap
            waiting = f" {ahead} more of yours {_be(ahead)} queued before it." if ahead else ""
            frees = f"when {ahead + 1} of your earlier challenges {_be(ahead + 1)} refuted"
            if share_percent > 0:
                # The least A whose cap exceeds ``rank``: ceil(A * share / 100) > rank.
                more = rank * 100 // share_percent + 1 - admitted_count
                frees += f", or when {_plural(more, 'more fact')} {_be(more)} admitted in the scope"
            headline = "Queued with no effect: it does not suspend the fact."
            why = (
                f"Your open evidenced challenges already suspend {_plural(cap, 'fact')}, your"
                f" flood cap in this scope ({of_scope}).{waiting} The cap has no time window:"
                f" it counts the challenges open now, so this one takes effect {frees}."
            )
    return Effect(name, headline, why, cap, admitted_count, rank)


def _plural(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def _be(n: int) -> str:
    return "is" if n == 1 else "are"


def derive(records: Iterable[PlainRecord], *, share_percent: int) -> Fold:
    """Apply rules 1-6 to every fact of one scope's records (any order)."""
    by_fact: dict[UUID, list[PlainRecord]] = defaultdict(list)
    for record in records:
        by_fact[record.fact_id].append(record)

    verdicts = {fact_id: latest_verdict(rows) for fact_id, rows in by_fact.items()}
    admitted = {fact_id for fact_id, verdict in verdicts.items() if _is_admitted(verdict)}
    admitted_count = len(admitted)
    cap = challenge_cap(admitted_count, share_percent)

    # Rule 6: each account's earliest open evidenced challenge per admitted
    # fact, ranked by (inserted_at, id) within the account.
    firsts: dict[int, dict[UUID, PlainRecord]] = defaultdict(dict)
    open_counts: dict[int, int] = defaultdict(int)
    dormant: dict[int, set[UUID]] = defaultdict(set)
    names: dict[int, str] = {}
    for fact_id, rows in by_fact.items():
        for challenge in open_evidenced(rows):
            names[challenge.author_id] = challenge.author_name
            open_counts[challenge.author_id] += 1
            if fact_id not in admitted:
                dormant[challenge.author_id].add(fact_id)
                continue
            standing = firsts[challenge.author_id].get(fact_id)
            if standing is None or challenge.key < standing.key:
                firsts[challenge.author_id][fact_id] = challenge
    ranked = {
        author_id: sorted(by_fact_first.values(), key=lambda record: record.key)
        for author_id, by_fact_first in firsts.items()
    }
    earlier: dict[UUID, dict[int, int]] = defaultdict(dict)
    for author_id, challenges in ranked.items():
        for position, challenge in enumerate(challenges):
            earlier[challenge.fact_id][author_id] = position

    statuses = {
        fact_id: judge(
            fact_id,
            rows,
            admitted_count=admitted_count,
            share_percent=share_percent,
            earlier=earlier.get(fact_id, {}),
        )
        for fact_id, rows in by_fact.items()
    }
    splits = {
        author_id: split_by_cap([c.id for c in ranked.get(author_id, [])], cap)
        for author_id in open_counts
    }
    accounts = {
        author_id: AccountUsage(
            author_id=author_id,
            author_name=names[author_id],
            cap=cap,
            in_effect=splits[author_id][0],
            queued=splits[author_id][1],
            dormant=len(dormant[author_id]),
            open_evidenced=count,
        )
        for author_id, count in open_counts.items()
    }
    return Fold(
        statuses=statuses,
        accounts=accounts,
        admitted_count=admitted_count,
        cap=cap,
        share_percent=share_percent,
    )


def latest_verdict(records: Iterable[PlainRecord]) -> PlainRecord | None:
    """Rule 1: the latest admission record by ``(inserted_at, id)``."""
    admissions = [record for record in records if record.role == "admission"]
    return max(admissions, key=lambda record: record.key) if admissions else None


def open_evidenced(records: Sequence[PlainRecord]) -> list[PlainRecord]:
    """Rules 3 and 4: evidenced challenges of these records that no refutation among them names."""
    refuted = {record.challenge_id for record in records if record.role == "refutation"}
    return [
        record
        for record in records
        if record.role == "challenge" and record.evidenced and record.id not in refuted
    ]


def judge(
    fact_id: UUID,
    records: Iterable[PlainRecord],
    *,
    admitted_count: int,
    share_percent: int,
    earlier: Mapping[int, int] | None = None,
    explain: bool = True,
) -> Status:
    """Rules 1-6 for one fact, given all of its records.

    With ``explain=False`` no findings are written, and the records may be
    just the latest verdict and the open evidenced challenges: that is all
    the decision reads (``admissions.selectors`` uses this for its fast path).

    ``admitted_count`` is A for the fact's scope. ``earlier`` maps each
    account with an open evidenced challenge on this (admitted) fact to how
    many facts that account challenges, openly and with evidence, whose
    admitted status and earliest challenge rank before this one (rule 6); an
    account missing from it is taken to rank first.
    """
    rows = sorted(records, key=lambda record: record.key)
    earlier = earlier or {}
    cap = challenge_cap(admitted_count, share_percent)
    findings: list[Finding] = []

    # Rule 1.
    admissions = [record for record in rows if record.role == "admission"]
    verdict = admissions[-1] if admissions else None
    if verdict is None:
        status: StatusName = "candidate"
        findings.append(Finding(1, "No steward has recorded a verdict: the fact is a candidate."))
    else:
        status = "admitted" if _is_admitted(verdict) else "rejected"
        of_how_many = f"; {len(admissions)} verdicts in all" if len(admissions) > 1 else ""
        findings.append(
            Finding(
                1,
                f"The latest verdict is {status}, by {verdict.author} at {_when(verdict)} "
                f"(record {verdict.short_id}{of_how_many}).",
                (verdict.id,),
            )
        )

    # Rule 4 and the unevidenced half of rule 3: what is on the record with
    # no effect, whatever the verdict.
    refutations = [record for record in rows if record.role == "refutation"]
    refuted = {record.challenge_id for record in refutations}
    challenges = [record for record in rows if record.role == "challenge"]
    resolved = [record for record in challenges if record.id in refuted]
    if resolved:
        findings.append(
            Finding(
                4,
                f"{_count(resolved, 'challenge')} closed by refutation: {_ids(resolved)}.",
                # Every refutation here names one of these challenges.
                tuple(record.id for record in resolved) + tuple(r.id for r in refutations),
            )
        )
    unevidenced = [r for r in challenges if not r.evidenced and r.id not in refuted]
    if unevidenced:
        findings.append(
            Finding(
                3,
                f"{_count(unevidenced, 'unevidenced challenge')} on the record with no effect: "
                f"{_ids(unevidenced)}.",
                tuple(record.id for record in unevidenced),
            )
        )

    standing = open_evidenced(rows)
    if status != "admitted":
        # Rule 2.
        if standing:
            findings.append(
                Finding(
                    2,
                    f"{_count(standing, 'open evidenced challenge')} ({_ids(standing)}) "
                    f"{'changes' if len(standing) == 1 else 'change'} nothing while the fact "
                    f"is {'a candidate' if status == 'candidate' else status} and "
                    f"{'costs' if len(standing) == 1 else 'cost'} no flood cap; "
                    f"{'it takes' if len(standing) == 1 else 'they take'} effect "
                    "if the fact is admitted.",
                    tuple(record.id for record in standing),
                )
            )
        return Status(
            fact_id=fact_id,
            status=status,
            verdict_record=verdict.id if verdict else None,
            suspended_by=(),
            queued=(),
            admitted_count=admitted_count,
            cap=cap,
            findings=_ordered(findings) if explain else (),
        )

    # Rules 3, 5 and 6 for an admitted fact: each account's earliest open
    # evidenced challenge on it counts, if the account's cap allows.
    first_by_author: dict[int, PlainRecord] = {}
    repeats: list[PlainRecord] = []
    for challenge in standing:  # already in (inserted_at, id) order
        if challenge.author_id in first_by_author:
            repeats.append(challenge)
        else:
            first_by_author[challenge.author_id] = challenge
    effects = {
        challenge.id: effect_of(
            evidenced=True, verdict="admitted", earlier=earlier.get(challenge.author_id, 0), cap=cap
        )
        for challenge in first_by_author.values()
    }
    in_effect = [c for c in first_by_author.values() if effects[c.id] == "suspended"]
    queued = [c for c in first_by_author.values() if effects[c.id] == "queued"]

    if in_effect:
        status = "suspended"
        for challenge in in_effect:
            findings.append(
                Finding(
                    3,
                    f"Suspended by the open evidenced challenge {challenge.short_id} "
                    f"from {challenge.author} at {_when(challenge)}.",
                    (challenge.id,),
                )
            )
        assert verdict is not None
        if verdict.key > min(challenge.key for challenge in in_effect):
            findings.append(
                Finding(
                    5,
                    "The verdict recorded after that challenge does not close it: "
                    "only a refutation does.",
                    (verdict.id,),
                )
            )
    else:
        findings.append(Finding(3, "No open evidenced challenge is in effect against it."))
    for challenge in queued:
        findings.append(
            Finding(
                6,
                f"The challenge {challenge.short_id} from {challenge.author} is queued beyond "
                f"the flood cap with no effect: {challenge.author} already has {cap} earlier "
                f"{'challenge' if cap == 1 else 'challenges'} in effect, and the cap is {cap} "
                f"({share_percent}% of {admitted_count} admitted facts, rounded up).",
                (challenge.id,),
            )
        )
    for challenge in repeats:
        findings.append(
            Finding(
                6,
                f"The challenge {challenge.short_id} from {challenge.author} counts once "
                "with their earlier challenge on this fact.",
                (challenge.id,),
            )
        )
    return Status(
        fact_id=fact_id,
        status=status,
        verdict_record=verdict.id,
        suspended_by=tuple(challenge.id for challenge in in_effect),
        queued=tuple(challenge.id for challenge in queued),
        admitted_count=admitted_count,
        cap=cap,
        findings=_ordered(findings) if explain else (),
    )


def _ordered(findings: list[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda finding: finding.rule))


def _is_admitted(verdict: PlainRecord | None) -> bool:
    return verdict is not None and verdict.verdict == "admitted"


def _when(record: PlainRecord) -> str:
    return record.inserted_at.isoformat(timespec="seconds")


def _count(records: Sequence[PlainRecord], noun: str) -> str:
    if len(records) == 1:
        return f"1 {noun}"
    return f"{len(records)} {noun}s"


def _ids(records: Sequence[PlainRecord]) -> str:
    return ", ".join(record.short_id for record in records)
