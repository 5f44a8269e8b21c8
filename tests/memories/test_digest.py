"""The context digest's text is a pure function of plain values and a budget (no database)."""

import random

import pytest

from memories.core.digest import Candidate, Counts, Dispute, Line, render
from tests.conftest import at

NOW = at("2026-12-01T12:00:00")


def line(id: str, confidence: float, *, object: str = "value", **extra) -> Line:
    return Line(
        id=id,
        subject=extra.pop("subject", "svc"),
        predicate=extra.pop("predicate", "core/uses"),
        object=object,
        source_type=extra.pop("source_type", "code"),
        confidence=confidence,
        recorded_at=extra.pop("recorded_at", at("2026-01-01")),
        **extra,
    )


def dispute(conflict_id: str, opened: str, *candidates: Candidate) -> Dispute:
    return Dispute(
        conflict_id=conflict_id,
        kind="outranked",
        opened_at=at(opened),
        subject="svc",
        predicate="core/has-version",
        candidates=candidates,
    )


def digest(budget: int = 8_000, *, commitments=(), truth=(), disputes=(), subject=None):
    return render(
        scope="project",
        subject=subject,
        at=NOW,
        commitments=list(commitments),
        truth=list(truth),
        disputes=list(disputes),
        budget=budget,
    )


def test_an_empty_store_says_nothing_is_believed():
    result = digest()
    assert result.markdown == (
        "# Memory: scope `project`\nAs of 2026-12-01T12:00:00+00:00.\n\n"
        "Nothing is believed here yet.\n"
    )
    assert result.omitted == Counts()


def test_the_sections_and_their_lines():
    standing = line("b", 0.95, object="2.0.0", recorded_at=at("2026-01-01"))
    incoming = line(
        "c", 0.65, object="3.0.0", source_type="agent-note", recorded_at=at("2026-02-01")
    )
    crawled = [
        line("x", 0.6, object="1.0", subject="billing", recorded_at=at("2026-03-02")),
        line("w", 0.6, object="1.1", subject="billing", recorded_at=at("2026-03-01")),
    ]
    result = digest(
        commitments=[line("a", 0.8, object="GraphQL", predicate="core/decided-against")],
        truth=[standing],
        disputes=[
            dispute("k", "2026-02-01", Candidate(incoming, True), Candidate(standing, False)),
            Dispute(
                conflict_id="m",
                kind="contradiction",
                opened_at=at("2026-03-03"),
                subject="billing",
                predicate="core/has-version",
                candidates=tuple(Candidate(fact, True) for fact in crawled),
            ),
        ],
    )
    assert result.markdown.split("\n")[3:] == [
        "## Commitments",
        '- svc core/decided-against "GraphQL" (code, 0.80) fact a',
        "",
        "## Current truth",
        # The standing value is current, listed once; what contests it, under it.
        '- svc core/uses "2.0.0" (code, 0.95; contested) fact b',
        '  - contested by "3.0.0" (agent-note, 0.65, disputed; outranked; conflict k) fact c',
        "",
        # Only a conflict in which nothing is current is unknown.
        "## Unknown — disputed",
        "- billing core/has-version: unknown — disputed (contradiction; conflict m)",
        # Members by recorded time, not by role or confidence.
        '  - core/uses "1.1" (code, 0.60, disputed) fact w',
        '  - core/uses "1.0" (code, 0.60, disputed) fact x',
        "",
    ]
    assert result.shown == Counts(commitments=1, facts=1, conflicts=2)


def test_no_value_is_listed_in_two_sections_or_twice():
    # Issue 31: 2.0.0 stood, an agent-note said 9.9.9, and the digest listed
    # 2.0.0 under "Current truth" and again as "unknown — disputed".
    standing = line("b", 0.95, object="2.0.0", predicate="core/has-version")
    first = line("c", 0.65, object="9.9.9", predicate="core/has-version", source_type="agent-note")
    second = line("d", 0.65, object="8.8.8", predicate="core/has-version", source_type="agent-note")
    result = digest(
        truth=[standing],
        disputes=[
            dispute("k1", "2026-02-01", Candidate(first, True), Candidate(standing, False)),
            dispute("k2", "2026-02-02", Candidate(second, True), Candidate(standing, False)),
            dispute("k3", "2026-02-03", Candidate(second, True), Candidate(first, False)),
        ],
    )
    markdown = result.markdown
    assert "Unknown — disputed" not in markdown
    for fact_id in "bcd":
        assert markdown.count(f"fact {fact_id}\n") == 1, fact_id
    assert '  - contested by "8.8.8" (agent-note, 0.65, disputed; outranked; conflicts k2, k3)' in (
        markdown
    )
    assert result.shown == Counts(facts=1, conflicts=3)


def test_a_standing_member_not_served_is_no_current_value():
    # Awaiting a verdict, the standing fact is not current: nothing in the
    # conflict is, so it is unknown, both members side by side.
    standing = line("b", 0.95, object="2.0.0", recorded_at=at("2026-01-01"))
    incoming = line("c", 0.65, object="3.0.0", recorded_at=at("2026-02-01"))
    markdown = digest(
        disputes=[dispute("k", "2026-02-01", Candidate(incoming, True), Candidate(standing, False))]
    ).markdown
    assert markdown.split("\n")[3:] == [
        "## Unknown — disputed",
        "- svc core/has-version: unknown — disputed (outranked; conflict k)",
        '  - core/uses "2.0.0" (code, 0.95, not served) fact b',
        '  - core/uses "3.0.0" (code, 0.65, disputed) fact c',
        "",
    ]


def test_a_contested_commitment_keeps_its_place_and_carries_its_contest():
    commitment = line("a", 0.8, object="GraphQL", predicate="core/decided-against")
    stance = line("s", 0.7, object="GraphQL", predicate="core/prefers", source_type="session-log")
    markdown = digest(
        commitments=[commitment],
        disputes=[
            dispute("k", "2026-02-01", Candidate(stance, True), Candidate(commitment, False))
        ],
    ).markdown
    assert markdown.split("\n")[3:] == [
        "## Commitments",
        '- svc core/decided-against "GraphQL" (code, 0.80; contested) fact a',
        '  - contested by core/prefers "GraphQL" (session-log, 0.70, disputed; outranked;'
        " conflict k) fact s",
        "",
    ]


@pytest.mark.parametrize(
    ("lines", "order"),
    [
        ([("a", 0.5), ("b", 0.9)], ["b", "a"]),  # highest effective confidence first
        ([("b", 0.7), ("a", 0.7)], ["a", "b"]),  # ties by id
        ([("c", 0.1), ("a", 0.1), ("b", 0.3)], ["b", "a", "c"]),
    ],
)
def test_truth_is_ranked_by_confidence_then_id(lines, order):
    markdown = digest(truth=[line(id, value) for id, value in lines]).markdown
    assert [text.rsplit(" ", 1)[-1] for text in markdown.splitlines() if text.startswith("- ")] == (
        order
    )


def test_the_same_values_in_any_order_give_the_same_text():
    truth = [line(f"f{i}", (i % 7) / 10) for i in range(30)]
    disputes = [
        dispute(f"k{i}", f"2026-0{1 + i % 5}-01", Candidate(line(f"d{i}", 0.5), True))
        for i in range(8)
    ]
    expected = digest(truth=truth, disputes=disputes).markdown
    for seed in range(5):
        random.Random(seed).shuffle(truth)
        random.Random(seed).shuffle(disputes)
        assert digest(truth=truth, disputes=disputes).markdown == expected


@pytest.mark.parametrize("budget", [0, 1, 30, 80, 120, 200, 333, 500, 1_000, 2_500])
def test_the_text_never_exceeds_its_budget(budget):
    result = digest(
        budget,
        commitments=[line(f"c{i}", 0.9) for i in range(10)],
        truth=[line(f"t{i}", 0.5, object="x" * 2_000) for i in range(10)],
        disputes=[dispute("k", "2026-01-01", Candidate(line("d", 0.6), True))],
        subject="s" * 500,
    )
    assert len(result.markdown) <= budget
    assert result.shown.total + result.omitted.total == 21


def test_blocks_are_kept_in_section_order_and_the_rest_is_counted():
    truth = [line(f"t{i}", 0.5) for i in range(10)]
    full = digest(commitments=[line("c", 0.9)], truth=truth).markdown
    result = digest(len(full) - 1, commitments=[line("c", 0.9)], truth=truth)
    assert result.shown == Counts(commitments=1, facts=result.shown.facts, conflicts=0)
    assert 0 < result.shown.facts < 10
    assert result.omitted == Counts(facts=10 - result.shown.facts)
    left_out = 10 - result.shown.facts
    assert result.markdown.endswith(
        f"_Left out for the budget: {left_out} facts. Narrow by subject, or recall._\n"
    )


def test_a_conflict_is_shown_whole_or_not_at_all():
    candidates = [Candidate(line(f"v{i}", 0.5), i == 0) for i in range(4)]
    full = digest(disputes=[dispute("k", "2026-01-01", *candidates)]).markdown
    cut = digest(len(full) - 1, disputes=[dispute("k", "2026-01-01", *candidates)])
    assert "fact v" not in cut.markdown
    assert cut.omitted == Counts(conflicts=1)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("two\nlines", '"two lines"'),
        ("# not a heading\n## nor this", '"# not a heading ## nor this"'),
        ("  spaced \t out  ", '"spaced out"'),
        ("x" * 250, '"' + "x" * 199 + '…"'),
    ],
)
def test_a_value_stays_on_its_own_line_and_is_shortened_when_long(value, shown):
    markdown = digest(truth=[line("a", 0.5, object=value)]).markdown
    assert f"- svc core/uses {shown} (code, 0.50) fact a\n" in markdown
