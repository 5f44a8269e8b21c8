"""Bulk import under bad input: one line never costs the others, and the report always prints.

A line is refused by the checks (``decisions.parse_assertion``) or, failing
those, by the database; either way it is reported with its number and
nothing of it is written, not even an entity only it named.
"""

import io
import json
import re
import sys
from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from memories.store.models import Entity, Fact, Scope
from memories.write.ingest import ImportStopped, import_lines

pytestmark = pytest.mark.django_db

SURROGATE = "x\ud800y"
# The workers must see the scope and the account: these tests commit them.
committed = pytest.mark.django_db(transaction=True, serialized_rollback=True)
# In a whole run the browser tests' Playwright driver keeps a thread of its
# own in this process; the forked workers never touch it.
forks = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")


def fact_line(subject: str, obj: str, **extra) -> str:
    # json.dumps writes a lone surrogate as the escape "\ud800", as a file would hold it.
    data = {
        "scope": "project",
        "subject": subject,
        "predicate": "core/uses",
        "object": obj,
        "source_type": "code",
    }
    return json.dumps(data | extra)


def entity_names() -> set[str]:
    return set(Entity.objects.values_list("name", flat=True))


def facts() -> list[str]:
    return sorted(Fact.objects.values_list("object_lit", flat=True))


def in_project(member) -> None:
    Scope.objects.get_or_create(name="project")[0].members.add(member)


def add_check(table: str, name: str, condition: str) -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({condition})")


def drop_check(table: str, name: str) -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")


# --- text PostgreSQL cannot store --------------------------------------------------------

# Each case: the field named, and the line. The bad line's subject is named
# nowhere else, so its entity must not exist.
SURROGATE_LINES = {
    "statement": ("statement", fact_line("only-in-the-bad-line", "kafka", statement=SURROGATE)),
    "episode": ("episode", fact_line("only-in-the-bad-line", "kafka", episode=SURROGATE)),
    "evidence-quote": (
        "evidence",
        fact_line("only-in-the-bad-line", "kafka", evidence=[{"ref": "log-1", "quote": SURROGATE}]),
    ),
    "evidence-ref": ("evidence", fact_line("only-in-the-bad-line", "kafka", evidence=[SURROGATE])),
    "object": ("object", fact_line("only-in-the-bad-line", SURROGATE)),
    "entity-object": (
        "object",
        fact_line("only-in-the-bad-line", SURROGATE, object_kind="entity"),
    ),
    "subject": ("subject", fact_line(SURROGATE, "kafka")),
}


def import_around(bad_line: str, member, **options):
    lines = [fact_line("svc-a", "redis"), bad_line, fact_line("svc-b", "nats")]
    return import_lines(lines, actor=member, **options)


def assert_only_the_bad_line_was_refused(report, field: str) -> None:
    assert [(o.line, o.status) for o in report.outcomes] == [
        (1, "created"),
        (2, "rejected"),
        (3, "created"),
    ]
    assert report.outcomes[1].field == field
    assert facts() == ["nats", "redis"]
    assert entity_names() == {"svc-a", "svc-b"}


@pytest.mark.parametrize("case", list(SURROGATE_LINES))
def test_a_lone_surrogate_rejects_its_line_naming_the_field_and_the_others_are_imported(
    member, scope, case
):
    field, bad_line = SURROGATE_LINES[case]
    assert_only_the_bad_line_was_refused(import_around(bad_line, member), field)


@committed
@forks
@pytest.mark.parametrize("case", ["statement", "evidence-quote", "subject", "entity-object"])
def test_a_lone_surrogate_costs_only_its_line_with_worker_processes(member, case):
    in_project(member)
    field, bad_line = SURROGATE_LINES[case]
    assert_only_the_bad_line_was_refused(import_around(bad_line, member, workers=2), field)


def test_the_report_prints_a_field_name_holding_a_lone_surrogate(member, scope, tmp_path):
    path = tmp_path / "facts.jsonl"
    path.write_text(fact_line("svc", "redis") + "\n" + fact_line("svc", "kafka", **{SURROGATE: 1}))
    # A real file, strictly UTF-8 like a terminal: the report must still be written.
    with open(tmp_path / "report.txt", "w", encoding="utf-8") as out:
        call_command("import_facts", str(path), "--as", "mira", stdout=out)
    report = (tmp_path / "report.txt").read_text(encoding="utf-8")
    assert "1 created, 0 reinforced, 0 superseded, 0 flagged, 1 rejected" in report
    # Named as an escape, by the checks or else by the report itself.
    assert re.search(r"line 2: rejected \('?x\\ud800y'?\): is not a field of an assertion", report)


# --- invalid UTF-8 ---------------------------------------------------------------------

NOT_UTF8 = b'{"scope": "project", "subject": "svc", "predicate": "core/uses", "object": "\xff\xfe"'


def file_with_bad_bytes_at_line_1501(path) -> None:
    good = [fact_line(f"svc-{i % 40}", f"lib-{i}").encode() for i in range(2_500)]
    path.write_bytes(b"\n".join([*good[:1_500], NOT_UTF8 + b"}", *good[1_500:]]) + b"\n")


@committed
@forks
@pytest.mark.parametrize("workers", [1, 2])
def test_invalid_utf8_in_the_middle_rejects_only_its_line(member, tmp_path, workers):
    in_project(member)
    path = tmp_path / "facts.jsonl"
    file_with_bad_bytes_at_line_1501(path)
    out = StringIO()
    call_command("import_facts", str(path), "--as", "mira", "--workers", str(workers), stdout=out)
    output = out.getvalue()
    assert "Imported: 2500 created, 0 reinforced, 0 superseded, 0 flagged, 1 rejected" in output
    assert re.search(
        r"line 1501: rejected \(line\): is not UTF-8 text \(byte 0xff at \d+\)", output
    )
    assert Fact.objects.count() == 2_500


def test_invalid_utf8_on_standard_input_rejects_only_its_line(member, scope, monkeypatch):
    data = b"\n".join([fact_line("svc", "redis").encode(), NOT_UTF8 + b"}", b""])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    out = StringIO()
    call_command("import_facts", "-", "--as", "mira", stdout=out)
    assert "1 created, 0 reinforced, 0 superseded, 0 flagged, 1 rejected" in out.getvalue()
    assert "line 2: rejected (line): is not UTF-8 text" in out.getvalue()
    assert facts() == ["redis"]


def test_a_utf16_line_is_not_read_as_json(member, scope):
    # json.loads would guess UTF-16 from bytes; a JSONL file is UTF-8.
    report = import_lines([fact_line("svc", "redis").encode("utf-16")], actor=member)
    assert [(o.status, o.field) for o in report.outcomes] == [("rejected", "line")]


# --- lines the database refuses that no check catches ------------------------------------


@committed
@forks
@pytest.mark.parametrize("workers", [1, 2])
def test_a_fact_the_database_refuses_leaves_no_entity_behind(member, workers):
    in_project(member)
    lines = [
        fact_line("svc-a", "redis"),
        fact_line("only-in-the-bad-line", "forbidden"),
        fact_line("svc-b", "nats"),
    ]
    # A constraint of this test's own makes PostgreSQL refuse a line every check lets through.
    add_check("memories_fact", "test_refuses_forbidden", "object_lit IS DISTINCT FROM 'forbidden'")
    try:
        report = import_lines(lines, actor=member, workers=workers)
    finally:
        drop_check("memories_fact", "test_refuses_forbidden")
    assert [(o.status, o.field) for o in report.outcomes] == [
        ("created", None),
        ("rejected", "line"),
        ("created", None),
    ]
    assert "refused" in report.outcomes[1].reason
    assert facts() == ["nats", "redis"]
    assert entity_names() == {"svc-a", "svc-b"}


@committed
@forks
@pytest.mark.parametrize("workers", [1, 2])
def test_an_entity_the_database_refuses_costs_only_its_line(member, workers):
    in_project(member)
    lines = [
        fact_line("svc-a", "redis"),
        fact_line("svc-b", "Forbidden", object_kind="entity"),
        fact_line("svc-c", "nats"),
    ]
    add_check("memories_entity", "test_refuses_forbidden", "name <> 'Forbidden'")
    try:
        report = import_lines(lines, actor=member, workers=workers)
    finally:
        drop_check("memories_entity", "test_refuses_forbidden")
    assert [o.status for o in report.outcomes] == ["created", "rejected", "created"]
    assert "refused" in report.outcomes[1].reason
    assert facts() == ["nats", "redis"]
    # With one process svc-b's entity goes with the line's transaction; with
    # workers it was created beside the others and is dropped again.
    assert entity_names() == {"svc-a", "svc-c"}


@committed
@forks
@pytest.mark.parametrize("workers", [1, 2])
def test_a_line_that_ends_its_database_connection_costs_only_itself(member, workers):
    in_project(member)
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION test_end_my_connection() RETURNS boolean LANGUAGE sql"
            " AS 'SELECT pg_terminate_backend(pg_backend_pid())'"
        )
    add_check(
        "memories_fact",
        "test_ends_connection",
        "object_lit IS DISTINCT FROM 'fatal' OR test_end_my_connection()",
    )
    lines = [fact_line(f"svc-{i}", obj) for i, obj in enumerate(["redis", "fatal", "nats"])]
    try:
        report = import_lines(lines, actor=member, workers=workers, batch_size=3)
    finally:
        connections.close_all()
        drop_check("memories_fact", "test_ends_connection")
        with connections["default"].cursor() as cursor:
            cursor.execute("DROP FUNCTION test_end_my_connection()")
    assert [o.status for o in report.outcomes] == ["created", "rejected", "created"]
    assert facts() == ["nats", "redis"]
    assert entity_names() == {"svc-0", "svc-2"}


# --- an import that cannot go on ---------------------------------------------------------


def lines_then_a_read_error(count: int) -> Iterator[str]:
    for i in range(count):
        yield fact_line(f"svc-{i}", f"lib-{i}")
    raise OSError("Input/output error")


def test_an_import_that_stops_reports_every_line_it_wrote(member, scope):
    with pytest.raises(ImportStopped) as stopped:
        import_lines(lines_then_a_read_error(5), actor=member, batch_size=2)
    assert "Input/output error" in stopped.value.reason
    # Two whole batches were written before the third could be read.
    assert [o.line for o in stopped.value.report.outcomes] == [1, 2, 3, 4]
    assert facts() == ["lib-0", "lib-1", "lib-2", "lib-3"]


@committed
@forks
def test_an_import_with_workers_that_stops_reports_every_line_it_wrote(member):
    in_project(member)
    with pytest.raises(ImportStopped) as stopped:
        import_lines(lines_then_a_read_error(5), actor=member, batch_size=1, workers=2)
    outcomes = stopped.value.report.outcomes
    assert [o.line for o in outcomes] == [1, 2, 3, 4]
    assert {o.status for o in outcomes} == {"created"}
    assert facts() == ["lib-0", "lib-1", "lib-2", "lib-3"]
    assert entity_names() == {"svc-0", "svc-1", "svc-2", "svc-3"}


def test_the_command_prints_its_report_when_the_import_stops(member, scope, monkeypatch):
    class Unreadable:
        buffer = (line.encode() for line in lines_then_a_read_error(3))

    monkeypatch.setattr(sys, "stdin", Unreadable())
    out = StringIO()
    with pytest.raises(CommandError, match="The import stopped: Input/output error"):
        call_command("import_facts", "-", "--as", "mira", "--batch-size", "2", stdout=out)
    assert (
        "Imported: 2 created, 0 reinforced, 0 superseded, 0 flagged, 0 rejected" in out.getvalue()
    )
