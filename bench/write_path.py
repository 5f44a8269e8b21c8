"""Benchmark: assert_fact throughput on one connection vs. a raw write transaction.

Not a test. Prints the rates and the ratios (target: ratio >= 0.5).

- claimgraph: ``memories.actions.assert_fact`` creating new facts (each a new
  value on one of 20 busy ``many`` slots), every rule of the write path in
  force: membership check, entity lookup, slot lock, standing-facts read,
  decision, insert.
- raw (equivalent table): the minimal transaction over psycopg on the same
  server in the same run — BEGIN; ``pg_advisory_xact_lock`` on the slot;
  SELECT the slot's rows with the incoming value; INSERT one row; COMMIT —
  into ``raw_fact``, created ``LIKE memories_fact INCLUDING ALL`` with the
  same foreign keys, so both sides pay the same storage and integrity work.
- raw (bare table): the same transaction into a copy without foreign keys,
  printed to show what PostgreSQL's foreign-key checks cost on their own.

The sides alternate round by round and the best round of each counts, so a
burst of load from elsewhere on the machine hurts all alike.

    .venv/bin/python bench/write_path.py [--facts 2000] [--rounds 5]
"""

import argparse
import uuid
from collections.abc import Callable

from _setup import drop_database, rate, raw_connection, start_django, timed

DATABASE = "bench_write_path"

FOREIGN_KEYS = [
    ("scope_id", "memories_scope"),
    ("subject_id", "memories_entity"),
    ("predicate_id", "memories_predicate"),
    ("source_type_id", "memories_sourcetype"),
    ("author_id", "auth_user"),
]

RAW_INSERT = """
INSERT INTO {table} (id, scope_id, subject_id, predicate_id, object_kind, object_lit,
    object_key, epistemic, source_type_id, confidence, episode, statement, evidence,
    author_id, bucket, t_valid, recorded_at, last_reinforced_at, invalidation_kind,
    invalidation_reason)
VALUES (%s, %s, %s, %s, 'literal', %s, %s, 'observation', %s, 0.8, '', '', '[]', %s,
    'system', now(), now(), now(), '', '')
"""

RAW_SELECT = """
SELECT id, predicate_id, object_kind, object_key, epistemic, source_type_id, confidence,
       t_valid, t_invalid, evidence
  FROM {table}
 WHERE scope_id = %s AND subject_id = %s AND bucket = 'system'
   AND predicate_id = %s AND object_kind = 'literal' AND object_key = %s
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=2000, help="writes per round and side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database", default=DATABASE, help="created, and dropped at the end")
    options = parser.parse_args()
    start_django(options.database)
    try:
        run(options.facts, options.rounds)
    finally:
        drop_database(options.database)


def run(count: int, rounds: int) -> None:
    from django.contrib.auth.models import User
    from django.db import connection

    from memories.actions import assert_fact
    from memories.models import Entity, Predicate, Scope, SourceType

    user = User.objects.create_user("bench")
    scope = Scope.objects.create(name="bench")
    scope.members.add(user)
    subjects = 20
    # The entities the claimgraph side writes about; the baselines use the same ids.
    subject_ids = [
        Entity.objects.create(scope=scope, name=f"service-{n}", key=f"service-{n}").pk
        for n in range(subjects)
    ]
    uses = Predicate.objects.get(name="core/uses").pk
    code = SourceType.objects.get(name="code").pk

    raw = raw_connection()
    for table in ("raw_fact", "bare_fact"):
        raw.execute(f"CREATE TABLE {table} (LIKE memories_fact INCLUDING ALL)")
    for column, parent in FOREIGN_KEYS:
        raw.execute(
            f"ALTER TABLE raw_fact ADD FOREIGN KEY ({column}) REFERENCES {parent}"
            " DEFERRABLE INITIALLY DEFERRED"
        )
    raw.commit()
    written = {"claimgraph": 0, "raw_fact": 0, "bare_fact": 0}

    def ours(n: int) -> float:
        start = written["claimgraph"]
        written["claimgraph"] += n

        def body() -> None:
            for i in range(start, start + n):
                assert_fact(
                    actor=user,
                    data={
                        "scope": "bench",
                        "subject": f"service-{i % subjects}",
                        "predicate": "core/uses",
                        "object": f"library-{i}",
                        "source_type": "code",
                    },
                )

        return timed(body)

    def baseline(table: str) -> Callable[[int], float]:
        select, insert = RAW_SELECT.format(table=table), RAW_INSERT.format(table=table)

        def measure(n: int) -> float:
            start = written[table]
            written[table] += n

            def body() -> None:
                for i in range(start, start + n):
                    subject = subject_ids[i % subjects]
                    value = f"library-{i}"
                    with raw.transaction():
                        raw.execute(
                            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                            [f"slot:{scope.pk}:{subject}:core/uses"],
                        )
                        raw.execute(select, [scope.pk, subject, uses, value]).fetchall()
                        raw.execute(
                            insert,
                            [uuid.uuid4(), scope.pk, subject, uses, value, value, code, user.pk],
                        )

            return timed(body)

        return measure

    sides = {
        "assert_fact": ours,
        "raw, equivalent table": baseline("raw_fact"),
        "raw, bare table": baseline("bare_fact"),
    }
    for measure in sides.values():  # warm connections, caches and plans
        measure(50)
    best = dict.fromkeys(sides, float("inf"))
    for _ in range(rounds):
        for name, measure in sides.items():
            best[name] = min(best[name], measure(count))
    raw.close()

    rates = {name: rate(count, seconds) for name, seconds in best.items()}
    ours_rate = rates["assert_fact"]
    print(f"server: {connection.settings_dict['HOST']} database {connection.settings_dict['NAME']}")
    print(f"writes per round and side: {count}, rounds: {rounds} (best round counts)")
    for name, value in rates.items():
        ratio = "" if name == "assert_fact" else f"   assert_fact / this = {ours_rate / value:.2f}"
        print(f"{name:24s} {value:8.0f} writes/s{ratio}")
    print("target: assert_fact / raw (equivalent table) >= 0.5")


if __name__ == "__main__":
    main()
