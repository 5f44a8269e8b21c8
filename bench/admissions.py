"""Benchmark: admission status reads at 100,000 system facts and 1,000,000 records.

Not a test. Loads one scope with 100,000 system facts, then records in two
stages — 100,000 records, then 900,000 more (1,000,000 in all) — with COPY,
and after each stage measures, next to a raw-PostgreSQL baseline timed in the
same run on the same server:

- one fact's status (``admissions.selectors.fact_status(fact,
  explain=False)``: the latest verdict, the open evidenced challenges, A and
  the cap ranks) vs. a primary-key SELECT of one fact (target: <= 10x); the
  same with its explanation, which reads the fact's whole history, is
  printed beside it;
- a whole scope's statuses (``scope_statuses``) vs. ``SELECT count(*)`` over
  the scope's records (target: <= 3x);
- one fact's status at 1,000,000 records vs. at 100,000 (target: <= 1.5x).

The history is made to look like a busy store: most facts admitted, some
re-ruled, half a million challenges from 2,000 accounts (60% evidenced, one
account a prolific challenger with a thousand open ones), and most evidenced
challenges refuted. COPY runs with ``session_replication_role = replica``, which
skips the triggers (the derived state is then rebuilt in one statement with
``admissions_rebuild_state()``) and the foreign-key checks, so the generator
writes only well-formed rows; VACUUM ANALYZE follows, as autovacuum would.

Latencies are medians over many calls on one connection, whole-scope times
the best of three runs; each figure is the best of five rounds that alternate
baseline and ours. The machine is shared and noisy: read the ratios.

    DJANGO_DEBUG=1 .venv/bin/python bench/admissions.py [--facts 100000] [--samples 2000]
"""

import argparse
import random
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

from _setup import drop_database, raw_connection, start_django

DATABASE = "bench_admissions"
ACCOUNTS = 2_000
ROUNDS = 5
SUBJECTS = 1_000
START = datetime(2026, 1, 1, tzinfo=UTC)

RECORD_COLUMNS = (
    "id, scope_id, fact_id, fact_bucket, role, verdict, ground, evidence, "
    "challenge_id, challenge_role, author_id, inserted_at"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=2_000, help="facts timed per measure")
    options = parser.parse_args()
    start_django(DATABASE)
    try:
        run(options.facts, options.samples)
    finally:
        drop_database(DATABASE)


def run(fact_count: int, samples: int) -> None:
    from django.db import connection

    raw = raw_connection()
    raw.autocommit = True
    scope_id, steward_id, account_ids, fact_ids = load_store(raw, fact_count)
    history = History(random.Random(42), scope_id, steward_id, account_ids, fact_ids)

    print(f"server: {connection.settings_dict['HOST']} database {DATABASE}")
    print(f"system facts: {fact_count:,} in one scope, {ACCOUNTS:,} challenger accounts")
    figures = {}
    for stage, target in (("100k", fact_count), ("1M", 10 * fact_count)):
        started = time.perf_counter()
        copy_records(raw, history.grow_to(target))
        loaded = time.perf_counter() - started
        counts = raw.execute(
            "SELECT role, count(*) FROM admissions_record GROUP BY role ORDER BY role"
        ).fetchall()
        open_evidenced = raw.execute(
            "SELECT count(*) FROM admissions_openchallenge WHERE evidenced"
        ).fetchone()
        print(
            f"\n== {stage}: {history.written:,} records "
            f"({', '.join(f'{n:,} {role}s' for role, n in counts)}), "
            f"{open_evidenced[0]:,} open evidenced; loaded and derived in {loaded:.1f} s"
        )
        figures[stage] = measure(raw, scope_id, fact_ids, history, samples)

    one_100k, one_1m = figures["100k"]["fact_status"], figures["1M"]["fact_status"]
    print("\n== growth")
    print(
        f"one fact's status at 1M / at 100k records: {one_1m * 1e3:.3f} / "
        f"{one_100k * 1e3:.3f} ms = {one_1m / one_100k:.2f}x  (target <= 1.5x)"
    )
    raw.close()


# --- the store ----------------------------------------------------------------------------


def load_store(raw, fact_count: int):
    """A scope, a steward, the challengers, and ``fact_count`` system facts, by COPY."""
    from django.contrib.auth.models import User

    from memories.store.models import Predicate, Scope, SourceType

    scope = Scope.objects.create(member_source_types=None, name="bench")
    steward = User.objects.create_user("steward")
    predicate = Predicate.objects.get(name="core/uses")
    source = SourceType.objects.get(name="code")
    with raw.cursor() as cursor:
        with cursor.copy(
            "COPY auth_user (username, password, is_superuser, first_name, "
            "last_name, email, is_staff, is_active, date_joined) FROM STDIN"
        ) as copy:
            for n in range(ACCOUNTS):
                copy.write_row((f"challenger{n}", "!", False, "", "", "", False, True, START))
        account_ids = [
            row[0]
            for row in cursor.execute(
                "SELECT id FROM auth_user WHERE username LIKE 'challenger%%' ORDER BY id"
            )
        ]
        with cursor.copy(
            "COPY memories_entity (scope_id, name, key, type, aliases, alias_keys, created_at) "
            "FROM STDIN"
        ) as copy:
            for n in range(SUBJECTS):
                copy.write_row((scope.pk, f"service-{n}", f"service-{n}", "", [], [], START))
        subjects = [
            row[0]
            for row in cursor.execute(
                "SELECT id FROM memories_entity WHERE scope_id = %s ORDER BY id", [scope.pk]
            )
        ]
        fact_ids = [uuid.uuid4() for _ in range(fact_count)]
        with cursor.copy(
            "COPY memories_fact (id, scope_id, subject_id, predicate_id, object_kind, "
            "object_lit, object_key, epistemic, source_type_id, confidence, episode, "
            "statement, evidence, author_id, bucket, t_valid, recorded_at, "
            "last_reinforced_at, invalidation_kind, invalidation_reason) FROM STDIN"
        ) as copy:
            for n, fact_id in enumerate(fact_ids):
                copy.write_row(
                    (
                        fact_id,
                        scope.pk,
                        subjects[n % SUBJECTS],
                        predicate.pk,
                        "literal",
                        f"library-{n}",
                        f"library-{n}",
                        "observation",
                        source.pk,
                        0.8,
                        "",
                        "",
                        "[]",
                        account_ids[n % ACCOUNTS],
                        "system",
                        START,
                        START,
                        START,
                        "",
                        "",
                    )
                )
    raw.execute("VACUUM ANALYZE")
    return scope.pk, steward.pk, account_ids, fact_ids


class History:
    """A growing, well-formed record history (written in time order)."""

    def __init__(self, rng, scope_id, steward_id, account_ids, fact_ids) -> None:
        self.rng = rng
        self.scope_id = scope_id
        self.steward_id = steward_id
        self.accounts = account_ids
        self.flooder = account_ids[0]
        self.facts = fact_ids
        self.unruled = list(fact_ids)
        rng.shuffle(self.unruled)
        self.open_challenges: list[tuple[uuid.UUID, uuid.UUID]] = []
        self.written = 0
        self.clock = START
        # Facts the prolific account challenges: measured separately (its
        # rank query reads its own open challenges).
        self.flooded: list[uuid.UUID] = []

    def _tick(self) -> datetime:
        self.clock += timedelta(milliseconds=self.rng.randint(1, 40))
        return self.clock

    def grow_to(self, total: int):
        """Rows up to ``total`` records: first verdicts first, then challenges and answers."""
        while self.written < total:
            roll = self.rng.random()
            if self.unruled:
                kind = "first" if roll < 0.9 else "challenge" if roll < 0.96 else "refutation"
            else:
                kind = "verdict" if roll < 0.06 else "challenge" if roll < 0.58 else "refutation"
            if kind == "refutation" and not self.open_challenges:
                kind = "challenge"
            if kind == "first":
                yield self._verdict(self.unruled.pop())
            elif kind == "verdict":
                yield self._verdict(self.rng.choice(self.facts))
            elif kind == "challenge":
                yield self._challenge()
            else:
                yield self._refutation()
            self.written += 1

    def _verdict(self, fact_id):
        verdict = "admitted" if self.rng.random() < 0.9 else "rejected"
        return (
            uuid.uuid4(),
            self.scope_id,
            fact_id,
            "system",
            "admission",
            verdict,
            "reviewed",
            None,
            None,
            None,
            self.steward_id,
            self._tick(),
        )

    def _challenge(self):
        record_id = uuid.uuid4()
        fact_id = self.rng.choice(self.facts)
        evidenced = self.rng.random() < 0.6
        if evidenced and len(self.flooded) < 1_000 and self.rng.random() < 0.01:
            author = self.flooder
            self.flooded.append(fact_id)
        else:
            author = self.rng.choice(self.accounts[1:])
            if evidenced:
                self.open_challenges.append((record_id, fact_id))
        evidence = '[{"ref": "ticket", "quote": ""}]' if evidenced else None
        return (
            record_id,
            self.scope_id,
            fact_id,
            "system",
            "challenge",
            None,
            "looks wrong",
            evidence,
            None,
            None,
            author,
            self._tick(),
        )

    def _refutation(self):
        index = self.rng.randrange(len(self.open_challenges))
        self.open_challenges[index], self.open_challenges[-1] = (
            self.open_challenges[-1],
            self.open_challenges[index],
        )
        challenge_id, fact_id = self.open_challenges.pop()
        return (
            uuid.uuid4(),
            self.scope_id,
            fact_id,
            "system",
            "refutation",
            None,
            "checked",
            None,
            challenge_id,
            "challenge",
            self.steward_id,
            self._tick(),
        )


def copy_records(raw, rows) -> None:
    with raw.transaction(), raw.cursor() as cursor:
        # Skip triggers (and foreign-key checks) for the bulk load; the
        # derived state is rebuilt from the records right after.
        cursor.execute("SET LOCAL session_replication_role = replica")
        with cursor.copy(f"COPY admissions_record ({RECORD_COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
    raw.execute("SELECT admissions_rebuild_state()")
    raw.execute("VACUUM ANALYZE")


# --- measuring ----------------------------------------------------------------------------


def median_seconds(function, arguments) -> float:
    times = []
    for argument in arguments:
        started = time.perf_counter()
        function(argument)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def best_seconds(function, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(raw, scope_id, fact_ids, history, samples: int) -> dict[str, float]:
    from admissions.selectors import fact_status, scope_statuses
    from memories.store.models import Fact, Scope

    rng = random.Random(7)
    sample = [
        Fact(pk=fact_id, scope_id=scope_id, bucket="system")
        for fact_id in rng.sample(fact_ids, samples)
    ]
    flooded = [
        Fact(pk=fact_id, scope_id=scope_id, bucket="system")
        for fact_id in rng.sample(history.flooded, min(samples, len(history.flooded)))
    ]
    scope = Scope.objects.get(pk=scope_id)

    def pk_select(fact):
        raw.execute("SELECT * FROM memories_fact WHERE id = %s", [fact.pk]).fetchone()

    def count_records():
        raw.execute(
            "SELECT count(*) FROM admissions_record WHERE scope_id = %s", [scope_id]
        ).fetchone()

    # Warm caches and plans on both sides first.
    for fact in sample[:200]:
        pk_select(fact)
        fact_status(fact)
        fact_status(fact, explain=False)
    count_records()
    scope_statuses(scope)

    def status_only(fact):
        fact_status(fact, explain=False)

    # Rounds alternate the baseline and ours; the best round of each counts,
    # so a burst of load from elsewhere on the machine hurts both alike.
    rounds = [
        (
            median_seconds(pk_select, sample),
            median_seconds(status_only, sample),
            median_seconds(fact_status, sample),
            median_seconds(status_only, flooded) if flooded else float("nan"),
            best_seconds(count_records, runs=3),
            best_seconds(lambda: scope_statuses(scope), runs=3),
        )
        for _ in range(ROUNDS)
    ]
    baseline_one, ours_one, ours_explained, ours_flooded, baseline_scope, ours_scope = (
        min(column) for column in zip(*rounds, strict=True)
    )
    statuses = scope_statuses(scope)

    print(f"statuses: {', '.join(f'{n:,} {s}' for s, n in sorted(statuses.counts().items()))}")
    print(f"primary-key SELECT of one fact (raw)        {baseline_one * 1e3:8.3f} ms")
    print(
        f"fact_status(explain=False), random fact     {ours_one * 1e3:8.3f} ms  "
        f"= {ours_one / baseline_one:5.2f}x  (target <= 10x)"
    )
    print(
        f"fact_status(explain=False), prolific's     {ours_flooded * 1e3:8.3f} ms  "
        f"= {ours_flooded / baseline_one:5.2f}x  (its rank reads its open challenges)"
    )
    print(
        f"fact_status with its explanation            {ours_explained * 1e3:8.3f} ms  "
        f"= {ours_explained / baseline_one:5.2f}x  (reads the fact's whole history)"
    )
    print(f"count(*) of the scope's records (raw)       {baseline_scope * 1e3:8.1f} ms")
    print(
        f"scope_statuses ({len(statuses):,} facts)            {ours_scope * 1e3:8.1f} ms  "
        f"= {ours_scope / baseline_scope:5.2f}x  (target <= 3x)"
    )
    return {"fact_status": ours_one, "scope_statuses": ours_scope}


if __name__ == "__main__":
    main()
