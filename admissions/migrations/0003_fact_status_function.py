"""One fact's status inputs as a database function, so its plan is prepared once.

Django sends queries with their parameters inlined (client-side binding), so
PostgreSQL plans the one-fact status query afresh on every call, and planning
it costs more than running it. A PL/pgSQL function keeps the plan of the
query inside it for the life of the session, and a call plans in microseconds.
It also gives operators the same read from psql:
``SELECT * FROM admissions_fact_status('<fact id>', <scope id>)``.

One row per record of the fact (or a single row of nulls when it has none),
each carrying A for the scope; ``earlier`` is set on each account's earliest
open evidenced challenge on the fact: how many other admitted facts that
account challenges, openly and with evidence, ranking before it (rule 6),
read by an index range scan over that account's open challenges only.
"""

from django.db import migrations

FUNCTION = """
CREATE FUNCTION admissions_fact_status(p_fact uuid, p_scope integer)
RETURNS TABLE (
    admitted integer,
    id uuid,
    role varchar,
    verdict varchar,
    evidenced boolean,
    challenge_id uuid,
    author_id integer,
    username varchar,
    inserted_at timestamptz,
    earlier bigint
)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    WITH firsts AS (
        SELECT DISTINCT ON (o.author_id) o.challenge_id
        FROM admissions_openchallenge o
        WHERE o.fact_id = p_fact
        ORDER BY o.author_id, o.inserted_at, o.challenge_id
    )
    SELECT
        tally.admitted,
        r.id, r.role, r.verdict, r.evidence IS NOT NULL, r.challenge_id,
        r.author_id, r.username, r.inserted_at,
        CASE WHEN r.id IN (SELECT f.challenge_id FROM firsts f) THEN (
            SELECT count(DISTINCT o.fact_id)
            FROM admissions_openchallenge o
            JOIN admissions_factverdict v
              ON v.fact_id = o.fact_id AND v.verdict = 'admitted'
            WHERE o.scope_id = p_scope
              AND o.author_id = r.author_id
              AND (o.inserted_at, o.challenge_id) < (r.inserted_at, r.id)
              AND o.fact_id <> p_fact
        ) END
    FROM (
        SELECT coalesce(
            (SELECT t.admitted FROM admissions_scopetally t WHERE t.scope_id = p_scope), 0
        )::integer AS admitted
    ) AS tally
    LEFT JOIN LATERAL (
        -- The username by a lookup per record, not a join: a fact has a
        -- handful of records and the planner must never hash the user table.
        SELECT rec.id, rec.role, rec.verdict, rec.evidence, rec.challenge_id,
               rec.author_id,
               (SELECT u.username FROM auth_user u WHERE u.id = rec.author_id) AS username,
               rec.inserted_at
        FROM admissions_record rec
        WHERE rec.fact_id = p_fact
    ) AS r ON true;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("admissions", "0002_database_guarantees")]

    operations = [
        migrations.RunSQL(FUNCTION, "DROP FUNCTION admissions_fact_status(uuid, integer);"),
    ]
