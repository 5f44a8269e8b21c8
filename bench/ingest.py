"""Benchmark: import_facts with every rule of the write path vs. a raw COPY of the same rows.

Not a test. Prints the rates and the ratios (targets: at least 1/16 of a bare COPY,
issue 10; 1/8, issue 14).

- claimgraph: ``memories.write.ingest.import_lines`` on a JSONL file of 100,000
  assertions, read from disk and parsed, every decision of SPEC §2 made
  (duplicates reinforced, versions superseded, exclusion-group collisions,
  outranked and commitment conflicts, entity objects, spelling variants),
  with the audit entries, conflicts and slot locks that come with them.
- raw COPY (equivalent table): the same 100,000 rows, already built in
  memory, COPYed into ``raw_fact``, created ``LIKE memories_fact INCLUDING
  ALL`` with the same foreign keys; its one-live-value index is made
  non-unique (the file holds duplicates that the write path reinforces
  instead of storing), so it still costs the same to maintain.
- raw COPY (bare table): the same rows into a copy with no index, constraint
  or foreign key: the fastest PostgreSQL can take them.

The import runs ``--rounds`` times (3), each time into a scope of its own,
and each round is followed by one COPY into each table (emptied first); the
fastest run of each side counts. The sides alternate round by round, so both
sides' bests come from the same stretch of the run and a drift of the
machine's speed cannot favour one of them. The import decides its slots in
worker processes (``--workers``, by default as ``import_facts``: one per CPU
plus one, at most 4).

    .venv/bin/python bench/ingest.py [--facts 100000] [--batch-size 1000]
"""

import argparse
import json
import random
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from _figures import Figure, Store
from _setup import drop_database, rate, raw_connection, start_django, timed

DATABASE = "bench_ingest"

FOREIGN_KEYS = [
    ("scope_id", "memories_scope"),
    ("subject_id", "memories_entity"),
    ("predicate_id", "memories_predicate"),
    ("source_type_id", "memories_sourcetype"),
    ("author_id", "auth_user"),
    ("object_ref_id", "memories_entity"),
]

COLUMNS = (
    "id, scope_id, subject_id, predicate_id, object_kind, object_ref_id, object_lit,"
    " object_key, epistemic, source_type_id, confidence, episode, statement, evidence,"
    " author_id, bucket, t_valid, t_invalid, recorded_at, last_reinforced_at, invalidated_at,"
    " invalidated_by_id, invalidation_kind, invalidation_reason, superseded_by_id"
)


def assertions(count: int, seed: int = 7) -> list[dict]:
    """A realistic mix: many services, each with versions, dependencies, deployments, opinions."""
    rng = random.Random(seed)
    services = max(10, count // 10)
    lines = []
    for i in range(count):
        service = f"service-{rng.randrange(services)}"
        roll = rng.random()
        if roll < 0.25:
            # Versions move on (supersede); a weaker source sometimes disagrees (outranked).
            source = "agent-note" if rng.random() < 0.1 else "code"
            data = {
                "predicate": "core/has-version",
                "object": f"{i // services}.{rng.randrange(3)}",
            }
        elif roll < 0.55:
            # Dependencies, repeated often (reinforced), in several spellings.
            library = rng.choice(["Redis", "redis ", "PostgreSQL", "Kafka", "gRPC", "  kafka"])
            source = rng.choice(["code", "session-log"])
            data = {"predicate": "core/uses", "object": library}
        elif roll < 0.70:
            source = "code"
            data = {
                "predicate": "core/depends-on",
                "object": f"service-{rng.randrange(services)}",
                "object_kind": "entity",
            }
        elif roll < 0.85:
            source = rng.choice(["user-assertion", "session-log"])
            predicate = rng.choice(["core/prefers", "core/avoids", "core/prefers"])
            data = {"predicate": predicate, "object": rng.choice(["REST", "GraphQL", "gRPC"])}
        elif roll < 0.90:
            source = "decision-record"
            data = {
                "predicate": "core/decided-against",
                "object": rng.choice(["GraphQL", "SOAP"]),
                "epistemic": "commitment",
            }
        else:
            source = rng.choice(["user-assertion", "agent-note"])
            data = {
                "predicate": "core/deployed-via",
                "object": rng.choice(["Fly", "Heroku", "k8s"]),
            }
        lines.append(
            {
                "scope": "bench",
                "subject": service,
                "source_type": source,
                "confidence": round(rng.uniform(0.5, 1.0), 2),
                "evidence": [{"ref": f"run-{i % 97}"}],
                **data,
            }
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3, help="imports (each into its own scope)")
    parser.add_argument(
        "--workers", type=int, default=None, help="default: as import_facts (CPUs + 1, max 4)"
    )
    options = parser.parse_args()
    start_django(DATABASE)
    try:
        from django.contrib.auth.models import User

        user = User.objects.create_user("bench")
        result = compare(user, options.facts, options.batch_size, options.workers, options.rounds)
        result.print()
    finally:
        drop_database(DATABASE)


def measure(store: Store, *, rounds: int = 2, lines: int = 50_000) -> list[Figure]:
    """The import on a generated store, into scopes of its own, against the COPYs."""
    from django.contrib.auth.models import User

    result = compare(User.objects.get(pk=store.agent_id), lines, rounds=rounds)
    return [
        Figure(
            "bulk import / COPY into a bare table",
            result.bare_ratio,
            f">= {1 / 8}",
            f"{lines:,} lines, {result.workers} workers: {result.ours_rate:,.0f} lines/s"
            f" vs {result.bare_rate:,.0f} rows/s bare, {result.raw_rate:,.0f} rows/s"
            f" into an equivalent table (best of {rounds} rounds, the COPYs between them)",
        )
    ]


@dataclass(frozen=True)
class Round:
    """One import and the COPYs of the same rows taken right after it."""

    import_seconds: float
    raw_seconds: float
    bare_seconds: float


@dataclass(frozen=True)
class Comparison:
    count: int
    batch_size: int
    workers: int
    counts: dict[str, int]
    stored: int
    rounds: list[Round]

    def _rate(self, side: str) -> float:
        return rate(self.count, min(getattr(r, side) for r in self.rounds))

    @property
    def ours_rate(self) -> float:
        return self._rate("import_seconds")

    @property
    def raw_rate(self) -> float:
        return self._rate("raw_seconds")

    @property
    def bare_rate(self) -> float:
        return self._rate("bare_seconds")

    @property
    def bare_ratio(self) -> float:
        """The best import against the best bare COPY.

        The best import is usually the first round's, into a store without
        the earlier rounds' facts, as every COPY is into an empty table. The
        sides alternate, so both bests are drawn from the same stretch of
        time: a drift of the machine's speed during the run cannot favour
        one side. (A median of the rounds' own pairs would also measure the
        store growing between the rounds.)
        """
        return self.ours_rate / self.bare_rate

    @property
    def raw_ratio(self) -> float:
        return self.ours_rate / self.raw_rate

    def print(self) -> None:
        counts = self.counts
        print(
            f"facts in the file        {self.count:>10,}"
            f"   (batches of {self.batch_size:,}, {self.workers} workers)"
        )
        print(
            "outcomes                 "
            + ", ".join(
                f"{counts.get(k, 0):,} {k}" for k in ("created", "reinforced", "superseded")
            )
            + f", {counts.get('flagged', 0):,} flagged, {counts.get('rejected', 0):,} rejected"
        )
        print(f"fact rows written        {self.stored:>10,}")
        print("round   import lines/s   COPY equivalent rows/s   COPY bare rows/s   import / bare")
        for number, r in enumerate(self.rounds, start=1):
            print(
                f"{number:>5}   {rate(self.count, r.import_seconds):>14,.0f}"
                f"   {rate(self.count, r.raw_seconds):>22,.0f}"
                f"   {rate(self.count, r.bare_seconds):>16,.0f}"
                f"   {r.bare_seconds / r.import_seconds:>13.3f}"
            )
        print(f"claimgraph import        {self.ours_rate:>10,.0f} lines/s   (best round)")
        print(f"raw COPY, equivalent     {self.raw_rate:>10,.0f} rows/s    (best)")
        print(f"raw COPY, bare table     {self.bare_rate:>10,.0f} rows/s    (best)")
        print(f"ratio vs equivalent COPY {self.raw_ratio:>10.3f}")
        print(
            f"ratio vs bare COPY       {self.bare_ratio:>10.3f}"
            f"   (targets: issue 10 >= {1 / 16:.4f}, issue 14 >= {1 / 8:.3f})"
        )
        # The ceiling: what the fact table's own indexes and foreign keys cost a
        # plain COPY of the same rows, before any decision is made.
        print(f"equivalent / bare COPY   {self.raw_rate / self.bare_rate:>10.3f}")


def compare(
    user, count: int, batch_size: int = 1_000, workers: int | None = None, rounds: int = 3
) -> Comparison:
    """Import ``count`` lines ``rounds`` times as ``user``, each round followed by raw COPYs."""
    from django.db import connection

    from memories.store.models import Fact, Scope
    from memories.write.ingest import default_workers, import_lines, read_lines

    workers = workers or default_workers()
    rows = assertions(count)
    measured: list[Round] = []
    outcomes = []
    baseline_rows: list[tuple] = []
    # Scope names of this call's own, so the comparison can run on a store
    # that already holds other imports.
    prefix = f"import-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as folder, _CopyTables() as tables:
        # Each round imports the same file into a scope of its own (scopes
        # share nothing but the tables, which only grow: a later round can
        # only be slower), then COPYs the first round's rows raw.
        for round_number in range(rounds):
            scope_name = f"{prefix}-{round_number}"
            Scope.objects.create(member_source_types=None, name=scope_name).members.add(user)
            actor = type(user).objects.get(pk=user.pk)  # scopes are read once per user object
            path = Path(folder) / f"{scope_name}.jsonl"
            path.write_text(
                "".join(json.dumps(row | {"scope": scope_name}) + "\n" for row in rows),
                encoding="utf-8",
            )
            report = {}

            def ours(path=path, actor=actor, report=report) -> None:
                report["result"] = import_lines(
                    read_lines(str(path)), actor=actor, batch_size=batch_size, workers=workers
                )

            import_seconds = timed(ours)
            outcomes.append(report["result"].counts)
            if not baseline_rows:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT now()")
                    (now,) = cursor.fetchone()
                first_scope = Scope.objects.get(name=f"{prefix}-0")
                baseline_rows = _baseline_rows(rows, first_scope, user, now)
            measured.append(
                Round(
                    import_seconds,
                    tables.copy_seconds("raw_fact", baseline_rows),
                    tables.copy_seconds("bare_fact", baseline_rows),
                )
            )
    assert all(counts == outcomes[0] for counts in outcomes), "rounds must decide alike"
    return Comparison(
        count=count,
        batch_size=batch_size,
        workers=workers,
        counts=outcomes[0],
        stored=Fact.objects.filter(scope__name=f"{prefix}-0").count(),
        rounds=measured,
    )


def _baseline_rows(rows: list[dict], scope, user, now) -> list[tuple]:
    """The imported rows as COPY values, built before the baseline's clock starts."""
    from memories.core.normalize import value_key
    from memories.store.models import Entity, Predicate, SourceType

    entity_ids = dict(Entity.objects.filter(scope=scope).values_list("key", "pk"))
    predicates = dict(Predicate.objects.values_list("name", "pk"))
    sources = dict(SourceType.objects.values_list("name", "pk"))
    baseline = []
    for row in rows:
        entity = row.get("object_kind") == "entity"
        object_ref = entity_ids[value_key(row["object"])] if entity else None
        baseline.append(
            (
                uuid.uuid4(),
                scope.pk,
                entity_ids[value_key(row["subject"])],
                predicates[row["predicate"]],
                "entity" if entity else "literal",
                object_ref,
                None if entity else row["object"],
                str(object_ref) if entity else value_key(row["object"]),
                row.get("epistemic", "observation"),
                sources[row["source_type"]],
                row["confidence"],
                "",
                "",
                json.dumps(row["evidence"]),
                user.pk,
                "system",
                now,
                None,
                now,
                now,
                None,
                None,
                "",
                "",
                None,
            )
        )
    return baseline


class _CopyTables:
    """The two baseline tables, created on entry and dropped on exit.

    ``raw_fact`` is like the fact table with its indexes, checks and foreign
    keys; ``bare_fact`` has none of them. Ordinary tables: a temporary one
    skips the write-ahead log, which the import pays.
    """

    def __enter__(self) -> "_CopyTables":
        raw = self.raw = raw_connection()
        raw.execute("DROP TABLE IF EXISTS raw_fact, bare_fact")
        raw.execute("CREATE TABLE raw_fact (LIKE memories_fact INCLUDING ALL)")
        raw.execute("CREATE TABLE bare_fact (LIKE memories_fact INCLUDING DEFAULTS)")
        unique = raw.execute(
            "SELECT indexname, indexdef FROM pg_indexes"
            " WHERE tablename = 'raw_fact' AND indexdef LIKE 'CREATE UNIQUE INDEX%%'"
            " AND indexdef LIKE '%% WHERE %%'"
        ).fetchall()
        for name, definition in unique:
            raw.execute(f'DROP INDEX "{name}"')
            raw.execute(definition.replace("CREATE UNIQUE INDEX", "CREATE INDEX"))
        for column, parent in FOREIGN_KEYS:
            raw.execute(
                f"ALTER TABLE raw_fact ADD FOREIGN KEY ({column}) REFERENCES {parent}"
                " DEFERRABLE INITIALLY DEFERRED"
            )
        raw.commit()
        return self

    def __exit__(self, *exc_info) -> None:
        self.raw.rollback()
        self.raw.execute("DROP TABLE raw_fact, bare_fact")
        self.raw.commit()
        self.raw.close()

    def copy_seconds(self, table: str, rows: list[tuple]) -> float:
        """How long one COPY of ``rows`` into ``table`` (emptied first) takes."""
        raw = self.raw
        raw.execute(f"TRUNCATE {table}")
        raw.commit()

        def body() -> None:
            with (
                raw.cursor() as cursor,
                cursor.copy(f"COPY {table} ({COLUMNS}) FROM STDIN") as copy,
            ):
                for values in rows:
                    copy.write_row(values)
            raw.commit()

        return timed(body)


if __name__ == "__main__":
    main()
