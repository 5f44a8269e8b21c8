"""``admissions_fact_state`` as one statement instead of three.

The first version (0004) read the verdict and A into variables before its
query; each statement in a function call has its own overhead, and this is
the hottest read of the app. Same result, one snapshot, one cached plan.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION admissions_fact_state(p_fact uuid, p_scope integer)
RETURNS TABLE (
    admitted integer,
    id uuid,
    role varchar,
    verdict varchar,
    author_id integer,
    inserted_at timestamptz,
    earlier bigint
)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    -- PL/pgSQL, not SQL: a SQL function like this one would be inlined into
    -- the caller's query and so planned again on every call.
    RETURN QUERY
    WITH standing AS (
        SELECT v.record_id, v.verdict, v.decided_at
        FROM admissions_factverdict v
        WHERE v.fact_id = p_fact
    ),
    rows AS (
        SELECT s.record_id AS id, 'admission'::varchar AS role, s.verdict,
               0 AS author_id, s.decided_at AS inserted_at, NULL::bigint AS earlier
        FROM standing s
        UNION ALL
        SELECT o.challenge_id, 'challenge'::varchar, NULL::varchar, o.author_id, o.inserted_at,
            -- Rule 6 matters only for an admitted fact, and only the earliest
            -- open evidenced challenge of each account on it is ranked.
            CASE WHEN (SELECT s.verdict FROM standing s) = 'admitted' AND NOT EXISTS (
                SELECT 1 FROM admissions_openchallenge e
                WHERE e.fact_id = p_fact AND e.author_id = o.author_id
                  AND (e.inserted_at, e.challenge_id) < (o.inserted_at, o.challenge_id)
            ) THEN (
                SELECT count(DISTINCT x.fact_id)
                FROM admissions_openchallenge x
                JOIN admissions_factverdict xv
                  ON xv.fact_id = x.fact_id AND xv.verdict = 'admitted'
                WHERE x.scope_id = p_scope
                  AND x.author_id = o.author_id
                  AND (x.inserted_at, x.challenge_id) < (o.inserted_at, o.challenge_id)
                  AND x.fact_id <> p_fact
            ) END
        FROM admissions_openchallenge o
        WHERE o.fact_id = p_fact
    )
    SELECT tally.admitted, r.id, r.role, r.verdict, r.author_id, r.inserted_at, r.earlier
    FROM (
        SELECT coalesce(
            (SELECT t.admitted FROM admissions_scopetally t WHERE t.scope_id = p_scope), 0
        )::integer AS admitted
    ) AS tally
    LEFT JOIN rows r ON true;
END;
$$;
"""

class Migration(migrations.Migration):
    dependencies = [("admissions", "0004_fact_state_function")]

    operations = [migrations.RunSQL(FUNCTION, migrations.RunSQL.noop)]
