"""The context digest (SPEC §10): what a scope believes, as compact Markdown for a prompt.

Pure: the caller gathers plain values (``admissions.digest``) and passes the
time they were read at; :func:`render` returns the text and what it left out.

The rules, in order:

1. Sections come in a fixed order, and within the budget the earlier wins:
   commitments (decisions that must never be overruled silently), then the
   rest of the current truth, then open conflicts as "unknown — disputed"
   with their candidates.
2. Within a section: facts by effective confidence, highest first, ties by
   id; conflicts by when they opened, then id; a conflict's candidates by
   recorded time, then id, so no candidate is favoured by its place. The
   same values give the same text, whatever order they arrive in.
3. Blocks (a fact's line; a conflict with all its candidates) are added
   whole, in that order, while they fit; the first that does not fit ends
   the digest, and a last line says how many of each were left out. The
   text never exceeds the budget: a budget too small even for the heading
   is cut to size.
4. Values are written on one line each: whitespace (line breaks included)
   collapses to one space and long values are shortened with "…", so a value
   can neither start a section of its own nor fill the budget alone.
"""

from dataclasses import dataclass
from datetime import datetime

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
    # A candidate of an open conflict (which stays believed; see the end).
    contested: bool = False


@dataclass(frozen=True)
class Candidate:
    fact: Line
    # The disputed member (served as truth only once a human resolves it),
    # or a standing fact the disputed one collided with.
    disputed: bool


@dataclass(frozen=True)
class Dispute:
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
    """The digest of these values in at most ``budget`` characters (rules above)."""
    sections = [
        ("Commitments", [_fact_line(line) for line in _by_confidence(commitments)]),
        ("Current truth", [_fact_line(line) for line in _by_confidence(truth)]),
        (
            "Unknown — disputed",
            [
                _dispute_block(dispute)
                for dispute in sorted(disputes, key=lambda d: (d.opened_at, d.conflict_id))
            ],
        ),
    ]
    totals = Counts(*(len(blocks) for _, blocks in sections))
    head = _heading(scope, subject, at, empty=totals.total == 0)

    # Everything, if it fits; else the blocks that fit with room kept for
    # the note of what was left out (its length with every block omitted
    # bounds its length with fewer).
    markdown, shown = _fill(head, sections, budget)
    if shown != totals:
        markdown, shown = _fill(head, sections, budget - len(_omitted_note(totals)))
        omitted = Counts(
            commitments=totals.commitments - shown.commitments,
            facts=totals.facts - shown.facts,
            conflicts=totals.conflicts - shown.conflicts,
        )
        markdown += _omitted_note(omitted)
    else:
        omitted = Counts()
    return Digest(markdown=markdown[:budget], shown=shown, omitted=omitted)


def _fill(head: str, sections: list[tuple[str, list[str]]], budget: int) -> tuple[str, Counts]:
    text = head
    shown: list[int] = []
    full = False
    for title, blocks in sections:
        count = 0
        for index, block in enumerate(blocks):
            piece = (f"\n## {title}\n" if index == 0 else "") + block
            if full or len(text) + len(piece) > budget:
                full = True
                break
            text += piece
            count += 1
        shown.append(count)
    return text, Counts(*shown)


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


def _fact_line(line: Line) -> str:
    contested = "; contested, see below" if line.contested else ""
    return (
        f"- {_inline(line.subject, MAX_NAME)} {_inline(line.predicate, MAX_NAME)}"
        f' "{_inline(line.object, MAX_VALUE)}"'
        f" ({_inline(line.source_type, MAX_NAME)}, {line.confidence:.2f}{contested})"
        f" fact {line.id}\n"
    )


def _dispute_block(dispute: Dispute) -> str:
    text = (
        f"- {_inline(dispute.subject, MAX_NAME)} {_inline(dispute.predicate, MAX_NAME)}:"
        f" unknown — disputed ({dispute.kind}; conflict {dispute.conflict_id})\n"
    )
    for candidate in sorted(dispute.candidates, key=lambda c: (c.fact.recorded_at, c.fact.id)):
        fact = candidate.fact
        role = "disputed" if candidate.disputed else "standing"
        predicate = (
            f"{_inline(fact.predicate, MAX_NAME)} " if fact.predicate != dispute.predicate else ""
        )
        text += (
            f'  - {predicate}"{_inline(fact.object, MAX_VALUE)}"'
            f" ({_inline(fact.source_type, MAX_NAME)}, {fact.confidence:.2f}, {role})"
            f" fact {fact.id}\n"
        )
    return text


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
