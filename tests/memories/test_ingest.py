"""Bulk import: the batch path ends exactly where one-by-one assert_fact calls end."""

import gc
import json
import re
import threading
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connections

from memories.store.errors import NotFound, Rejected
from memories.store.models import AuditEntry, Conflict, ConflictMember, Entity, Fact, Scope
from memories.write import ingest
from memories.write.actions import assert_fact, invalidate_fact
from memories.write.ingest import ImportStopped, import_lines
from memories.write.merges import merge_entities
from tests.conftest import at

pytestmark = pytest.mark.django_db

START = at("2026-03-01T12:00:00")
TICK = timedelta(microseconds=1)
HERE = "{scope}"


def line(subject, predicate, obj, source, **extra) -> dict:
    return {
        "scope": HERE,
        "subject": subject,
        "predicate": predicate,
        "object": obj,
        "source_type": source,
        **extra,
    }


# Each entry: the line, and what it must come to. Slots are hit again and
# again, across and within batches.
MIXED = [
    (line("team", "core/prefers", "trunk-based development", "user-assertion"), "created"),
    (
        line("Team", "core/prefers", "Trunk-Based  Development", "user-assertion", confidence=0.95),
        "reinforced",
    ),
    (
        line("AuthService", "core/has-version", "2.0.0", "code", confidence=0.95),
        "created",
    ),
    (line("auth-svc", "core/has-version", "3.0.0", "agent-note"), "flagged/outranked"),
    # Supersedes both 2.0.0 and the disputed 3.0.0, so line 4's conflict closes as moot.
    (line("AuthService", "core/has-version", "2.1.0", "code"), "superseded"),
    (
        line(
            "api-layer",
            "core/decided-against",
            "GraphQL",
            "decision-record",
            epistemic="commitment",
        ),
        "created",
    ),
    (line("api-layer", "core/prefers", "GraphQL", "session-log"), "flagged/commitment"),
    (line("shoply", "core/deployed-via", "Fly", "user-assertion"), "created"),
    (line("shoply", "core/deployed-via", "Heroku", "agent-note"), "flagged/revenant"),
    # Ends both sides of the conflict set up before the import: it closes as moot.
    (line("svc", "core/has-version", "2.0", "code"), "superseded"),
    (line("api", "core/depends-on", "Postgres", "code", object_kind="entity"), "created"),
    (line("api", "core/depends-on", "postgres", "code", object_kind="entity"), "reinforced"),
    # PG was merged into Postgres before the import.
    (line("API", "core/depends-on", "PG", "agent-note", object_kind="entity"), "reinforced"),
    ("this is not json", "rejected"),
    (line("team", "core/likes", "tea", "code"), "rejected"),
    (line("team", "core/uses", "REST", "session-log", episode="run-7"), "created"),
    (
        line("team", "core/uses", "REST", "user-assertion", epistemic="commitment"),
        "superseded",
    ),
    (
        line("team", "core/uses", " rest ", "session-log", evidence=[{"ref": "log-2"}]),
        "reinforced",
    ),
    (line("editor", "core/prefers", "vim", "user-assertion", bucket="user"), "created"),
    (
        line("AuthService", "core/has-version", "1.9.0", "code", t_valid="2020-01-01T00:00:00Z"),
        "flagged/backdated",
    ),
    (line("team", "core/avoids", "trunk-based development", "user-assertion"), "superseded"),
    (line("team", "core/prefers", "trunk-based development", "agent-note"), "flagged/outranked"),
    ({**line("x", "core/uses", "y", "code"), "scope": "elsewhere"}, "rejected"),
    (
        line(
            "old-api",
            "core/uses",
            "SOAP",
            "code",
            t_valid="2019-01-01T00:00:00Z",
            t_invalid="2020-01-01T00:00:00Z",
        ),
        "created",
    ),
    (
        line(
            "old-api",
            "core/uses",
            "XML",
            "code",
            t_valid="2020-01-01T00:00:00Z",
            t_invalid="2019-01-01T00:00:00Z",
        ),
        "rejected",
    ),
    (line("team", "core/uses", "REST", "code", confidence="high"), "rejected"),
    # Out of the scale: refused, never stored as 1.0 or 0.0 (issue 31 §3).
    (line("team", "core/uses", "gRPC", "code", confidence=1.5), "rejected"),
    (line("team", "core/uses", "SOAP", "code", confidence=-3), "rejected"),
    (line("AuthService", "core/has-version", "2.2.0", "code"), "superseded"),
    (line("AuthService", "core/has-version", "2.2.0", "session-log"), "reinforced"),
]


def jsonl(scope_name: str) -> list[str]:
    out = []
    for data, _ in MIXED:
        if isinstance(data, str):
            out.append(data)
        else:
            out.append(json.dumps({**data, "scope": data["scope"].replace(HERE, scope_name)}))
    return out


def prepare(scope: Scope, member, steward) -> None:
    """The same standing state in each scope before the import."""
    scope.members.add(member)
    entity = Entity(scope=scope, name="AuthService", aliases=["auth-svc"])
    entity.set_keys()
    entity.save()
    postgres = Entity(scope=scope, name="Postgres")
    postgres.set_keys()
    postgres.save()
    pg = Entity(scope=scope, name="PG")
    pg.set_keys()
    pg.save()
    merge_entities(
        actor=steward, entity_id=pg.pk, into_id=postgres.pk, reason="same server", now=START
    )

    def write(now, *args, **extra):
        data = line(*args, **extra)
        return assert_fact(actor=member, data={**data, "scope": scope.name}, now=now)

    heroku = write(
        START - timedelta(days=3), "shoply", "core/deployed-via", "Heroku", "user-assertion"
    )
    invalidate_fact(
        actor=member,
        fact_id=heroku.fact.pk,
        reason="migrated to Fly",
        now=START - timedelta(days=2),
    )
    write(START - timedelta(days=2), "svc", "core/has-version", "1.0", "session-log")
    flagged = write(START - timedelta(days=1), "svc", "core/has-version", "1.1", "agent-note")
    assert flagged.reason == "outranked"


def one_by_one(lines: list[str], member) -> list[str]:
    statuses = []
    for i, text in enumerate(lines):
        try:
            result = assert_fact(actor=member, data=json.loads(text), now=START + TICK * i)
        except (ValueError, Rejected, NotFound):
            statuses.append("rejected")
            continue
        statuses.append(f"{result.status}/{result.reason}" if result.reason else result.status)
    return statuses


def label(outcome) -> str:
    if outcome.status == "rejected" or outcome.reason is None:
        return outcome.status
    return f"{outcome.status}/{outcome.reason}"


UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def snapshot(scope: Scope) -> dict:
    """Everything the write path leaves behind in a scope, with ids replaced by positions."""
    facts = list(
        Fact.objects.filter(scope=scope)
        .order_by("recorded_at", "id")
        .select_related(
            "subject", "predicate", "object_ref", "source_type", "author", "invalidated_by"
        )
    )
    conflicts = list(Conflict.objects.filter(scope=scope).order_by("opened_at", "id"))
    names = {str(f.pk): f"fact#{i}" for i, f in enumerate(facts)}
    names |= {str(c.pk): f"conflict#{i}" for i, c in enumerate(conflicts)}
    entities = {e.pk: e.name for e in Entity.objects.filter(scope=scope)}

    def anonymous(value):
        text = json.dumps(value, sort_keys=True)
        text = UUID_TEXT.sub(lambda m: names.get(m.group(0), "?"), text)
        value = json.loads(text)
        if isinstance(value, dict) and isinstance(value.get("candidates"), list):
            value["candidates"] = sorted(value["candidates"])
        return value

    return {
        "entities": sorted((e.name, e.key, tuple(e.alias_keys)) for e in scope.entities.all()),
        "facts": [
            (
                f.subject.name,
                f.predicate.name,
                f.object_kind,
                f.object_lit if f.object_ref_id is None else entities[f.object_ref_id],
                f.epistemic,
                f.source_type.name,
                round(f.confidence, 9),
                f.episode,
                f.statement,
                f.evidence,
                f.author.username,
                f.bucket,
                f.t_valid,
                f.t_invalid,
                f.recorded_at,
                f.last_reinforced_at,
                f.invalidated_at,
                f.invalidated_by.username if f.invalidated_by else None,
                f.invalidation_kind,
                f.invalidation_reason,
                names.get(str(f.superseded_by_id)),
            )
            for f in facts
        ],
        "conflicts": [
            (
                c.kind,
                entities[c.subject_id],
                c.predicate_id,
                c.opened_at,
                c.resolved_at,
                c.resolution,
                c.reason,
                sorted(
                    (names[str(m.fact_id)], m.role, m.disputes, m.kept)
                    for m in ConflictMember.objects.filter(conflict=c)
                ),
            )
            for c in conflicts
        ],
        "audit": [
            (
                entry.at,
                entry.actor_id,
                entry.action,
                entry.target_type,
                anonymous(entry.target_id),
                anonymous(entry.before),
                anonymous(entry.after),
                entry.reason,
                entry.rule,
            )
            for entry in AuditEntry.objects.filter(scope=scope).order_by("at", "id")
            if entry.action != "merged-entity"
        ],
    }


@pytest.mark.parametrize("batch_size", [4, 1_000])
def test_batches_end_exactly_where_one_by_one_assertions_end(member, steward, batch_size):
    compare_with_one_by_one(member, steward, batch_size=batch_size)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("batch_size", [2, 1_000])
# In a whole run the browser tests' Playwright driver keeps a thread of its
# own in this process; the forked workers never touch it.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_worker_processes_end_exactly_where_one_by_one_assertions_end(member, steward, batch_size):
    # Committed data, so the worker processes see the scopes and accounts;
    # with batches of 2 each worker is sent many shares.
    compare_with_one_by_one(member, steward, batch_size=batch_size, workers=2)


def compare_with_one_by_one(member, steward, **options) -> None:
    expected = [outcome for _, outcome in MIXED]
    Scope.objects.create(name="elsewhere")
    alone = Scope.objects.create(name="one-by-one")
    batched = Scope.objects.create(name="batched")
    # Memberships first: an account's scopes are read once per user object,
    # like Django's permission cache.
    alone.members.add(member)
    batched.members.add(member)
    prepare(alone, member, steward)
    prepare(batched, member, steward)

    assert one_by_one(jsonl("one-by-one"), member) == expected
    report = import_lines(jsonl("batched"), actor=member, now=START, **options)
    assert [label(outcome) for outcome in report.outcomes] == expected

    before, after = snapshot(alone), snapshot(batched)
    assert after["entities"] == before["entities"]
    assert after["facts"] == before["facts"]
    assert after["conflicts"] == before["conflicts"]
    assert after["audit"] == before["audit"]
    # Lines 5, 10 and 27 each ended both sides of a conflict, which closed by itself.
    assert [c[5] for c in after["conflicts"]].count("moot") == 3


# --- bad lines ---------------------------------------------------------------------


def test_rejected_lines_write_nothing_not_even_their_entities(member, scope):
    lines = [
        json.dumps(line("brand-new", "core/uses", "x", "rumour") | {"scope": "project"}),
        json.dumps(line("also-new", "core/uses", "x" * 2_001, "code") | {"scope": "project"}),
        json.dumps(line("third-new", "core/uses", "x", "code") | {"scope": "nowhere"}),
        json.dumps(["not", "an", "object"]),
        json.dumps(
            line("fourth-new", "core/uses", "x", "code", t_valid="0001-01-01T00:00:00+05:00")
            | {"scope": "project"}
        ),
    ]
    report = import_lines(lines, actor=member)
    assert [(o.line, o.status, o.field) for o in report.outcomes] == [
        (1, "rejected", "source_type"),
        (2, "rejected", "object"),
        (3, "rejected", "scope"),
        (4, "rejected", "line"),
        (5, "rejected", "t_valid"),
    ]
    assert Fact.objects.count() == 0
    assert Entity.objects.count() == 0


def test_a_line_the_database_refuses_costs_only_itself(member, scope):
    # A constraint of this test's own (rolled back with it) makes PostgreSQL
    # refuse one line that every check in Python lets through.
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "ALTER TABLE memories_fact ADD CONSTRAINT test_refuses_forbidden"
            " CHECK (object_lit IS DISTINCT FROM 'forbidden')"
        )
    objects = ["redis", "forbidden", "kafka"]
    lines = [
        json.dumps(line("svc", "core/uses", obj, "code") | {"scope": "project"}) for obj in objects
    ]
    report = import_lines(lines, actor=member)
    assert [o.status for o in report.outcomes] == ["created", "rejected", "created"]
    assert "refused" in report.outcomes[1].reason
    assert sorted(Fact.objects.values_list("object_lit", flat=True)) == ["kafka", "redis"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_share_the_database_refuses_in_a_worker_costs_only_its_offending_line(member):
    # Committed, so the workers see it; the constraint is dropped again below.
    Scope.objects.get_or_create(name="project")[0].members.add(member)
    objects = ["redis", "forbidden", "kafka", "nats"]
    lines = [
        json.dumps(line(f"svc-{i}", "core/uses", obj, "code") | {"scope": "project"})
        for i, obj in enumerate(objects)
    ]
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "ALTER TABLE memories_fact ADD CONSTRAINT test_refuses_forbidden"
            " CHECK (object_lit IS DISTINCT FROM 'forbidden')"
        )
    try:
        report = import_lines(lines, actor=member, workers=2)
    finally:
        with connections["default"].cursor() as cursor:
            cursor.execute("ALTER TABLE memories_fact DROP CONSTRAINT test_refuses_forbidden")
    assert [o.status for o in report.outcomes] == ["created", "rejected", "created", "created"]
    assert "refused" in report.outcomes[1].reason
    assert sorted(Fact.objects.values_list("object_lit", flat=True)) == ["kafka", "nats", "redis"]


# --- the garbage collector ----------------------------------------------------------


def test_the_collector_is_paused_for_each_batch_and_runs_again_after_it(member, scope, monkeypatch):
    seen = []
    do_decide_and_write = ingest.do_decide_and_write

    def watched(*args, **kwargs):
        seen.append(gc.isenabled())
        return do_decide_and_write(*args, **kwargs)

    monkeypatch.setattr(ingest, "do_decide_and_write", watched)
    lines = [
        json.dumps(line(f"svc-{i}", "core/uses", "redis", "code") | {"scope": "project"})
        for i in range(3)
    ]
    report = import_lines(lines, actor=member, batch_size=2)
    assert [o.status for o in report.outcomes] == ["created"] * 3
    assert seen == [False, False]
    assert gc.isenabled()

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the batch")

    monkeypatch.setattr(ingest, "do_decide_and_write", broken)
    with pytest.raises(ImportStopped):
        import_lines(lines, actor=member)
    assert gc.isenabled()


def test_an_import_leaves_a_paused_collector_paused(member, scope):
    lines = [json.dumps(line("svc", "core/uses", "redis", "code") | {"scope": "project"})]
    gc.disable()
    try:
        import_lines(lines, actor=member)
        assert not gc.isenabled()
    finally:
        gc.enable()


# --- the command ---------------------------------------------------------------------


def test_import_command_reports_counts_and_each_rejected_line(member, scope, tmp_path):
    rows = [
        line("svc", "core/uses", "redis", "code"),
        line("svc", "core/uses", "Redis", "code"),
        line("svc", "core/uses", "redis", "telepathy"),
        line("svc", "core/has-version", "1.0", "code"),
        line("svc", "core/has-version", "1.1", "code"),
    ]
    path = tmp_path / "facts.jsonl"
    text = "\n".join(json.dumps(r | {"scope": "project"}) for r in rows)
    path.write_text(text.replace("\n", "\n\n", 1) + "\n{oops\n", encoding="utf-8")
    out = StringIO()
    call_command("import_facts", str(path), "--episode", "import-1", "--as", "mira", stdout=out)
    output = out.getvalue()
    assert "2 created, 1 reinforced, 1 superseded, 0 flagged, 2 rejected" in output
    assert "line 4: rejected (source_type): unknown source type 'telepathy'" in output
    assert "line 7: rejected (line): is not valid JSON" in output
    assert set(Fact.objects.values_list("episode", flat=True)) == {"import-1"}
    assert set(Fact.objects.values_list("author__username", flat=True)) == {"mira"}


@pytest.mark.parametrize(
    "workers",
    [
        1,
        # Committed, so forked workers decide the lines (inside a transaction
        # the import stays in this process).
        pytest.param(2, marks=pytest.mark.django_db(transaction=True, serialized_rollback=True)),
    ],
)
def test_import_command_reports_the_lines_whose_confidence_was_capped(
    member, scope, tmp_path, workers
):
    rows = [
        line("svc", "core/uses", "redis", "agent-note", confidence=0.99),
        line("svc", "core/uses", "kafka", "agent-note"),  # the default: not reported
        line("svc", "core/uses", "nats", "code", confidence=0.9),
        line("svc", "core/uses", "zmq", "session-log", confidence=0.75),
        line("svc", "core/uses", "rabbit", "agent-note", confidence=1.5),  # rejected
    ]
    path = tmp_path / "facts.jsonl"
    path.write_text("\n".join(json.dumps(r | {"scope": "project"}) for r in rows), encoding="utf-8")
    out = StringIO()
    call_command("import_facts", str(path), "--as", "mira", "--workers", str(workers), stdout=out)
    output = out.getvalue()
    assert "Confidence capped by the source type's ceiling on 2 line(s):" in output
    assert "  line 1: confidence 0.99 capped at 0.65, the ceiling of agent-note" in output
    assert "  line 4: confidence 0.75 capped at 0.7, the ceiling of session-log" in output
    assert "line 2:" not in output
    assert "line 5: rejected (confidence)" in output


def test_import_command_names_every_bad_field_of_a_line(member, scope, tmp_path):
    bad = line("svc", "core/likes", "redis", "telepathy", confidence=1e9)
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps(bad | {"scope": "project"}) + "\n", encoding="utf-8")
    out = StringIO()
    call_command("import_facts", str(path), "--as", "mira", stdout=out)
    output = out.getvalue()
    assert "line 1: rejected (predicate): unknown predicate 'core/likes'" in output
    assert "source_type: unknown source type 'telepathy'" in output
    assert "confidence: must be between 0 and 1" in output
    assert not Fact.objects.exists()


# --- concurrency ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_import_and_concurrent_writers_to_the_same_slots_stay_consistent(member):
    Scope.objects.get_or_create(name="project")[0].members.add(member)
    subjects = [f"svc-{n}" for n in range(5)]
    file_lines = [
        json.dumps(
            line(subjects[i % 5], "core/has-version", f"1.{i}", "code") | {"scope": "project"}
        )
        for i in range(120)
    ]
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def run(work):
        try:
            barrier.wait()
            work()
        except BaseException as error:  # reported below, in the test's own thread
            errors.append(error)
        finally:
            connections.close_all()

    def importer():
        import_lines(file_lines, actor=member, batch_size=10)

    def writer(offset):
        def work():
            for i in range(30):
                data = line(subjects[i % 5], "core/has-version", f"2.{offset}.{i}", "code")
                assert_fact(actor=member, data=data | {"scope": "project"})

        return work

    threads = [threading.Thread(target=run, args=(w,)) for w in (importer, writer(1), writer(2))]
    threads.append(threading.Thread(target=run, args=(writer(3),)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    assert Fact.objects.count() == 120 + 3 * 30
    for subject in subjects:
        facts = list(Fact.objects.with_disputed().filter(subject__name=subject).order_by("t_valid"))
        live = [f for f in facts if f.is_live]
        assert len(live) == 1 and not live[0].disputed
        by_id = {f.pk: f for f in facts}
        for fact in facts:
            if fact is live[0]:
                continue
            # Every earlier value was superseded; its interval ends where its successor's begins.
            assert fact.superseded_by_id is not None
            assert fact.t_invalid == by_id[fact.superseded_by_id].t_valid
