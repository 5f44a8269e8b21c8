"""Benchmark: assert_fact throughput on one connection vs. a raw write transaction.

Not a test. Prints both rates and their ratio (target: ratio >= 0.5).

- claimgraph: ``memories.actions.assert_fact`` creating new facts (each a new
  value on a busy ``many`` slot, so the standing-facts read returns rows),
  with every rule of the write path in force.
- baseline: the minimal equivalent transaction over psycopg on the same
  server in the same run: BEGIN; pg_advisory_xact_lock on the slot; SELECT
  the slot's live rows; INSERT one row; COMMIT — into a table shaped like the
  fact table.

The two alternate round by round and the best round of each counts, so a
burst of load from elsewhere on the machine hurts both alike.

    DJANGO_DEBUG=1 .venv/bin/python bench/write_path.py [--facts 2000] [--rounds 3]
"""

import argparse
import uuid

from _setup import drop_database, rate, raw_connection, start_django, timed

DATABASE = "bench_write_path"

RAW_TABLE = """
CREATE TABLE raw_fact (
    id uuid PRIMARY KEY,
    scope_id integer NOT NULL,
    subject text NOT NULL,
    predicate text NOT NULL,
    object_key text NOT NULL,
    confidence double precision NOT NULL,
    t_valid timestamptz NOT NULL,
    t_invalid timestamptz,
    recorded_at timestamptz NOT NULL
);
CREATE INDEX raw_fact_slot ON raw_fact (scope_id, subject, predicate) WHERE t_invalid IS NULL;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=2000, help="writes per round and side")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    start_django(DATABASE)
    try:
        run(options.facts, options.rounds)
    finally:
        drop_database(DATABASE)


def run(count: int, rounds: int) -> None:
    from django.contrib.auth.models import User
    from django.db import connection

    from memories.actions import assert_fact
    from memories.models import Scope

    user = User.objects.create_user("bench")
    scope = Scope.objects.create(name="bench")
    scope.members.add(user)
    raw = raw_connection()
    raw.execute(RAW_TABLE)
    raw.commit()

    subjects = 20
    offset = {"claimgraph": 0, "raw": 0}

    def ours() -> float:
        start = offset["claimgraph"]
        offset["claimgraph"] += count

        def body() -> None:
            for i in range(start, start + count):
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

    def baseline() -> float:
        start = offset["raw"]
        offset["raw"] += count

        def body() -> None:
            for i in range(start, start + count):
                subject = f"service-{i % subjects}"
                with raw.transaction():
                    raw.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                        [f"slot:{scope.pk}:{subject}:core/uses"],
                    )
                    raw.execute(
                        "SELECT id, object_key, confidence, t_valid FROM raw_fact "
                        "WHERE scope_id = %s AND subject = %s AND predicate = %s "
                        "AND t_invalid IS NULL",
                        [scope.pk, subject, "core/uses"],
                    ).fetchall()
                    raw.execute(
                        "INSERT INTO raw_fact (id, scope_id, subject, predicate, object_key, "
                        "confidence, t_valid, recorded_at) VALUES (%s, %s, %s, %s, %s, 0.8, "
                        "now(), now())",
                        [uuid.uuid4(), scope.pk, subject, "core/uses", f"library-{i}"],
                    )

        return timed(body)

    # Warm both paths (connections, caches, plans) before measuring.
    count_saved, count = count, 50
    ours()
    baseline()
    count = count_saved
    ours_times, raw_times = [], []
    for _ in range(rounds):
        ours_times.append(ours())
        raw_times.append(baseline())
    ours_seconds, raw_seconds = min(ours_times), min(raw_times)
    ours_rate = rate(count, ours_seconds)
    raw_rate = rate(count, raw_seconds)
    raw.close()
    print(f"server: {connection.settings_dict['HOST']} database {connection.settings_dict['NAME']}")
    print(f"writes per round: {count}, rounds: {rounds} (best round counts)")
    print(f"assert_fact           {ours_rate:9.0f} facts/s")
    print(f"raw lock+select+insert {raw_rate:9.0f} tx/s")
    print(f"ratio                  {ours_rate / raw_rate:9.2f}  (target >= 0.5)")


if __name__ == "__main__":
    main()
