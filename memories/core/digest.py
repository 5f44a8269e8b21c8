"""The context digest (SPEC §10): what a scope believes, as compact Markdown for a prompt.

Pure: the caller gathers plain values (``admissions.digest``) and passes the
time they were read at; :func:`render` returns the text and what it left out.
What a slot with an open conflict shows is not decided here but by
``memories.core.contested.what_slot_shows``, the rule recall follows too, so
the digest and recall never disagree about a value.

The rules, in order:

1. Sections come in a fixed order, and within the budget the earlier wins:
   commitments (decisions that must never be overruled silently), then the
   rest of the current truth, then "unknown — disputed": the open conflicts
   in which nothing is current.
2. **Every value once.** A current value is listed in its section only. An
   open conflict disputing a current value is not "unknown": its other
   members are listed under that value's line, as contesting it, with the
   conflict named; the current value is never listed again. A conflict with
   no current member is listed under "unknown — disputed", all its members
   side by side. Conflicts that share a member are shown together, once.
3. Within a section: facts by effective confidence, highest first, ties by
   id; unknown conflicts by when they opened, then id; a conflict's other
   members by recorded time, then id, so none is favoured by its place. The
   same values give the same text, whatever order they arrive in.
4. Blocks (a fact's line with what contests it; an unknown conflict with
   all its members) are added whole, in that order, while they fit; the
   first that does not fit ends the digest, and a last line says how many
   of each were left out. The text never exceeds the budget: a budget too
   small even for the heading is cut to size.
5. Values are written on one line each: whitespace (line breaks included)
   collapses to one space and long values are shortened with "…", so a value
   can neither start a section of its own nor fill the budget alone.
"""

from dataclasses import dataclass
from datetime import datetime

from memories.core.contested import Contest, Member, OpenConflict, Slot, what_slot_shows

# A value longer than this is shortened: one 2,000-character object must not
# take a whole small budget.
MAX_VALUE = 200
MAX_NAME = 100


@dataclass(frozen=True)
class Line:
    """One fact as the digest shows it."""

    id: str
    subject: str
    predicate: str
    object: str
    source_type: str
    confidence: float  # effective, at the digest's time
    recorded_at: datetime


@dataclass(frozen=True)
class Candidate:
    fact: Line
    # The disputed member (served as truth only once a human resolves it),
    # or a standing fact the disputed one collided with.
    disputed: bool


@dataclass(frozen=True)
class Dispute:
    """One open conflict, with the members the reader may see."""

    conflict_id: str
    kind: str
    opened_at: datetime
    subject: str
    predicate: str
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True)
class Counts:
    commitments: int = 0
    facts: int = 0
    conflicts: int = 0

    @property
    def total(self) -> int:
        return self.commitments + self.facts + self.conflicts


@dataclass(frozen=True)
class Digest:
    markdown: str
    shown: Counts
    omitted: Counts


@dataclass(frozen=True)
class _Block:
    text: str
    counts: Counts


def render(
    *,
    scope: str,
    subject: str | None,
    at: datetime,
    commitments: tuple[Line, ...] | list[Line],
    truth: tuple[Line, ...] | list[Line],
    disputes: tuple[Dispute, ...] | list[Dispute],
    budget: int,
) -> Digest:
    """The digest of these values in at most ``budget`` characters (rules above).

    ``commitments`` and ``truth`` are what recall serves; ``disputes`` the
    open conflicts touching the scope (or subject), each with its members,
    current or not.
    """
    commitments = _by_confidence(commitments)
    truth = _by_confidence(truth)
    by_id = {line.id: line for line in (*commitments, *truth)}
    by_id.update(
        (candidate.fact.id, candidate.fact)
        for dispute in disputes
        for candidate in dispute.candidates
        if candidate.fact.id not in by_id
    )
    conflicts = {dispute.conflict_id: dispute for dispute in disputes}
    # The whole digest as one slot's worth of values: a fact is in one slot,
    # so a contest never spans two and what each slot shows is unchanged.
    shown = what_slot_shows(
        Slot(
            believed=tuple(line.id for line in (*commitments, *truth)),
            conflicts=tuple(
                OpenConflict(
                    id=dispute.conflict_id,
                    kind=dispute.kind,
                    opened_at=dispute.opened_at,
                    members=tuple(
                        Member(
                            id=candidate.fact.id,
                            recorded_at=candidate.fact.recorded_at,
                            disputed=candidate.disputed,
                        )
                        for candidate in dispute.candidates
                    ),
                )
                for dispute in disputes
            ),
        )
    )
    current = set(shown.current)
    # Each contest with a current member hangs under the first of them shown.
    contesting: dict[str, Contest] = {
        contest.standing[0]: contest for contest in shown.contests if contest.standing
    }

    def fact_block(line: Line, counts: Counts) -> _Block:
        contest = contesting.get(line.id)
        if contest is None:
            return _Block(_fact_line(line), counts)
        text = _fact_line(line, contested=True) + "".join(
            _member_line(by_id[member.id], member, contest, beside=line.predicate, contesting=True)
            for member in contest.candidates
        )
        return _Block(text, Counts(counts.commitments, counts.facts, len(contest.conflicts)))

    sections = [
        (
            "Commitments",
            [fact_block(line, Counts(commitments=1)) for line in commitments if line.id in current],
        ),
        (
            "Current truth",
            [fact_block(line, Counts(facts=1)) for line in truth if line.id in current],
        ),
        (
            "Unknown — disputed",
            [
                _unknown_block(contest, conflicts, by_id)
                for contest in shown.contests
                if not contest.standing
            ],
        ),
    ]
    totals = _sum(block.counts for _, blocks in sections for block in blocks)
    head = _heading(scope, subject, at, empty=totals.total == 0)

    # Everything, if it fits; else the blocks that fit with room kept for
    # the note of what was left out (its length with every block omitted
    # bounds its length with fewer).
    markdown, counted = _fill(head, sections, budget)
    if counted != totals:
        markdown, counted = _fill(head, sections, budget - len(_omitted_note(totals)))
        omitted = Counts(
            commitments=totals.commitments - counted.commitments,
            facts=totals.facts - counted.facts,
            conflicts=totals.conflicts - counted.conflicts,
        )
        markdown += _omitted_note(omitted)
    else:
        omitted = Counts()
    return Digest(markdown=markdown[:budget], shown=counted, omitted=omitted)


def _sum(counts) -> Counts:
    total = Counts()
    for each in counts:
        total = Counts(
            total.commitments + each.commitments,
            total.facts + each.facts,
            total.conflicts + each.conflicts,
        )
    return total


def _fill(head: str, sections: list[tuple[str, list[_Block]]], budget: int) -> tuple[str, Counts]:
    text = head
    shown: list[Counts] = []
    full = False
    for title, blocks in sections:
        for index, block in enumerate(blocks):
            piece = (f"\n## {title}\n" if index == 0 else "") + block.text
            if full or len(text) + len(piece) > budget:
                full = True
                break
            text += piece
            shown.append(block.counts)
    return text, _sum(shown)


def _heading(scope: str, subject: str | None, at: datetime, *, empty: bool) -> str:
    about = f"scope `{_inline(scope, MAX_NAME)}`"
    if subject is not None:
        about += f", subject `{_inline(subject, MAX_NAME)}`"
    text = f"# Memory: {about}\nAs of {at.isoformat(timespec='seconds')}.\n"
    if empty:
        text += "\nNothing is believed here yet.\n"
    return text


def _by_confidence(lines) -> list[Line]:
    return sorted(lines, key=lambda line: (-line.confidence, line.id))


def _fact_line(line: Line, *, contested: bool = False) -> str:
    marked = "; contested" if contested else ""
    return (
        f"- {_inline(line.subject, MAX_NAME)} {_inline(line.predicate, MAX_NAME)}"
        f' "{_inline(line.object, MAX_VALUE)}"'
        f" ({_inline(line.source_type, MAX_NAME)}, {line.confidence:.2f}{marked})"
        f" fact {line.id}\n"
    )


def _member_line(
    fact: Line, member: Member, contest: Contest, *, beside: str, contesting: bool
) -> str:
    """One member of a contest that is not current, under the line it stands beside."""
    predicate = f"{_inline(fact.predicate, MAX_NAME)} " if fact.predicate != beside else ""
    role = "disputed" if member.disputed else "not served"
    why = ""
    if contesting:
        found = [c for c in contest.conflicts if any(m.id == member.id for m in c.members)]
        why = "; " + _kinds_and_ids(found)
    lead = "contested by " if contesting else ""
    return (
        f'  - {lead}{predicate}"{_inline(fact.object, MAX_VALUE)}"'
        f" ({_inline(fact.source_type, MAX_NAME)}, {fact.confidence:.2f}, {role}{why})"
        f" fact {fact.id}\n"
    )


def _unknown_block(
    contest: Contest, disputes: dict[str, Dispute], by_id: dict[str, Line]
) -> _Block:
    first = disputes[contest.conflicts[0].id]
    text = (
        f"- {_inline(first.subject, MAX_NAME)} {_inline(first.predicate, MAX_NAME)}:"
        f" unknown — disputed ({_kinds_and_ids(contest.conflicts)})\n"
    )
    text += "".join(
        _member_line(by_id[member.id], member, contest, beside=first.predicate, contesting=False)
        for member in contest.candidates
    )
    return _Block(text, Counts(conflicts=len(contest.conflicts)))


def _kinds_and_ids(conflicts) -> str:
    kinds = ", ".join(dict.fromkeys(conflict.kind for conflict in conflicts))
    ids = ", ".join(conflict.id for conflict in conflicts)
    return f"{kinds}; conflict{'s' if len(conflicts) > 1 else ''} {ids}"


def _omitted_note(omitted: Counts) -> str:
    parts = [
        f"{count} {name if count == 1 else plural}"
        for count, name, plural in (
            (omitted.commitments, "commitment", "commitments"),
            (omitted.facts, "fact", "facts"),
            (omitted.conflicts, "conflict", "conflicts"),
        )
        if count
    ]
    return f"\n_Left out for the budget: {', '.join(parts)}. Narrow by subject, or recall._\n"


def _inline(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
