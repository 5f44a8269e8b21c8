"""Benchmark: assert_fact and POST /api/v1/facts on one connection vs. a raw write transaction.

Not a test. Prints the rates and the ratios (issue 14: assert_fact / raw >= 0.7,
POST in process / raw >= 0.4).

- claimgraph: ``memories.write.actions.assert_fact`` creating new facts (each a new
  value on one of the busy ``many`` slots), every rule of the write path in
  force: membership check, entity lookup, slot lock, standing-facts read,
  decision, insert, the truth slot marked for its recompute.
- POST in process: the same assertions as ``POST /api/v1/facts`` through
  Django's test client with DEBUG off (every middleware, the bearer token
  and its write charge, body parsing, the answer rendered), on the same
  connection.
- raw (equivalent table): the minimal transaction over psycopg on the same
  server in the same run — BEGIN; ``pg_advisory_xact_lock`` on the slot;
  SELECT the slot's rows with the incoming value; INSERT one row; COMMIT —
  into ``raw_fact``, created ``LIKE memories_fact INCLUDING ALL`` with the
  same foreign keys and a copy of the fact table's rows, so both sides pay
  the same storage and integrity work on indexes of the same size.
- raw (bare table, standalone runs only): the same transaction into a copy
  without foreign keys, to show what the foreign-key checks cost on their own.

The sides alternate round by round (the order reversed every other round)
and the best round of each counts, so a burst of load from elsewhere on the
machine hurts all alike.

``measure(store)`` is what ``bench/scale.py`` calls on a generated store: it
writes into the store's busiest ``many`` slots (not those of the sample
subjects the read measures use) as the store's agent. Run standalone, the
script builds 20 busy slots of its own:

    .venv/bin/python bench/write_path.py [--facts 2000] [--rounds 5] [--database NAME]
"""

import argparse
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from _figures import Figure, Store
from _setup import drop_database, rate, raw_connection, start_django, timed

DATABASE = "bench_write_path"
# Writes per side and round when measuring a generated store.
STORE_WRITES = 1_000
STORE_SLOTS = 20

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

ASSERT = "assert_fact"
POST = "POST in process"
RAW = "raw, equivalent table"
BARE = "raw, bare table"


@dataclass(frozen=True)
class Slot:
    """A busy slot to write new values into: ids for the raw side, names for ours."""

    scope_id: int
    scope: str
    subject_id: int
    subject: str
    predicate_id: int
    predicate: str
    live: int = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=2000, help="writes per round and side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database", default=DATABASE, help="created, and dropped at the end")
    options = parser.parse_args()
    start_django(options.database)
    try:
        user, token, slots = _own_slots()
        best = compare(user, token, slots, count=options.facts, rounds=options.rounds, bare=True)
        report(best, options.facts, options.rounds)
    finally:
        drop_database(options.database)


def measure(store: Store, *, rounds: int = 3) -> list[Figure]:
    """The two write figures of issue 14 on a generated store, as its agent."""
    from django.contrib.auth.models import User

    agent = User.objects.get(pk=store.agent_id)
    slots = busy_slots(store, STORE_SLOTS)
    best = compare(agent, store.agent_token, slots, count=STORE_WRITES, rounds=rounds)
    rates = {name: rate(STORE_WRITES, seconds) for name, seconds in best.items()}
    live = ", ".join(str(slot.live) for slot in slots[:3])
    where = (
        f"{len(slots)} busy slots ({live}, … live values),"
        f" best of {rounds} rounds of {STORE_WRITES:,} writes"
    )
    return [
        Figure(
            "assert_fact / raw write transaction",
            rates[ASSERT] / rates[RAW],
            ">= 0.7",
            f"{rates[ASSERT]:,.0f} vs {rates[RAW]:,.0f} writes/s; {where}",
        ),
        Figure(
            "POST /api/v1/facts in process / raw write transaction",
            rates[POST] / rates[RAW],
            ">= 0.4",
            f"{rates[POST]:,.0f} vs {rates[RAW]:,.0f} writes/s; {where}",
        ),
    ]


def busy_slots(store: Store, count: int) -> list[Slot]:
    """The store's ``count`` busiest ``many`` slots, away from the reads' sample subjects.

    The writes add a few thousand values; on the sample subjects they would
    change what the measures after this one read.
    """
    from django.db.models import Count

    from memories.store.models import Entity, Fact

    sampled = {subject for _, subject in store.subjects}
    busiest = (
        Fact.objects.filter(
            scope_id__in=store.scope_ids,
            bucket="system",
            t_invalid__isnull=True,
            predicate__cardinality="many",
            predicate__exclusion_group="",
        )
        .exclude(subject_id__in=sampled)
        .values("scope_id", "subject_id", "predicate_id", "predicate__name")
        .annotate(live=Count("id"))
        .order_by("-live", "scope_id", "subject_id", "predicate_id")[:count]
    )
    rows = list(busiest)
    entities = Entity.objects.select_related("scope").in_bulk([row["subject_id"] for row in rows])
    return [
        Slot(
            row["scope_id"],
            entities[row["subject_id"]].scope.name,
            row["subject_id"],
            entities[row["subject_id"]].name,
            row["predicate_id"],
            row["predicate__name"],
            row["live"],
        )
        for row in rows
    ]


def _own_slots():
    """A member, a token and 20 busy slots of ``core/uses``, for a standalone run."""
    from django.contrib.auth.models import User

    from accounts.actions import issue_token
    from memories.store.models import Entity, Predicate, Scope

    user = User.objects.create_user("bench")
    scope = Scope.objects.create(member_source_types=None, name="bench")
    scope.members.add(user)
    _, token = issue_token(actor=user, name="bench")
    uses = Predicate.objects.get(name="core/uses").pk
    slots = []
    for n in range(20):
        entity = Entity.objects.create(scope=scope, name=f"service-{n}", key=f"service-{n}")
        slots.append(Slot(scope.pk, scope.name, entity.pk, entity.name, uses, "core/uses"))
    return user, token, slots


def compare(
    user, token: str, slots: list[Slot], *, count: int, rounds: int, bare: bool = False
) -> dict[str, float]:
    """The best round's seconds for ``count`` writes of each side."""
    from django.db import connection
    from django.test import Client, override_settings

    from memories.store.models import SourceType
    from memories.write.actions import assert_fact

    code = SourceType.objects.get(name="code").pk
    tables = ["raw_fact", "bare_fact"] if bare else ["raw_fact"]
    raw = raw_connection()
    for table in tables:
        raw.execute(f"CREATE TABLE {table} (LIKE memories_fact INCLUDING ALL)")
    # The same rows as the fact table, so the raw side's indexes are as large
    # as ours (on a generated store, an empty table's would all be cached).
    # (The database computes the generated columns, the search vector, on both sides.)
    stored = ", ".join(
        name
        for (name,) in raw.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'memories_fact'::regclass"
            " AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum"
        )
    )
    raw.execute(f"INSERT INTO raw_fact ({stored}) SELECT {stored} FROM memories_fact")
    raw.execute("ANALYZE raw_fact")
    for column, parent in FOREIGN_KEYS:
        raw.execute(
            f"ALTER TABLE raw_fact ADD FOREIGN KEY ({column}) REFERENCES {parent}"
            " DEFERRABLE INITIALLY DEFERRED"
        )
    raw.commit()
    # Every write is a new value: a run-wide counter, and a tag per run so a
    # second run on a kept store does not reinforce the first one's values.
    tag = uuid.uuid4().hex[:8]
    written = [0]

    def values(n: int):
        start = written[0]
        written[0] += n
        for i in range(start, start + n):
            yield slots[i % len(slots)], f"bench-{tag}-{i}"

    def ours(n: int) -> float:
        batch = list(values(n))

        def body() -> None:
            for slot, value in batch:
                assert_fact(actor=user, data=_assertion(slot, value))

        return timed(body)

    client = Client(headers={"Authorization": f"Bearer {token}"})

    def posted(n: int) -> float:
        # Bodies encoded before the clock starts, as a client would send them.
        bodies = [json.dumps(_assertion(slot, value)) for slot, value in values(n)]

        def body() -> None:
            for text in bodies:
                answer = client.post(
                    "/api/v1/facts", text, content_type="application/json", secure=True
                )
                assert answer.status_code == 201, (answer.status_code, answer.content[:300])

        return timed(body)

    def baseline(table: str) -> Callable[[int], float]:
        select, insert = RAW_SELECT.format(table=table), RAW_INSERT.format(table=table)

        def side(n: int) -> float:
            batch = list(values(n))

            def body() -> None:
                for slot, value in batch:
                    with raw.transaction():
                        raw.execute(
                            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                            [f"slot:{slot.scope_id}:{slot.subject_id}:{slot.predicate}"],
                        )
                        raw.execute(
                            select, [slot.scope_id, slot.subject_id, slot.predicate_id, value]
                        ).fetchall()
                        raw.execute(
                            insert,
                            [
                                uuid.uuid4(),
                                slot.scope_id,
                                slot.subject_id,
                                slot.predicate_id,
                                value,
                                value,
                                code,
                                user.pk,
                            ],
                        )

            return timed(body)

        return side

    sides: dict[str, Callable[[int], float]] = {
        ASSERT: ours,
        POST: posted,
        RAW: baseline("raw_fact"),
    }
    if bare:
        sides[BARE] = baseline("bare_fact")
    # The write limit stays on (each POST is charged) but never refuses here.
    with override_settings(CLAIMGRAPH_API_WRITE_RATE=10**9):
        try:
            for side in sides.values():  # warm connections, caches and plans
                side(50)
            best = dict.fromkeys(sides, float("inf"))
            for round_ in range(rounds):
                order = list(sides.items())
                for name, side in order if round_ % 2 == 0 else reversed(order):
                    best[name] = min(best[name], side(count))
        finally:
            for table in tables:
                raw.execute(f"DROP TABLE {table}")
            raw.commit()
            raw.close()
    assert connection.settings_dict["NAME"]  # the sides ran on the store's database
    return best


def _assertion(slot: Slot, value: str) -> dict[str, str]:
    return {
        "scope": slot.scope,
        "subject": slot.subject,
        "predicate": slot.predicate,
        "object": value,
        "source_type": "code",
    }


def report(best: dict[str, float], count: int, rounds: int) -> None:
    from django.db import connection

    rates = {name: rate(count, seconds) for name, seconds in best.items()}
    print(f"server: {connection.settings_dict['HOST']} database {connection.settings_dict['NAME']}")
    print(f"writes per round and side: {count}, rounds: {rounds} (best round counts)")
    for name, value in rates.items():
        print(f"{name:24s} {value:8.0f} writes/s")
    for name in (ASSERT, POST):
        for base in (RAW, BARE):
            if base in rates:
                print(f"{name} / {base}: {rates[name] / rates[base]:.2f}")
    print("targets: assert_fact / raw (equivalent table) >= 0.7; POST in process / it >= 0.4")


if __name__ == "__main__":
    main()
