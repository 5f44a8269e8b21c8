"""Benchmark: a crawler pass against a sequential read of the same facts, and its second pass.

Not a test. Two figures (issue #14):

- a crawler pass (``memories.maintenance.crawler.run_crawl``) on a store where it has
  real work (decayed facts, competing values with and without an update cue)
  over a plain sequential read of the facts it walks: one psycopg
  server-side cursor streaming the system bucket's active facts with the
  columns the crawler reads, nothing done with the rows (target: <= 20x);
- the second pass, which finds everything in order, over the first (target:
  <= 1/2). The first is a full pass (``run_crawl(full=True)``); the second
  builds on it and walks only the slots where something may have changed
  since it started (``memories.maintenance.crawler``, docs/background.md).

A first pass changes the store, so it is measured once per store: the
baseline is timed ``rounds`` times (at least three) before it (the best
round: the facts the first pass walks), the second pass ``rounds`` times after it, each round
alternating with a baseline read of what is active then. The ratio of the
second pass is its first run's over the first pass's; the later runs and
every count per action are in the figure's detail.

``measure(store)`` is what ``bench/scale.py`` calls on a store of
``bench/generate.py``. Run alone, the script measures on such a store
(``--generated``) or on a smaller one of its own, every fact in the system
bucket, with more work for a first pass (``build_store``):

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/x .venv/bin/python bench/crawler.py \
        [--facts 20000] [--generated] [--database bench_crawler]
"""

import argparse
import random
import time
import uuid
from datetime import UTC, datetime, timedelta

from _figures import Figure, Store
from _setup import drop_database, raw_connection, start_django

DATABASE = "bench_crawler"
SCOPES = 10
START = datetime(2026, 1, 1, tzinfo=UTC)

# The columns the crawler reads of each active fact, and what "active" is
# (memories.maintenance.crawler): live, not superseded, not marked decayed.
_SEQUENTIAL_READ = (
    "SELECT id, scope_id, subject_id, predicate_id, object_key, epistemic, source_type_id,"
    " confidence, statement, t_valid, last_reinforced_at, decayed_at, decay_reverted_at"
    " FROM memories_fact WHERE bucket = 'system' AND t_invalid IS NULL"
    " AND superseded_by_id IS NULL AND (decayed_at IS NULL OR decayed_at < last_reinforced_at)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=20_000, help="system facts to build")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument(
        "--generated",
        action="store_true",
        help="a store of bench/generate.py with --facts facts in all, not this script's own",
    )
    options = parser.parse_args()
    start_django(options.database)
    try:
        started = time.perf_counter()
        if options.generated:
            from generate import generate

            store = generate(options.facts)
        else:
            store = build_store(options.facts)
        built = time.perf_counter() - started
        print(f"store: {store.facts:,} facts built in {built:.1f} s")
        for figure in measure(store, rounds=options.rounds):
            verdict = "met" if figure.passed() else "NOT MET"
            print(f"{figure.measure}: {figure.value:.3f} (target {figure.target}, {verdict})")
            print(f"  {figure.detail}")
    finally:
        drop_database(options.database)


# --- the measure ------------------------------------------------------------------------


def measure(store: Store, *, rounds: int = 2) -> list[Figure]:
    """The two crawler figures on ``store`` (which the first pass changes)."""
    from django.db import connection

    from memories.maintenance.crawler import run_crawl

    raw = raw_connection()
    try:
        # At least three: the first pass cannot be repeated, so its baseline
        # should be the least disturbed read there is.
        read_before = [_sequential_read(raw) for _ in range(max(rounds, 3))]
        connection.ensure_connection()
        first_seconds, first = _timed_pass(lambda: run_crawl(full=True))
        seconds_after: list[float] = []
        read_after: list[tuple[float, int]] = []
        later = []
        for _ in range(rounds):
            read_after.append(_sequential_read(raw))
            seconds, run = _timed_pass(run_crawl)
            seconds_after.append(seconds)
            later.append(run)
    finally:
        raw.close()
    baseline, walked_rows = min(read_before)
    baseline_after, rows_after = min(read_after)
    second_seconds = seconds_after[0]
    changed_later = [sum(run.counts.values()) for run in later]
    return [
        Figure(
            measure="a crawler pass / a sequential read of the same facts",
            value=first_seconds / baseline,
            target="<= 20",
            detail=(
                f"first pass {first_seconds:.2f} s vs read {baseline * 1e3:.0f} ms of "
                f"{walked_rows:,} active system facts ({store.facts:,} facts in the store); "
                f"{_counts(first)}"
            ),
        ),
        Figure(
            measure="the crawler's second pass / its first",
            value=second_seconds / first_seconds,
            target="<= 0.5",
            detail=(
                f"second pass {second_seconds:.2f} s vs first {first_seconds:.2f} s; "
                f"{_counts(later[0])}; later passes "
                + ", ".join(f"{s:.2f} s" for s in seconds_after[1:])
                + f" (changes {changed_later}); second pass / its read "
                f"{second_seconds / baseline_after:.1f}x ({rows_after:,} rows, "
                f"{baseline_after * 1e3:.0f} ms)"
            ),
        ),
    ]


def _timed_pass(crawl):
    started = time.perf_counter()
    run = crawl()
    return time.perf_counter() - started, run


def _counts(run) -> str:
    walked = run.report.get("slots walked", 0)
    changed = run.report.get("slots changed", 0)
    actions = ", ".join(f"{action} {count:,}" for action, count in run.counts.items())
    return f"{actions}; {changed:,} of {walked:,} slots changed ({run.report.get('walk')} walk)"


def _sequential_read(raw) -> tuple[float, int]:
    """Stream the active system facts once with a server-side cursor; (seconds, rows)."""
    started = time.perf_counter()
    rows = 0
    with raw.transaction(), raw.cursor(name="sequential_read") as cursor:
        cursor.itersize = 5_000
        cursor.execute(_SEQUENTIAL_READ)
        for _ in cursor:
            rows += 1
    return time.perf_counter() - started, rows


# --- a development store -----------------------------------------------------------------


def build_store(system_facts: int, *, seed: int = 0) -> Store:
    """A store whose system bucket gives a first crawler pass real work (COPY).

    Slots of the three one-valued predicates: most hold one live value, some
    with superseded history; about one in twelve holds two live values that
    compete (a third of them with an update cue on the newer, a third
    already linked by an open conflict). Slots of the many-valued predicates
    hold two to eight values. Reinforcement ages are exponential with a mean
    of 90 days, so some facts have faded below the crawler's threshold; a
    few carry decision-record sources or are commitments, which never
    decay. One fact in ten more sits in the user bucket, which the crawler
    never reads.
    """
    from django.contrib.auth.models import User

    from memories.store.models import Predicate, Scope, SourceType

    rng = random.Random(seed)
    now = datetime.now(UTC)
    steward = User.objects.create_user("steward", is_superuser=True)
    agent = User.objects.create_user("agent")
    scopes = [
        Scope.objects.create(member_source_types=None, name=f"bench-{n}").pk for n in range(SCOPES)
    ]
    predicates = {p.name: p.pk for p in Predicate.objects.all()}
    sources = {s.name: s.pk for s in SourceType.objects.all()}
    one = ["core/has-version", "core/owned-by", "core/works-at"]
    many = ["core/uses", "core/depends-on", "core/deployed-via"]
    decaying = ["code", "session-log", "agent-note", "user-assertion"]

    raw = raw_connection()
    facts: list[tuple] = []
    conflicts: list[tuple] = []
    members: list[tuple] = []
    subjects_per_scope = max(1, system_facts // (SCOPES * 6))
    with raw.cursor() as cursor:
        with cursor.copy(
            "COPY memories_entity (scope_id, name, key, type, aliases, alias_keys, created_at)"
            " FROM STDIN"
        ) as copy:
            for scope_id in scopes:
                for n in range(subjects_per_scope):
                    copy.write_row((scope_id, f"svc-{n}", f"svc-{n}", "", [], [], START))
        entity_rows = cursor.execute("SELECT scope_id, id FROM memories_entity").fetchall()
    subjects = [(scope_id, entity_id) for scope_id, entity_id in entity_rows]

    def fact(scope_id, subject_id, predicate, value, *, days_ago, bucket="system", **extra):
        source = extra.pop("source", rng.choice(decaying))
        reinforced = now - timedelta(days=days_ago)
        row = {
            "id": uuid.UUID(int=rng.getrandbits(128), version=4),
            "scope_id": scope_id,
            "subject_id": subject_id,
            "predicate_id": predicates[predicate],
            "object_key": value,
            "epistemic": extra.pop("epistemic", "observation"),
            "source_type_id": sources[source],
            "confidence": round(rng.uniform(0.5, 0.9), 3),
            "statement": extra.pop("statement", f"{predicate} {value}"),
            "author_id": agent.pk,
            "bucket": bucket,
            "t_valid": extra.pop("t_valid", reinforced - timedelta(days=1)),
            "t_invalid": None,
            "recorded_at": reinforced,
            "last_reinforced_at": reinforced,
            "invalidated_at": None,
            "invalidation_kind": "",
            "superseded_by_id": None,
            **extra,
        }
        facts.append(row)
        return row

    def age() -> float:
        return min(700.0, rng.expovariate(1 / 90))

    written = 0
    while written < system_facts:
        scope_id, subject_id = rng.choice(subjects)
        roll = rng.random()
        if roll < 0.55:  # a one-valued slot
            predicate = rng.choice(one)
            shape = rng.random()
            if shape < 0.12:  # superseded history behind the live value
                live = fact(scope_id, subject_id, predicate, "v2", days_ago=age())
                older = fact(
                    scope_id,
                    subject_id,
                    predicate,
                    "v1",
                    days_ago=age() + 30,
                    t_valid=live["t_valid"] - timedelta(days=30),
                )
                older.update(
                    t_invalid=live["t_valid"],
                    invalidated_at=live["recorded_at"],
                    invalidation_kind="superseded",
                    superseded_by_id=live["id"],
                )
                written += 2
            elif shape < 0.20:  # two live values that compete
                kind = rng.random()
                cue = "We now use v2." if kind < 0.35 else ""
                old = fact(scope_id, subject_id, predicate, "v1", days_ago=rng.uniform(1, 60))
                new = fact(
                    scope_id,
                    subject_id,
                    predicate,
                    "v2",
                    days_ago=rng.uniform(1, 60),
                    statement=cue,
                    t_valid=old["t_valid"] + timedelta(days=3),
                )
                if kind >= 0.65:  # already linked, as the write path would have flagged it
                    conflict_id = uuid.UUID(int=rng.getrandbits(128), version=4)
                    conflicts.append((conflict_id, "contradiction", scope_id, subject_id))
                    conflicts[-1] += (predicates[predicate], new["recorded_at"])
                    members.append((conflict_id, old["id"], "existing", False))
                    members.append((conflict_id, new["id"], "incoming", True))
                written += 2
            else:
                extra = {}
                if rng.random() < 0.05:
                    extra["source"] = "decision-record"
                elif rng.random() < 0.05:
                    extra["epistemic"] = "commitment"
                fact(scope_id, subject_id, predicate, "v1", days_ago=age(), **extra)
                written += 1
        else:  # a many-valued slot
            predicate = rng.choice(many)
            for n in range(rng.randint(2, 8)):
                fact(scope_id, subject_id, predicate, f"lib-{n}", days_ago=age())
                written += 1
    for _ in range(system_facts // 10):
        scope_id, subject_id = rng.choice(subjects)
        fact(scope_id, subject_id, rng.choice(many), f"own-{rng.getrandbits(32)}", days_ago=age())
        facts[-1]["bucket"] = "user"

    # One fact per slot and value: later duplicates (a slot drawn twice) go.
    seen: set[tuple] = set()
    unique = []
    for row in facts:
        key = (row["scope_id"], row["subject_id"], row["predicate_id"], row["object_key"])
        key += (row["bucket"], row["t_invalid"] is None)
        if key in seen:
            continue
        seen.add(key)
        unique.append(row)
    kept = {row["id"] for row in unique}
    unique = [r for r in unique if r["superseded_by_id"] is None or r["superseded_by_id"] in kept]
    kept = {row["id"] for row in unique}
    conflicts_kept = {m[0] for m in members if m[1] in kept} - {
        m[0] for m in members if m[1] not in kept
    }
    columns = [c for c in unique[0] if c != "t_invalid"] + ["t_invalid"]
    with raw.cursor() as cursor:
        with cursor.copy(
            f"COPY memories_fact ({', '.join(columns)}, object_kind, object_lit, episode,"
            " evidence, invalidation_reason) FROM STDIN"
        ) as copy:
            for row in unique:
                copy.write_row(
                    [row[c] for c in columns] + ["literal", row["object_key"], "", "[]", ""]
                )
        with cursor.copy(
            "COPY memories_conflict (id, kind, scope_id, subject_id, predicate_id, opened_at,"
            " resolution, reason) FROM STDIN"
        ) as copy:
            for row in conflicts:
                if row[0] in conflicts_kept:
                    copy.write_row((*row, "", ""))
        scope_of = {row[0]: row[2] for row in conflicts}
        with cursor.copy(
            "COPY memories_conflictmember (conflict_id, scope_id, fact_id, role, disputes)"
            " FROM STDIN"
        ) as copy:
            for conflict_id, *member in members:
                if conflict_id in conflicts_kept:
                    copy.write_row((conflict_id, scope_of[conflict_id], *member))
    raw.commit()
    raw.autocommit = True
    raw.execute("VACUUM ANALYZE")
    raw.close()
    system = [row["id"] for row in unique if row["bucket"] == "system"]
    return Store(
        facts=len(unique),
        scope_ids=scopes,
        steward_id=steward.pk,
        agent_id=agent.pk,
        agent_token="",  # the crawler's figures do not call the API
        fact_ids=system[:1_000],
        subjects=subjects[:200],
        conflict_scope_id=scopes[0],
        system_fact_ids=system[:1_000],
    )


if __name__ == "__main__":
    main()
