"""One fact's status from the derived state alone, whatever the length of its history.

``admissions_fact_status`` (0003) returns every record of the fact, which the
explanation needs. The status itself needs far less: the latest verdict
(``admissions_factverdict``), the fact's open evidenced challenges
(``admissions_openchallenge``), A, and for each challenger the rank count of
rule 6. This function returns exactly that: one row for the verdict (if any)
and one per open evidenced challenge, so a fact with a thousand refuted
challenges costs what a fact with none does.
"""

from django.db import migrations

FUNCTION = """
CREATE FUNCTION admissions_fact_state(p_fact uuid, p_scope integer)
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
DECLARE
    standing varchar;
    tally integer;
BEGIN
    SELECT v.verdict INTO standing FROM admissions_factverdict v WHERE v.fact_id = p_fact;
    SELECT coalesce(
        (SELECT t.admitted FROM admissions_scopetally t WHERE t.scope_id = p_scope), 0
    ) INTO tally;
    RETURN QUERY
    SELECT tally, v.record_id, 'admission'::varchar, v.verdict, 0, v.decided_at, NULL::bigint
    FROM admissions_factverdict v
    WHERE v.fact_id = p_fact
    UNION ALL
    SELECT tally, o.challenge_id, 'challenge'::varchar, NULL::varchar, o.author_id, o.inserted_at,
        -- Rule 6 matters only for an admitted fact, and only the earliest
        -- open evidenced challenge of each account on it is ranked.
        CASE WHEN standing = 'admitted' AND NOT EXISTS (
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
    WHERE o.fact_id = p_fact;
    IF NOT FOUND THEN
        RETURN QUERY SELECT tally, NULL::uuid, NULL::varchar, NULL::varchar, NULL::integer,
            NULL::timestamptz, NULL::bigint;
    END IF;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("admissions", "0003_fact_status_function")]

    operations = [
        migrations.RunSQL(FUNCTION, "DROP FUNCTION admissions_fact_state(uuid, integer);"),
    ]
