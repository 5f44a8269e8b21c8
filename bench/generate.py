"""A deterministic generator of a realistic store, loaded set-wise (issue #14).

Not a test. ``generate(facts, seed=0)`` fills whatever database Django is
connected to (empty and migrated) with a store shaped like a busy
deployment, proportionally to ``facts`` (the figures below are for
1,000,000), and returns a :class:`bench._figures.Store` naming samples the
measures use:

- 50 scopes, ``facts / 5`` entities (200,000; one in seven with an alias), a
  global steward, a steward of two scopes, the agent (member of every scope,
  with an API token), five more agents, five challengers and one flooding
  challenger;
- ``facts`` facts: one-valued slots (``core/has-version``, ``owned-by``,
  ``works-at``) with superseded history (closed intervals pointing at their
  successor), many-valued slots (``uses``, ``depends-on``, ``deployed-via``,
  the ``stance`` group), facts a steward invalidated, about 15% in the user
  bucket (private to their author), every source type and epistemic class,
  ``last_reinforced_at`` spread over five months so decay varies;
- ``facts / 100`` open conflicts (10,000) of every kind, with the members
  and roles the write path (an incoming disputed member against standing
  ones) or the crawler and reverts (every member disputed) give them; one
  scope holds at least 200;
- ``facts / 10`` system facts (100,000) with ``facts`` admission records
  (1,000,000): verdicts, corrections (a later verdict the other way),
  challenges with and without evidence, most refuted, and one flooding
  account over its challenge cap in a few scopes;
- a truth slot for every slot with a live system fact, computed by the pure
  ``memories.core.truth.decide_slot`` and ``settle`` from the rows generated
  (no read back), as ``memories.maintenance.truth.recompute_slot`` stores it;
- audit entries for what the write path writes with these rows: every
  supersession, every human invalidation and every conflict opened (the
  entries of the admission actions, whose before/after hold statuses, are
  not generated);
- one finished ``CrawlerRun`` with the counts and report a full pass over
  this store stores: every slot walked, nothing changed, since the store is
  settled (no real pass is run; the test runs one at a small size).

Rows are built in Python with cheap arithmetic and written with COPY in
batches (one batch's COPY overlapping the building of the next, in a second
thread on the same connection), with ``session_replication_role = replica``
(as ``bench/admissions.py`` does): no trigger and no foreign-key check runs
during the load, so the admissions' derived state is rebuilt from the
records afterwards by ``admissions_rebuild_state()``, and every foreign key
of the loaded tables is then checked set-wise with one anti-join each, all
in the load's transaction (``--checked`` loads with every trigger on
instead, for comparison). Sequences are reset past the ids written, and the
tables vacuumed and analyzed.

    .venv/bin/python bench/generate.py --facts 100000 [--database NAME] [--seed 0] [--drop]
        [--checked]
"""

import argparse
import json
import math
import random
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from _figures import Store
from _setup import drop_database, start_django

# The pure core reads no settings: it can be imported before Django is set
# up. What reads the database is imported where it is used, after
# start_django (the command line) or the harness has set Django up.
from memories.core.confidence import effective_confidence, fact_decays
from memories.core.crawl import ACTIONS, crawler_rule
from memories.core.decisions import Evidence
from memories.core.effects import SUPERSEDE_RULE, write_path_rule
from memories.core.normalize import value_key
from memories.core.truth import Claim, decide_slot, semantics_version, settle, truth_rule

SCOPES = 50
# The store's "now": every timestamp lies before it, so one seed gives one store.
ANCHOR = datetime(2026, 11, 1, tzinfo=UTC)
SPAN_MINUTES = 400 * 24 * 60
START = ANCHOR - timedelta(minutes=SPAN_MINUTES)
DAY = 24 * 60
# Facts are written in batches of about this many, one COPY per table each.
BATCH_FACTS = 50_000
RICH_SUBJECTS = 200
SAMPLE_FACTS = 1_000
FLOOD_SCOPES = 3

ONE_PREDICATES = ("core/has-version", "core/owned-by", "core/works-at")
MANY_PREDICATES = ("core/uses", "core/depends-on", "core/deployed-via")
STANCE_PREDICATES = ("core/prefers", "core/avoids", "core/decided-against")
ENTITY_TYPES = ("service", "library", "team", "person", "tool")
TOOLS = (
    "postgresql", "redis", "kafka", "rabbitmq", "elasticsearch", "nginx", "celery",
    "django", "react", "grafana", "prometheus", "sentry", "terraform", "vault",
    "consul", "minio", "clickhouse", "airflow", "jupyter", "pytest",
)  # fmt: skip
DEPLOYS = ("kubernetes", "helm", "ansible", "docker compose", "nomad", "systemd", "lambda")
STANCES = (
    "trunk-based development", "feature flags", "a monorepo", "pair programming",
    "microservices", "graphql", "server-side rendering", "type hints", "code review",
    "long-lived branches", "manual deploys", "shared databases",
)  # fmt: skip
# Source types by weight: name, weight.
SOURCES = (
    ("decision-record", 4),
    ("code", 14),
    ("user-assertion", 18),
    ("session-log", 30),
    ("failure-report", 6),
    ("agent-note", 20),
    ("inferred", 8),
)
WRITE_PATH_KINDS = {
    "commitment": "a commitment is never overruled",
    "backdated": "valid from before a standing fact",
    "outranked": "a more trusted source stands",
    "revenant": "a low-trust source revives a retired value",
}
# Conflicts without an incoming side: every member disputed. The crawler's,
# a revert's, and truth maintenance's (a contradiction it would not decide).
ALL_DISPUTED_KINDS = ("crawler", "reverted", "contradiction")
SUPERSEDE_REASON = "predicate policy supersede"


@dataclass
class Loaded:
    """What the load wrote, kept for the samples and the report."""

    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def generate(facts: int, *, seed: int = 0, checked: bool = False) -> Store:
    """Fill the connected (empty, migrated) database with a store of ``facts`` facts.

    ``checked``: load with every trigger on, so PostgreSQL checks each foreign
    key and the admissions triggers derive their state row by row as for any
    writer (slower; for tests and for comparison). By default the load skips
    triggers, rebuilds that state from the records in one statement and
    checks the foreign keys set-wise, in the same transaction.
    """
    return generate_timed(facts, seed=seed, checked=checked)[0]


def generate_timed(facts: int, *, seed: int = 0, checked: bool = False) -> tuple[Store, Loaded]:
    """``generate``, with the seconds each phase took and the rows written per table."""
    from django.db import connection, transaction

    loaded = Loaded()
    gen = _Generator(facts, seed, loaded)
    with transaction.atomic():
        if not checked:
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL session_replication_role = replica")
        gen.load(connection)
        if checked:
            gen.timed("foreign keys: deferred checks", lambda: _immediate(connection))
        else:
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL session_replication_role = origin")
            gen.timed("admissions state: rebuild", lambda: _rebuild(connection))
            gen.timed("foreign keys: check", lambda: check_foreign_keys(connection, LOADED_TABLES))
        gen.timed("sequences", lambda: _sequences(connection))
    gen.timed("crawler run", gen._crawler_run)
    gen.timed("vacuum, analyze", lambda: _analyze(connection))
    return gen.store(), loaded


def _immediate(connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _rebuild(connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT admissions_rebuild_state()")


def _sequences(connection) -> None:
    """Past the ids written: the entities' (the other tables' ids come from their sequences)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('memories_entity', 'id'),"
            " (SELECT max(id) FROM memories_entity))"
        )


def _analyze(connection) -> None:
    """Statistics for the planner; outside a transaction, a VACUUM too.

    VACUUM sets the visibility map and the hint bits, as autovacuum would
    soon after such a load: without it the first reads of the measures pay
    for that, and autovacuum runs during them. It cannot run inside a
    transaction (a test's), where ANALYZE alone is run.
    """
    command = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
    with connection.cursor() as cursor:
        for table in (*LOADED_TABLES, *DERIVED_TABLES):
            cursor.execute(f"{command} {table}")


# --- timestamps --------------------------------------------------------------------


class _Clock:
    """Minutes since START as COPY text and as datetimes, each formatted once."""

    def __init__(self) -> None:
        self._text: dict[int, str] = {}
        self._dt: dict[int, datetime] = {}

    def text(self, minute: int | None) -> str:
        if minute is None:
            return "\\N"
        found = self._text.get(minute)
        if found is None:
            found = self._text[minute] = self.dt(minute).strftime("%Y-%m-%d %H:%M:%S+00")
        return found

    def dt(self, minute: int) -> datetime:
        found = self._dt.get(minute)
        if found is None:
            found = self._dt[minute] = START + timedelta(minutes=minute)
        return found


def _copy_text(value: str) -> str:
    return (
        value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    )


def _json(value) -> str:
    return _copy_text(json.dumps(value, separators=(",", ":")))


def _null(value) -> str:
    return "\\N" if value is None else str(value)


# --- the generator -----------------------------------------------------------------


class _Fact:
    __slots__ = (
        "author",
        "bucket",
        "confidence",
        "display",
        "episode",
        "epistemic",
        "evidence",
        "id",
        "invalidated_at",
        "invalidated_by",
        "invalidation_kind",
        "invalidation_reason",
        "key",
        "kind",
        "lit",
        "predicate",
        "recorded",
        "ref",
        "reinforced",
        "scope",
        "source",
        "statement",
        "subject",
        "superseded_by",
        "t_invalid",
        "t_valid",
    )  # fmt: skip


class _Generator:
    def __init__(self, facts: int, seed: int, loaded: Loaded) -> None:
        from django.conf import settings

        from admissions.selectors import share_percent
        from memories.store.models import Predicate, SourceType

        self.n = facts
        self.rng = random.Random(seed)
        self.loaded = loaded
        self.clock = _Clock()
        self.half_life = settings.CLAIMGRAPH_HALF_LIFE_DAYS
        self.floor = settings.CLAIMGRAPH_CONFIDENCE_FLOOR
        self.min_confidence = settings.CLAIMGRAPH_JUDGE_MIN_CONFIDENCE
        self.predicates = {p.name: p for p in Predicate.objects.all()}
        self.sources = {s.name: s for s in SourceType.objects.all()}
        self.source_names = [name for name, _ in SOURCES]
        self.source_weights = [weight for _, weight in SOURCES]
        self.entities_n = max(SCOPES, facts // 5)
        self.conflicts_n = facts // 100
        self.recorded_facts_n = facts // 10
        self.records_n = facts
        # Filled as the load goes.
        self.sample_facts: list[str] = []
        self.subjects: list[tuple[int, int]] = []
        self.system_with_records: list[str] = []
        self.conflict_scope_id = 0
        self.counts: dict[str, int] = loaded.counts
        # (id, scope, recorded, live, disputed) of every system fact.
        self.system_facts: list[tuple] = []
        self.rich_fact_ids: set[str] = set()
        # Live facts the agent may read: system ones and its own private ones.
        self.live_readable: list[str] = []
        self.share_percent = share_percent()

    # The ids of the rows a seed makes: random but reproducible.
    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def timed(self, phase: str, function: Callable[[], object]) -> None:
        started = time.perf_counter()
        function()
        self.loaded.timings[phase] = self.loaded.timings.get(phase, 0.0) + (
            time.perf_counter() - started
        )

    # --- load ---------------------------------------------------------------------

    def load(self, connection) -> None:
        connection.ensure_connection()
        # The psycopg connection itself: the COPY thread uses it too, and
        # Django's wrapper belongs to the thread that opened it.
        self.connection = connection.connection
        self.timed("accounts and scopes", self._accounts)
        self.timed("entities", self._entities)
        self._plan()
        self._facts_and_truth()
        self.timed("admission records", self._records)

    def _copy(self, table: str, columns: str, lines: Iterator[str] | list[str]) -> int:
        written = 0
        with (
            self.connection.cursor() as cursor,
            cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
        ):
            chunk: list[str] = []
            for line in lines:
                chunk.append(line)
                if len(chunk) >= 20_000:
                    copy.write("".join(chunk))
                    written += len(chunk)
                    chunk = []
            if chunk:
                copy.write("".join(chunk))
                written += len(chunk)
        self.counts[table] = self.counts.get(table, 0) + written
        return written

    def _accounts(self) -> None:
        from django.contrib.auth.models import Group, User
        from guardian.shortcuts import assign_perm

        from accounts.actions import digest_of
        from accounts.models import ApiToken
        from memories.store.models import Scope
        from memories.store.roles import STEWARD_PERMISSION, STEWARDS_GROUP

        rng = self.rng
        self.scopes = [
            Scope.objects.create(
                member_source_types=None, name=f"bench-{i:02d}", description=f"Bench scope {i}"
            )
            for i in range(SCOPES)
        ]
        self.scope_ids = [scope.pk for scope in self.scopes]
        steward = User.objects.create(username="bench-steward", is_staff=True)
        steward.groups.add(Group.objects.get(name=STEWARDS_GROUP))
        self.steward_id = steward.pk
        agent = User.objects.create(username="bench-agent")
        self.agent_id = agent.pk
        others = [User.objects.create(username=f"bench-agent-{i}") for i in range(1, 6)]
        challengers = [User.objects.create(username=f"bench-challenger-{i}") for i in range(1, 6)]
        flooder = User.objects.create(username="bench-flooder")
        # A steward of two scopes only (a guardian object permission).
        scope_steward = User.objects.create(username="bench-scope-steward", is_staff=True)
        for scope in self.scopes[:2]:
            assign_perm(STEWARD_PERMISSION, scope_steward, scope)
        self.writer_ids = [agent.pk, *(user.pk for user in others)]
        self.challenger_ids = [user.pk for user in challengers]
        self.flooder_id = flooder.pk
        members = [agent, *others, *challengers, flooder]
        Scope.members.through.objects.bulk_create(
            Scope.members.through(scope_id=scope_id, user_id=user.pk)
            for scope_id in self.scope_ids
            for user in members
        )
        # The token's secret is derived from the seed, so one seed gives one store.
        self.agent_token = "cg_" + "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            for _ in range(43)
        )
        ApiToken.objects.create(
            user=agent,
            name="bench agent",
            prefix=self.agent_token[:10],
            digest=digest_of(self.agent_token),
            created_at=ANCHOR - timedelta(days=300),
        )

    def _entities(self) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(max(id), 0) + 1 FROM memories_entity")
            (first,) = cursor.fetchone()
        self.first_entity = first
        n = self.entities_n
        self.entity_names = [f"{ENTITY_TYPES[i % 5]}-{i}" for i in range(n)]
        # Entity i lives in scope i % SCOPES; these are the entities of each scope.
        self.scope_entities = [list(range(s, n, SCOPES)) for s in range(SCOPES)]
        clock = self.clock

        def lines() -> Iterator[str]:
            for i, name in enumerate(self.entity_names):
                created = clock.text(i * 7 % (SPAN_MINUTES // 4))
                key = value_key(name)
                aliases = alias_keys = "{}"
                if i % 7 == 3:  # one entity in seven is also known by another name
                    alias = f"{ENTITY_TYPES[i % 5]} #{i}"
                    aliases, alias_keys = f'{{"{alias}"}}', f'{{"{value_key(alias)}"}}'
                yield (
                    f"{first + i}\t{name}\t{key}\t{ENTITY_TYPES[i % 5]}\t{aliases}\t{alias_keys}\t"
                    f"{created}\t{self.scope_ids[i % SCOPES]}\n"
                )

        self._copy(
            "memories_entity",
            "id, name, key, type, aliases, alias_keys, created_at, scope_id",
            lines(),
        )

    # --- planning: how many facts each subject gets, and which hold conflicts ------

    def _plan(self) -> None:
        rng = self.rng
        n, e = self.n, self.entities_n
        # Rich subjects take at most half of the facts with records.
        rich = min(RICH_SUBJECTS, e // 20, n // 300)
        # The rich subjects: spread over the scopes, 15 facts each (14 live values).
        step = e // max(rich, 1)
        self.rich = {(k * step + k % SCOPES) % e for k in range(rich)}
        conflicts = self.conflicts_n
        # One scope (the first) holds at least 200 conflicts, or a quarter of them.
        in_first = min(conflicts, max(200, conflicts // 4), 3 * len(self.scope_entities[0]) // 2)
        # Every kind within any 20 consecutive conflicts, in these proportions.
        kinds = (
            "commitment", "backdated", "outranked", "crawler", "revenant",
            "commitment", "backdated", "outranked", "contradiction", "crawler",
            "commitment", "backdated", "outranked", "revenant", "crawler",
            "commitment", "backdated", "outranked", "contradiction", "reverted",
        )  # fmt: skip
        # Conflicts by subject: the first scope's subjects first, then round robin.
        self.subject_conflicts: dict[int, list[str]] = {}
        first_subjects = [i for i in self.scope_entities[0] if i not in self.rich]
        others = [i for i in range(e) if i % SCOPES != 0 and i not in self.rich]
        rng.shuffle(others)
        for j in range(conflicts):
            pool = first_subjects if j < in_first else others
            k = j if j < in_first else j - in_first
            # At most one conflict per one-valued predicate of a subject.
            while len(self.subject_conflicts.get(pool[k % len(pool)], ())) >= len(ONE_PREDICATES):
                k += 1
            self.subject_conflicts.setdefault(pool[k % len(pool)], []).append(kinds[j % len(kinds)])
        self.conflict_scope_id = self.scope_ids[0]
        # Facts per subject: 15 for rich ones, the conflicts' own, then the rest
        # spread so the total is exactly n.
        budget = [0] * e
        for i in self.rich:
            budget[i] = 15
        for i, slots in self.subject_conflicts.items():
            budget[i] = sum(3 if kind == "revenant" else 2 for kind in slots)
        left = n - sum(budget)
        plain = [i for i in range(e) if budget[i] == 0]
        if left < len(plain):
            raise ValueError(f"{n} facts are too few for this shape")
        base, extra = divmod(left, len(plain))
        for i in plain:
            budget[i] = base
        # Vary the counts (1 to 2*base-1) while keeping the sum: move units between pairs.
        for a in range(0, len(plain) - 1, 2):
            swing = rng.randint(0, max(0, base - 1))
            budget[plain[a]] -= swing
            budget[plain[a + 1]] += swing
        for i in plain[:extra]:
            budget[i] += 1
        self.budget = budget

    # --- facts, conflicts, truth slots and audit entries, in batches ---------------

    def _facts_and_truth(self) -> None:
        """Batch after batch: build the rows and decide the slots, then COPY them.

        One batch's COPY runs in a second thread while the next batch is
        built, on the same connection and transaction (the builder does not
        touch the database), so PostgreSQL's work on a batch overlaps
        Python's on the next. The rows are made in the main thread only, in
        order, so the seed still fixes them.
        """
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=1) as writer:
            pending = None
            for subjects in self._batches():
                rows = self._build(subjects)
                if pending is not None:
                    pending.result()
                pending = writer.submit(self._write, rows)
            if pending is not None:
                pending.result()
        self.loaded.timings["facts and truth slots (overlapped)"] = time.perf_counter() - started

    def _batches(self) -> Iterator[list[int]]:
        batch: list[int] = []
        size = 0
        for subject in range(self.entities_n):
            batch.append(subject)
            size += self.budget[subject]
            if size >= BATCH_FACTS:
                yield batch
                batch, size = [], 0
        if batch:
            yield batch

    def _build(self, subjects: list[int]) -> "_Rows":
        rows = _Rows()
        started = time.perf_counter()
        for subject in subjects:
            self._subject(subject, rows)
        self._time("  facts: build rows", started)
        started = time.perf_counter()
        self._truth(rows)
        self._time("  truth slots: decide", started)
        return rows

    def _write(self, rows: "_Rows") -> None:
        started = time.perf_counter()
        self._copy_facts(rows)
        self._time("  facts: copy", started)
        started = time.perf_counter()
        self._copy_rest(rows)
        self._time("  conflicts, truth slots, audit: copy", started)

    def _time(self, phase: str, started: float) -> None:
        timings = self.loaded.timings
        timings[phase] = timings.get(phase, 0.0) + time.perf_counter() - started

    def _fact(
        self,
        rows: "_Rows",
        subject: int,
        predicate: str,
        value: int | str,
        *,
        t_valid: int,
        author: int | None = None,
        bucket: str = "system",
        source: str | None = None,
        epistemic: str | None = None,
    ) -> _Fact:
        rng = self.rng
        f = _Fact()
        f.id = self.uuid()
        f.scope = self.scope_ids[subject % SCOPES]
        f.subject = self.first_entity + subject
        spec = self.predicates[predicate]
        f.predicate = spec.pk
        if isinstance(value, int):
            f.kind, f.ref, f.lit = "entity", self.first_entity + value, None
            f.key = str(f.ref)
            f.display = self.entity_names[value]
        else:
            f.kind, f.ref, f.lit, f.key, f.display = "literal", None, value, value, value
        f.epistemic = epistemic or spec.default_epistemic
        f.source = source or rng.choices(self.source_names, self.source_weights)[0]
        ceiling = self.sources[f.source].confidence_ceiling
        f.confidence = round(ceiling * rng.uniform(0.8, 1.0), 2)
        f.episode = f"episode-{rng.randrange(1, 1 + self.n // 20)}" if rng.random() < 0.7 else ""
        f.statement = f"{self.entity_names[subject]} {predicate.removeprefix('core/')} {f.display}"
        f.evidence = (
            [{"ref": f"{f.source}:{rng.randrange(1, 10**6)}", "quote": f.statement}]
            if rng.random() < 0.5
            else []
        )
        f.author = author if author is not None else rng.choice(self.writer_ids)
        f.bucket = bucket
        f.t_valid = t_valid
        f.recorded = min(SPAN_MINUTES, t_valid + rng.randrange(0, 3 * DAY))
        # Reinforced at some point in the last five months (or when recorded, if later).
        f.reinforced = max(f.recorded, SPAN_MINUTES - rng.randrange(0, 150 * DAY))
        f.t_invalid = f.invalidated_at = f.invalidated_by = f.superseded_by = None
        f.invalidation_kind = f.invalidation_reason = ""
        rows.facts.append(f)
        return f

    def _supersede(self, rows: "_Rows", old: _Fact, new: _Fact) -> None:
        # The write that supersedes comes after the fact it supersedes.
        if new.recorded <= old.recorded:
            new.recorded = old.recorded + 1
            new.reinforced = max(new.reinforced, new.recorded)
        old.t_invalid = new.t_valid
        old.invalidated_at = new.recorded
        old.invalidated_by = new.author
        old.invalidation_kind = "superseded"
        old.invalidation_reason = SUPERSEDE_REASON
        old.superseded_by = new.id
        # A write later than the old fact's last reinforcement.
        old.reinforced = min(old.reinforced, old.invalidated_at)

        rows.audit.append(
            (
                new.recorded,
                new.scope,
                "superseded",
                "fact",
                new.id,
                {"fact": old.id, "t_invalid": None},
                {
                    "fact": old.id,
                    "t_invalid": self.clock.dt(new.t_valid).isoformat(),
                    "superseded_by": new.id,
                },
                SUPERSEDE_REASON,
                SUPERSEDE_RULE,
                new.author,
            )
        )

    def _invalidate(self, rows: "_Rows", f: _Fact, *, before: int | None = None) -> None:
        """A steward ends ``f`` a while after it began (and before ``before``)."""
        rng = self.rng
        end = min(
            SPAN_MINUTES - 1 if before is None else before,
            f.t_valid + rng.randrange(DAY, 60 * DAY),
        )
        if end <= max(f.t_valid, f.recorded):
            if before is not None:
                raise AssertionError("no room to invalidate before the given time")
            return
        before = {
            "t_invalid": None,
            "invalidation_kind": "",
            "superseded_by": None,
            "confidence": f.confidence,
            "source_type": f.source,
        }
        f.t_invalid = end
        f.invalidated_at = min(SPAN_MINUTES, end + rng.randrange(0, DAY))
        f.invalidated_by = self.steward_id
        f.invalidation_kind = "invalidated"
        f.invalidation_reason = "a steward found it no longer held"
        f.reinforced = min(f.reinforced, f.invalidated_at)
        after = {
            **before,
            "t_invalid": self.clock.dt(end).isoformat(),
            "invalidation_kind": "invalidated",
            "superseded_by": None,
        }
        rows.audit.append(
            (
                f.invalidated_at,
                f.scope,
                "invalidated",
                "fact",
                f.id,
                before,
                after,
                f.invalidation_reason,
                "",
                self.steward_id,
            )
        )

    def _value(self, predicate: str, subject: int, taken: set) -> int | str:
        """A value of ``predicate`` for ``subject`` not yet among ``taken``."""
        rng = self.rng
        for _ in range(50):
            if predicate == "core/has-version":
                value: int | str = (
                    f"{rng.randrange(1, 9)}.{rng.randrange(0, 30)}.{rng.randrange(0, 20)}"
                )
            elif predicate in ("core/owned-by", "core/works-at", "core/depends-on"):
                same_scope = self.scope_entities[subject % SCOPES]
                value = same_scope[rng.randrange(len(same_scope))]
                if value == subject:
                    continue
            elif predicate == "core/uses":
                value = rng.choice(TOOLS)
            elif predicate == "core/deployed-via":
                value = rng.choice(DEPLOYS)
            else:
                value = rng.choice(STANCES)
            if value not in taken:
                taken.add(value)
                return value
        raise RuntimeError("no fresh value")  # pragma: no cover - pools are large enough

    def _subject(self, subject: int, rows: "_Rows") -> None:
        rng = self.rng
        if subject in self.rich:
            self._rich(subject, rows)
            return
        budget = self.budget[subject]
        free_one = list(ONE_PREDICATES)
        free_many = list(MANY_PREDICATES)
        for kind in self.subject_conflicts.get(subject, ()):
            predicate = free_many.pop(0) if kind == "revenant" else free_one.pop(0)
            self._conflict(rows, subject, predicate, kind)
        if subject in self.subject_conflicts:
            return
        free_many = list(MANY_PREDICATES)
        rng.shuffle(free_one)
        rng.shuffle(free_many)
        stance = rng.choice(STANCE_PREDICATES)
        while budget > 0:
            private = rng.random() < 0.15
            author = rng.choice(self.writer_ids) if private else None
            bucket = "user" if private else "system"
            if free_one and (rng.random() < 0.5 or not free_many):
                predicate = free_one.pop()
                length = min(budget, rng.choices((1, 2, 3, 4), (60, 25, 10, 5))[0])
                taken: set = set()
                t = rng.randrange(0, SPAN_MINUTES // 2)
                previous = None
                for _ in range(length):
                    f = self._fact(
                        rows,
                        subject,
                        predicate,
                        self._value(predicate, subject, taken),
                        t_valid=t,
                        author=author,
                        bucket=bucket,
                    )
                    if previous is not None:
                        self._supersede(rows, previous, f)
                    previous = f
                    t = min(SPAN_MINUTES - 1, t + rng.randrange(DAY, 60 * DAY))
                budget -= length
            elif free_many or stance:
                if free_many:
                    predicate = free_many.pop()
                else:
                    predicate, stance = stance, None
                values = min(budget, rng.choices((1, 2, 3, 4), (35, 35, 20, 10))[0])
                taken = set()
                for k in range(values):
                    f = self._fact(
                        rows,
                        subject,
                        predicate,
                        self._value(predicate, subject, taken),
                        t_valid=rng.randrange(0, SPAN_MINUTES - DAY),
                        author=author,
                        bucket=bucket,
                    )
                    if k and rng.random() < 0.15:
                        self._invalidate(rows, f)
                budget -= values
            else:
                # Every slot of the subject is used: more private notes on its uses.
                predicate = "core/uses"
                for k in range(budget):
                    author = self.writer_ids[k % len(self.writer_ids)]
                    self._fact(
                        rows,
                        subject,
                        predicate,
                        f"{TOOLS[(subject + k) % len(TOOLS)]} (note {k})",
                        t_valid=rng.randrange(0, SPAN_MINUTES - DAY),
                        author=author,
                        bucket="user",
                    )
                budget = 0

    def _rich(self, subject: int, rows: "_Rows") -> None:
        """15 system facts, 14 live values: what the truth reads measure against."""
        rng = self.rng
        plan = (
            ("core/has-version", 1),
            ("core/owned-by", 1),
            ("core/uses", 5),
            ("core/depends-on", 4),
            ("core/deployed-via", 2),
            ("core/prefers", 1),
        )
        for predicate, values in plan:
            taken: set = set()
            for _ in range(values):
                f = self._fact(
                    rows,
                    subject,
                    predicate,
                    self._value(predicate, subject, taken),
                    t_valid=rng.randrange(0, SPAN_MINUTES // 2),
                    source="code",
                )
                rows.rich_facts.append(f)
        # One superseded version before the live one.
        live = next(
            f
            for f in rows.rich_facts[-14:]
            if f.predicate == self.predicates["core/has-version"].pk
        )
        old = self._fact(
            rows,
            subject,
            "core/has-version",
            "0.0.1",
            t_valid=live.t_valid - 30 * DAY,
            source="code",
        )
        self._supersede(rows, old, live)
        rows.rich_facts.append(old)
        self.subjects.append((self.scope_ids[subject % SCOPES], self.first_entity + subject))

    def _conflict(self, rows: "_Rows", subject: int, predicate: str, kind: str) -> None:
        rng = self.rng
        taken: set = set()
        t = rng.randrange(DAY, SPAN_MINUTES // 2)
        later = min(SPAN_MINUTES - DAY, t + rng.randrange(DAY, 90 * DAY))
        members: list[tuple[_Fact, str, bool]]
        if kind in ALL_DISPUTED_KINDS:
            a = self._fact(
                rows, subject, predicate, self._value(predicate, subject, taken), t_valid=t
            )
            b = self._fact(
                rows, subject, predicate, self._value(predicate, subject, taken), t_valid=later
            )
            members = [(a, "existing", True), (b, "existing", True)]
            opened = max(a.recorded, b.recorded) + rng.randrange(1, DAY)
        else:
            existing_source = "code" if kind == "outranked" else None
            incoming_source = "agent-note" if kind in ("outranked", "revenant") else None
            old_value = None
            if kind == "revenant":
                # On a many-valued predicate (SPEC §2): a value a steward retired
                # comes back from a low-trust source beside a live rival.
                old_value = self._value(predicate, subject, taken)
                buried = self._fact(rows, subject, predicate, old_value, t_valid=t, source="code")
                buried.recorded = t
                self._invalidate(rows, buried, before=later - 1)
                t = min(later - 1, t + rng.randrange(DAY, 30 * DAY))
            existing = self._fact(
                rows,
                subject,
                predicate,
                self._value(predicate, subject, taken),
                t_valid=t,
                source=existing_source or "code",
                epistemic="commitment" if kind == "commitment" else None,
            )
            incoming_t = rng.randrange(0, t) if kind == "backdated" else later
            incoming = self._fact(
                rows,
                subject,
                predicate,
                old_value if old_value is not None else self._value(predicate, subject, taken),
                t_valid=incoming_t,
                source=incoming_source or "session-log",
            )
            incoming.recorded = max(incoming.recorded, existing.recorded + 1)
            if kind == "revenant":
                incoming.recorded = max(incoming.recorded, buried.invalidated_at + 1)
            incoming.reinforced = max(incoming.reinforced, incoming.recorded)
            members = [(incoming, "incoming", True), (existing, "existing", False)]
            opened = incoming.recorded
        conflict_id = self.uuid()
        opened = min(opened, SPAN_MINUTES)
        rows.conflicts.append((conflict_id, kind, opened, subject, predicate))
        rows.opened[conflict_id] = opened
        for fact, role, disputes in members:
            rows.members.append((conflict_id, fact.id, role, disputes))
            rows.open_conflicts.setdefault(fact.id, set()).add(conflict_id)
            if disputes:
                rows.disputed.add(fact.id)
        scope = self.scope_ids[subject % SCOPES]

        def opened_entry(details: dict, reason: str, rule: str, actor=None) -> tuple:
            # An audit row in the COPY's column order: the conflict's opening.
            target = ("opened-conflict", "conflict", conflict_id, None)
            return (opened, scope, *target, details, reason, rule, actor)

        everyone = {"kind": kind, "members": [m[0].id for m in members]}
        if kind == "crawler":
            rows.audit.append(
                opened_entry(
                    everyone,
                    "competing values without an update cue",
                    crawler_rule("opened-conflict"),
                )
            )
        elif kind == "contradiction":
            # Opened by truth maintenance: a single-winner verdict is never acted on.
            rows.audit.append(
                opened_entry(
                    everyone,
                    "the adjudicator's verdict: single_winner; not acted on: a single winner is "
                    "a contradiction, for a human to resolve",
                    truth_rule("adjudicator", "single_winner"),
                )
            )
        elif kind != "reverted":
            incoming, existing = members[0][0], members[1][0]
            rows.audit.append(
                opened_entry(
                    {"kind": kind, "incoming": incoming.id, "candidates": [existing.id]},
                    WRITE_PATH_KINDS[kind],
                    write_path_rule(kind),
                    incoming.author,
                )
            )
        # The reverted kind's audit entry is the revert of an automatic
        # change, which names an entry of its own: not generated.

    # --- truth slots ----------------------------------------------------------------

    def _truth(self, rows: "_Rows") -> None:
        from memories.maintenance.truth import _value_json, predicate_spec

        specs = {p.pk: predicate_spec(p) for p in self.predicates.values()}
        versions = {pk: semantics_version(spec) for pk, spec in specs.items()}
        sources = self.sources
        now = ANCHOR
        slots: dict[tuple[int, int, int], list[_Fact]] = {}
        for f in rows.facts:
            if f.bucket == "system" and f.t_invalid is None:
                slots.setdefault((f.scope, f.subject, f.predicate), []).append(f)
        empty: frozenset = frozenset()
        clock = self.clock
        for (scope, subject, predicate), facts in slots.items():
            facts.sort(key=lambda f: (f.recorded, f.id))
            claims = []
            for f in facts:
                source = sources[f.source]
                claims.append(
                    Claim(
                        fact_id=f.id,
                        object_kind=f.kind,
                        object_key=f.key,
                        object=f.display,
                        epistemic=f.epistemic,
                        source_type=f.source,
                        trust_rank=source.trust_rank,
                        confidence=f.confidence,
                        effective_confidence=effective_confidence(
                            f.confidence,
                            last_reinforced_at=clock.dt(f.reinforced),
                            at=now,
                            decays=fact_decays(f.epistemic, source.decays),
                            half_life_days=self.half_life,
                            floor=self.floor,
                        ),
                        t_valid=clock.dt(f.t_valid),
                        recorded_at=clock.dt(f.recorded),
                        evidence=tuple(Evidence(e["ref"], e["quote"]) for e in f.evidence),
                        statement=f.statement,
                        disputed=f.id in rows.disputed,
                        open_conflicts=frozenset(rows.open_conflicts.get(f.id, empty)),
                        ruled_conflicts=empty,
                    )
                )
            spec = specs[predicate]
            outcome = decide_slot(claims, spec, now=now)
            outcome = settle(
                outcome, claims, min_confidence=self.min_confidence, awaiting_verdict=False
            )
            if outcome.supersessions or outcome.conflict:
                raise AssertionError(f"generated slot {scope}/{subject}/{predicate} is not settled")
            conflict = None
            held = [rows.open_conflicts[f.id] for f in facts if f.id in rows.open_conflicts]
            if held:
                # The most recently opened open conflict among the slot's facts.
                conflict = max((c for ids in held for c in ids), key=lambda c: (rows.opened[c], c))
            rows.slots.append(
                (
                    scope,
                    subject,
                    predicate,
                    [_value_json(value) for value in outcome.values],
                    conflict,
                    outcome.rationale,
                    outcome.decided_by,
                    versions[predicate],
                    outcome.claim_set_hash,
                )
            )

    # --- COPY ---------------------------------------------------------------------

    def _copy_facts(self, rows: "_Rows") -> None:
        text = self.clock.text
        sources = {name: s.pk for name, s in self.sources.items()}

        def lines() -> Iterator[str]:
            for f in rows.facts:
                yield (
                    f"{f.id}\t{f.scope}\t{f.subject}\t{f.predicate}\t{f.kind}\t{_null(f.ref)}\t"
                    f"{'\\N' if f.lit is None else f.lit}\t{f.key}\t{f.epistemic}\t"
                    f"{sources[f.source]}\t{f.confidence}\t{f.episode}\t{f.statement}\t"
                    f"{_json(f.evidence) if f.evidence else '[]'}\t{f.author}\t{f.bucket}\t"
                    f"{text(f.t_valid)}\t{text(f.t_invalid)}\t{text(f.recorded)}\t"
                    f"{text(f.reinforced)}\t{text(f.invalidated_at)}\t{_null(f.invalidated_by)}\t"
                    f"{f.invalidation_kind}\t{f.invalidation_reason}\t{_null(f.superseded_by)}\t"
                    "\\N\t\\N\n"
                )

        self._copy(
            "memories_fact",
            "id, scope_id, subject_id, predicate_id, object_kind, object_ref_id, object_lit, "
            "object_key, epistemic, source_type_id, confidence, episode, statement, evidence, "
            "author_id, bucket, t_valid, t_invalid, recorded_at, last_reinforced_at, "
            "invalidated_at, invalidated_by_id, invalidation_kind, invalidation_reason, "
            "superseded_by_id, decayed_at, decay_reverted_at",
            lines(),
        )
        self._collect(rows)

    def _collect(self, rows: "_Rows") -> None:
        """Remember what the samples and the admission records are drawn from."""
        agent = self.agent_id
        for f in rows.facts:
            if f.t_invalid is None and (f.bucket == "system" or f.author == agent):
                self.live_readable.append(f.id)
            if f.bucket == "system":
                self.system_facts.append(
                    (f.id, f.scope, f.recorded, f.t_invalid is None, f.id in rows.disputed)
                )
        self.rich_fact_ids.update(f.id for f in rows.rich_facts)

    def _copy_rest(self, rows: "_Rows") -> None:
        text = self.clock.text
        predicates = {name: p.pk for name, p in self.predicates.items()}
        # A conflict is in its subject's scope, and so are its members.
        scope_of = {
            cid: self.scope_ids[subject % SCOPES] for cid, _kind, _at, subject, _p in rows.conflicts
        }
        self._copy(
            "memories_conflict",
            "id, kind, opened_at, resolution, reason, subject_id, predicate_id, scope_id",
            (
                f"{cid}\t{kind}\t{text(opened)}\t\t\t{self.first_entity + subject}\t"
                f"{predicates[predicate]}\t{scope_of[cid]}\n"
                for cid, kind, opened, subject, predicate in rows.conflicts
            ),
        )
        self._copy(
            "memories_conflictmember",
            "conflict_id, scope_id, fact_id, role, disputes",
            (
                f"{cid}\t{scope_of[cid]}\t{fid}\t{role}\t{'t' if disputes else 'f'}\n"
                for cid, fid, role, disputes in rows.members
            ),
        )
        computed = text(SPAN_MINUTES)
        self._copy(
            "memories_truthslot",
            "scope_id, subject_id, predicate_id, values, conflict_id, rationale, decided_by, "
            "computed_at, stale, stale_reason, vocabulary_version, claim_set_hash",
            (
                f"{scope}\t{subject}\t{predicate}\t{_json(values)}\t{_null(conflict)}\t"
                f"{_copy_text(rationale)}\t{decided_by}\t{computed}\tf\t\t{version}\t{digest}\n"
                for (
                    scope,
                    subject,
                    predicate,
                    values,
                    conflict,
                    rationale,
                    decided_by,
                    version,
                    digest,
                ) in rows.slots
            ),
        )
        self._copy(
            "memories_auditentry",
            "at, scope_id, action, target_type, target_id, before, after, reason, rule, actor_id",
            (
                f"{text(at)}\t{scope}\t{action}\t{target_type}\t{target_id}\t"
                f"{'\\N' if before is None else _json(before)}\t"
                f"{'\\N' if after is None else _json(after)}\t{_copy_text(reason)}\t{rule}\t"
                f"{_null(actor)}\n"
                for (
                    at,
                    scope,
                    action,
                    target_type,
                    target_id,
                    before,
                    after,
                    reason,
                    rule,
                    actor,
                ) in rows.audit
            ),
        )

    # --- admission records ------------------------------------------------------------

    def _records(self) -> None:
        rng = self.rng
        share = self.share_percent
        target = min(self.recorded_facts_n, len(self.system_facts))
        rich = [row for row in self.system_facts if row[0] in self.rich_fact_ids]
        others = [row for row in self.system_facts if row[0] not in self.rich_fact_ids]
        chosen = rich[:target] + rng.sample(others, max(0, target - len(rich)))
        chosen.sort(key=lambda row: row[0])
        # Per fact: [fact row, verdicts [(minute, verdict)], challenges (see _challenge)].
        plans = []
        for row in chosen:
            fact_id, _, recorded, _, _ = row
            at = min(SPAN_MINUTES - 2 * DAY, recorded + rng.randrange(60, 10 * DAY))
            if fact_id in self.rich_fact_ids:
                verdicts = [(at, "admitted")]
            else:
                first = "admitted" if rng.random() < 0.75 else "rejected"
                verdicts = [(at, first)]
                turn = rng.random()
                if turn < 0.15:  # a correction: a later verdict the other way
                    other = "rejected" if first == "admitted" else "admitted"
                    verdicts.append((at + rng.randrange(DAY, 30 * DAY), other))
                elif turn < 0.25:  # reviewed again, same verdict
                    verdicts.append((at + rng.randrange(DAY, 30 * DAY), first))
            challenges = []
            for _ in range(rng.randint(0, 9)):
                challenges.append(self._challenge(at, fact_id, refuted=None))
            plans.append([row, verdicts, challenges])
        total = sum(len(p[1]) + sum(1 + c[2] for c in p[2]) for p in plans)
        # The flooding account: over its cap in a few scopes (rule 6).
        admitted_by_scope: dict[int, list[int]] = {}
        for k, (row, verdicts, _) in enumerate(plans):
            if max(verdicts)[1] == "admitted":
                admitted_by_scope.setdefault(row[1], []).append(k)
        self.flood_scopes = []
        for scope in self.scope_ids[1 : 1 + FLOOD_SCOPES]:
            admitted = [
                k
                for k in admitted_by_scope.get(scope, [])
                if plans[k][0][0] not in self.rich_fact_ids
            ]
            cap = math.ceil(share * len(admitted_by_scope.get(scope, [])) / 100)
            over = min(len(admitted), cap + max(3, cap // 10))
            for k in admitted[:over]:
                plans[k][2].append(
                    self._challenge(
                        max(plans[k][1])[0], plans[k][0][0], refuted=False, author=self.flooder_id
                    )
                )
                total += 1
            self.flood_scopes.append((scope, cap, over))
        # Exactly ``records_n`` records: add refuted challenges, or drop challenges.
        adjustable = [p for p in plans if p[0][0] not in self.rich_fact_ids] or plans
        while total > self.records_n:
            p = adjustable[rng.randrange(len(adjustable))]
            removable = [c for c in p[2] if c[4] != self.flooder_id]
            if removable:
                c = removable[-1]
                p[2].remove(c)
                total -= 1 + c[2]
        while total < self.records_n:
            p = adjustable[rng.randrange(len(adjustable))]
            if self.records_n - total >= 2:
                p[2].append(self._challenge(max(p[1])[0], p[0][0], refuted=True))
                total += 2
            else:
                c = self._challenge(max(p[1])[0], p[0][0], refuted=False)
                c[1] = False  # unevidenced: recorded, no effect
                p[2].append(c)
                total += 1
        self.system_with_records = [p[0][0] for p in plans]
        steward = self.steward_id
        evidence = _json([{"ref": "incident:1", "quote": "the value disagrees with the logs"}])

        def lines() -> Iterator[str]:
            text = self.clock.text
            for (fact_id, scope, *_), verdicts, challenges in plans:
                head = f"\t{scope}\t{fact_id}\tsystem\t"
                for k, (at, verdict) in enumerate(verdicts):
                    ground = "reviewed against the source" if k == 0 else "correction after review"
                    yield (
                        f"{self.uuid()}{head}admission\t{verdict}\t{ground}\t\\N\t\\N\t\\N\t"
                        f"{steward}\t{text(at)}\n"
                    )
                for at, evidenced, refuted, refuted_at, author in challenges:
                    cid = self.uuid()
                    yield (
                        f"{cid}{head}challenge\t\\N\tthis looks wrong\t"
                        f"{evidence if evidenced else '\\N'}\t\\N\t\\N\t{author}\t{text(at)}\n"
                    )
                    if refuted:
                        yield (
                            f"{self.uuid()}{head}refutation\t\\N\tchecked: the fact holds\t\\N\t"
                            f"{cid}\tchallenge\t{steward}\t{text(refuted_at)}\n"
                        )

        self._copy(
            "admissions_record",
            "id, scope_id, fact_id, fact_bucket, role, verdict, ground, evidence, challenge_id, "
            "challenge_role, author_id, inserted_at",
            lines(),
        )

    def _challenge(
        self, after: int, fact_id: str, *, refuted: bool | None, author: int | None = None
    ) -> list:
        rng = self.rng
        at = min(SPAN_MINUTES - DAY, after + rng.randrange(60, 20 * DAY))
        # An open challenge made on purpose (the flood) has evidence; others mostly do.
        evidenced = True if refuted is False else rng.random() < 0.8
        if refuted is None:
            refuted = fact_id in self.rich_fact_ids or rng.random() < 0.97
        challenger = (
            author if author is not None else rng.choice(self.challenger_ids + self.writer_ids)
        )
        return [
            at,
            evidenced,
            int(refuted),
            min(SPAN_MINUTES, at + rng.randrange(60, 5 * DAY)),
            challenger,
        ]

    def _crawler_run(self) -> None:
        """The pass a crawler makes over this store at ANCHOR, stored as ``run_crawl`` stores it.

        A full pass: it walks every slot with a live system fact (one truth
        slot each) and, the store being settled, changes nothing (the
        crawler's own conflicts were opened by earlier passes; nothing has
        decayed below the threshold). Its watermark and basis are read as
        ``memories.maintenance.crawler`` reads them, after the load: a pass that builds
        on this one sees the load as written before it. Its full pass is a
        month old by now, so the next ``run_crawl()`` is a full one anyway.
        """
        from django.conf import settings

        from memories.core.crawl import DecaySettings
        from memories.maintenance.crawler import _basis, _transactions
        from memories.store.models import CrawlerRun
        from memories.store.vocabulary import load_vocabulary

        started = ANCHOR - timedelta(hours=1)
        _, database, watermark = _transactions()
        decay = DecaySettings(
            threshold=settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD,
            half_life_days=settings.CLAIMGRAPH_HALF_LIFE_DAYS,
            floor=settings.CLAIMGRAPH_CONFIDENCE_FLOOR,
        )
        CrawlerRun.objects.create(
            started_at=started,
            finished_at=ANCHOR - timedelta(minutes=20),
            counts=dict.fromkeys(ACTIONS, 0),
            report={
                "slots walked": self.counts.get("memories_truthslot", 0),
                "slots changed": 0,
                "decay threshold": decay.threshold,
                "walk": "full",
                "watermark": watermark,
                "basis": _basis(load_vocabulary(), decay, database),
                "full pass": started.isoformat(),
            },
        )
        self.counts["memories_crawlerrun"] = 1

    # --- after the load ---------------------------------------------------------------

    def store(self) -> Store:
        step = max(1, len(self.live_readable) // SAMPLE_FACTS)
        fact_ids = self.live_readable[::step][:SAMPLE_FACTS]
        step = max(1, len(self.system_with_records) // SAMPLE_FACTS)
        return Store(
            facts=self.n,
            scope_ids=list(self.scope_ids),
            steward_id=self.steward_id,
            agent_id=self.agent_id,
            agent_token=self.agent_token,
            fact_ids=fact_ids,
            subjects=list(self.subjects),
            conflict_scope_id=self.conflict_scope_id,
            system_fact_ids=self.system_with_records[::step][:SAMPLE_FACTS],
        )


class _Rows:
    """One batch's rows, before COPY."""

    def __init__(self) -> None:
        self.facts: list[_Fact] = []
        self.rich_facts: list[_Fact] = []
        self.audit: list[tuple] = []
        self.conflicts: list[tuple] = []
        self.opened: dict[str, int] = {}
        self.members: list[tuple] = []
        self.open_conflicts: dict[str, set] = {}
        self.disputed: set[str] = set()
        self.slots: list[tuple] = []


LOADED_TABLES = (
    "memories_entity",
    "memories_fact",
    "memories_conflict",
    "memories_conflictmember",
    "memories_truthslot",
    "memories_auditentry",
    "admissions_record",
)
DERIVED_TABLES = ("admissions_factverdict", "admissions_openchallenge", "admissions_scopetally")

_FOREIGN_KEYS = """
SELECT c.conname, c.conrelid::regclass::text, c.confrelid::regclass::text,
       array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i),
       array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i)
FROM pg_constraint c
WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY(%s)
ORDER BY 1
"""


def check_foreign_keys(connection, tables) -> None:
    """Every foreign key of ``tables`` holds: one anti-join per constraint, set-wise.

    The load runs without foreign-key triggers; this is the check they would
    have made row by row (MATCH SIMPLE: a row with a null column is not checked).
    """
    with connection.cursor() as cursor:
        cursor.execute(_FOREIGN_KEYS, [list(tables)])
        constraints = cursor.fetchall()
        broken = []
        for name, child, parent, columns, targets in constraints:
            present = " AND ".join(f'c."{col}" IS NOT NULL' for col in columns)
            match = " AND ".join(
                f'p."{t}" = c."{col}"' for col, t in zip(columns, targets, strict=True)
            )
            cursor.execute(
                f"SELECT count(*) FROM {child} c WHERE {present}"
                f" AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {match})"
            )
            (missing,) = cursor.fetchone()
            if missing:
                broken.append(f"{name}: {missing} rows")
    if broken:
        raise AssertionError("foreign keys broken by the load: " + "; ".join(broken))


# --- the command line ----------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--database", default="cgb_generate")
    parser.add_argument("--drop", action="store_true", help="drop the database afterwards")
    parser.add_argument(
        "--checked", action="store_true", help="load with every trigger on (see generate())"
    )
    options = parser.parse_args()
    start_django(options.database)
    started = time.perf_counter()
    store, loaded = generate_timed(options.facts, seed=options.seed, checked=options.checked)
    elapsed = time.perf_counter() - started
    mode = "checked (every trigger on)" if options.checked else "replica, state rebuilt"
    print(f"generated {options.facts:,} facts in {elapsed:.1f} s into {options.database} ({mode})")
    for phase, seconds in loaded.timings.items():
        print(f"  {phase:<40} {seconds:8.1f} s")
    print("rows:")
    for table, count in loaded.counts.items():
        print(f"  {table:<40} {count:>12,}")
    print(
        f"samples: {len(store.fact_ids)} facts, {len(store.subjects)} subjects, "
        f"{len(store.system_fact_ids)} system facts; conflict scope {store.conflict_scope_id}"
    )
    if options.drop:
        drop_database(options.database)
        print(f"dropped {options.database}")
    else:
        print(
            f"left in place; drop it with: psql -h 127.0.0.1 -U postgres -c "
            f"'DROP DATABASE \"{options.database}\" WITH (FORCE)'"
        )


if __name__ == "__main__":
    main()
