"""Benchmark: what one fact row costs PostgreSQL before any decision is made.

Not a test. COPYs the same rows into four copies of the fact table and reads
the backend's own CPU time (``/proc/<pid>/schedstat``, so Linux with the
server on this machine) for the COPY and, apart, for the COMMIT:

- bare: no index, constraint or foreign key (``bench/ingest.py``'s baseline);
- indexes: every index of ``memories_fact`` (the partial unique ones made
  plain, as in ``bench/ingest.py``);
- foreign keys: only the five every new fact sets (scope, subject,
  predicate, source type, author), deferred as Django makes them, so they
  are checked at COMMIT, one lookup per key per row;
- both: what the import's COPY of new facts pays.

The import cannot be cheaper per line than the "both" row, so its ratio to
a bare COPY is bounded by this script's figures (docs/performance.md).

    .venv/bin/python bench/fact_row_costs.py [--rows 30000] [--rounds 3]
"""

import argparse
import json
import uuid
from datetime import UTC, datetime

from _setup import drop_database, raw_connection, start_django

DATABASE = "bench_fact_row_costs"

ALWAYS_SET = [
    ("scope_id", "memories_scope"),
    ("subject_id", "memories_entity"),
    ("predicate_id", "memories_predicate"),
    ("source_type_id", "memories_sourcetype"),
    ("author_id", "auth_user"),
]
COLUMNS = (
    "id, scope_id, subject_id, predicate_id, object_kind, object_lit, object_key, epistemic,"
    " source_type_id, confidence, episode, statement, evidence, author_id, bucket, t_valid,"
    " recorded_at, last_reinforced_at, invalidation_kind, invalidation_reason"
)
TABLES = {
    "bare": ("INCLUDING DEFAULTS", False),
    "indexes": ("INCLUDING ALL", False),
    "foreign keys": ("INCLUDING DEFAULTS", True),
    "both": ("INCLUDING ALL", True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    start_django(DATABASE)
    try:
        run(options.rows, options.rounds)
    finally:
        drop_database(DATABASE)


def run(count: int, rounds: int) -> None:
    from django.contrib.auth.models import User

    from memories.store.models import Entity, Predicate, Scope, SourceType

    user = User.objects.create_user("bench")
    scope = Scope.objects.create(member_source_types=None, name="bench")
    entities = Entity.objects.bulk_create(
        Entity(scope=scope, name=f"service-{i}", key=f"service-{i}") for i in range(3_000)
    )
    predicates = list(Predicate.objects.values_list("pk", flat=True))
    sources = list(SourceType.objects.values_list("pk", flat=True))
    now = datetime.now(UTC)
    evidence = json.dumps([{"ref": "run-1", "quote": ""}])
    rows = [
        (
            uuid.uuid4(),
            scope.pk,
            entities[i % len(entities)].pk,
            predicates[i % len(predicates)],
            "literal",
            f"value {i}",
            f"value {i}",
            "observation",
            sources[i % len(sources)],
            0.8,
            "",
            "",
            evidence,
            user.pk,
            "system",
            now,
            now,
            now,
            "",
            "",
        )
        for i in range(count)
    ]

    raw = raw_connection()
    for number, (like, keys) in enumerate(TABLES.values()):
        table = f"costs_{number}"
        raw.execute(f"CREATE TABLE {table} (LIKE memories_fact {like})")
        unique = raw.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s"
            " AND indexdef LIKE 'CREATE UNIQUE INDEX%%' AND indexdef LIKE '%% WHERE %%'",
            [table],
        ).fetchall()
        for index, definition in unique:
            # The rows repeat no value, but keep the tables alike: ingest.py's
            # equivalent table has these indexes non-unique.
            raw.execute(f'DROP INDEX "{index}"')
            raw.execute(definition.replace("CREATE UNIQUE INDEX", "CREATE INDEX"))
        if keys:
            for column, parent in ALWAYS_SET:
                raw.execute(
                    f"ALTER TABLE {table} ADD FOREIGN KEY ({column}) REFERENCES {parent}"
                    " DEFERRABLE INITIALLY DEFERRED"
                )
    raw.commit()

    def backend_seconds() -> float:
        with open(f"/proc/{raw.info.backend_pid}/schedstat") as handle:
            return int(handle.read().split()[0]) / 1e9

    best: dict[str, tuple[float, float]] = {}
    for _ in range(rounds):
        for number, name in enumerate(TABLES):
            table = f"costs_{number}"
            raw.execute(f"TRUNCATE {table}")
            raw.commit()
            started = backend_seconds()
            statement = f"COPY {table} ({COLUMNS}) FROM STDIN"
            with raw.cursor() as cursor, cursor.copy(statement) as copy:
                for values in rows:
                    copy.write_row(values)
            copied = backend_seconds()
            raw.commit()
            committed = backend_seconds()
            figures = ((copied - started) / count * 1e6, (committed - copied) / count * 1e6)
            if name not in best or sum(figures) < sum(best[name]):
                best[name] = figures
    raw.close()

    print(f"rows per COPY {count:,}; backend CPU per row, the least of {rounds} rounds")
    bare = sum(best["bare"])
    for name, (copy_us, commit_us) in best.items():
        total = copy_us + commit_us
        print(
            f"{name:<13} COPY {copy_us:6.1f} us   COMMIT {commit_us:6.1f} us"
            f"   total {total:6.1f} us   ({total / bare:4.1f}x bare)"
        )


if __name__ == "__main__":
    main()
