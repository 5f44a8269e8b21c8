"""Finding a subject by name or alias costs the same however many entities a scope holds."""

from django.db import connection

from memories.store.lookups import find_entity, get_or_create_entity
from memories.store.models import Entity


def _entity_rows_read() -> int:
    """Entity rows this transaction has read so far, by any scan of the table or its indexes."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)"
            " FROM pg_stat_xact_user_tables WHERE relname = 'memories_entity'"
        )
        (rows,) = cursor.fetchone()
    return rows


def test_looking_up_a_new_name_reads_no_other_entity_however_many_the_scope_holds(scope):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memories_entity (scope_id, name, key, type, aliases, alias_keys,"
            " created_at) SELECT %s, 'e' || g, 'e' || g, '', '{}', '{}', now()"
            " FROM generate_series(1, 5000) AS g",
            [scope.pk],
        )
        cursor.execute("ANALYZE memories_entity")
    for _ in range(6):  # past the fifth run, where a prepared statement may change its plan
        before = _entity_rows_read()
        assert find_entity(scope, "no such name") is None
        assert _entity_rows_read() - before < 10
    before = _entity_rows_read()
    created = get_or_create_entity(scope, "Brand new").entity
    assert _entity_rows_read() - before < 10
    assert created.name == "Brand new"


def test_the_alias_index_keeps_no_pending_list(db):
    # A pending list is scanned whole by every lookup until a vacuum empties it.
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'entity_alias_keys_gin'")
        (options,) = cursor.fetchone()
    assert "fastupdate=off" in (options or [])


def test_an_alias_still_finds_its_entity_first_by_id(scope):
    older = Entity(scope=scope, name="PaySvc", aliases=["payments"])
    older.set_keys()
    older.save()
    newer = Entity(scope=scope, name="Payments core", aliases=["payments"])
    newer.set_keys()
    newer.save()
    assert find_entity(scope, "Payments") == older
