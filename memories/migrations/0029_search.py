"""Search over facts (issue 31 §1): full-text vectors kept by PostgreSQL, trigram names.

Every fact gets ``search_vector``, a tsvector PostgreSQL generates from the
fact's own text (its literal object weighted A, its statement B, the strings
of its evidence C), and every entity ``search_names`` and ``search_vector``
from its name and aliases (``claimgraph_entity_names`` in
memories/sql/search.sql). They are generated columns, so every writer
(the write path, the import's COPY, a merge, an admin's alias edit) keeps
them current without knowing they exist. A search matches a fact by its own
vector or by its subject's or object's, and ranks with ``ts_rank`` over the
three together (``admissions/search.py``; docs/architecture.md, "Search").

They are not model fields: Django would then read every fact's vector on
every read (recall's prepared statement lists the columns), which no read but
search wants. ``pg_trgm`` ships with PostgreSQL, the embedded wheel included.
Adding a stored generated column rewrites the table once.
"""

from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile

FACT_VECTOR = """
    setweight(to_tsvector('english'::regconfig, coalesce(object_lit, '')), 'A')
    || setweight(to_tsvector('english'::regconfig, statement), 'B')
    || setweight(jsonb_to_tsvector('english'::regconfig, evidence, '["string"]'), 'C')
"""
ENTITY_NAMES = "claimgraph_entity_names(name, aliases::text[])"


class Migration(migrations.Migration):
    dependencies = [("memories", "0028_entities_held_against_merges")]

    operations = [
        TrigramExtension(),
        RunSQLFile("memories", "search.sql"),
        migrations.RunSQL(
            f"""
            ALTER TABLE memories_fact ADD COLUMN search_vector tsvector
                GENERATED ALWAYS AS ({FACT_VECTOR}) STORED;
            ALTER TABLE memories_entity
                ADD COLUMN search_names text GENERATED ALWAYS AS ({ENTITY_NAMES}) STORED,
                ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
                    setweight(to_tsvector('english'::regconfig, {ENTITY_NAMES}), 'A')
                ) STORED;
            CREATE INDEX fact_search ON memories_fact USING gin (search_vector);
            CREATE INDEX entity_search ON memories_entity USING gin (search_vector);
            CREATE INDEX entity_names_trgm ON memories_entity
                USING gin (search_names gin_trgm_ops);
            """,
            """
            DROP INDEX IF EXISTS entity_names_trgm;
            DROP INDEX IF EXISTS entity_search;
            DROP INDEX IF EXISTS fact_search;
            ALTER TABLE memories_entity DROP COLUMN IF EXISTS search_vector,
                DROP COLUMN IF EXISTS search_names;
            ALTER TABLE memories_fact DROP COLUMN IF EXISTS search_vector;
            """,
        ),
    ]
