-- One fact's admission status read from the database (admissions.selectors).
--
-- Database functions rather than queries sent from Python: Django binds
-- parameters on the client, so PostgreSQL would plan these queries afresh on
-- every call, and planning them costs more than running them. PL/pgSQL keeps
-- the plan of the query inside for the life of the session (and not SQL: a
-- SQL function like these would be inlined into the caller's query and so
-- planned again each time). They also give operators the same read from psql:
--     SELECT * FROM admissions_fact_status('<fact id>', <scope id>);
--
-- Every table read is a per-scope one and every read names p_scope, so a
-- store distributed by scope runs the whole function on the fact's shard
-- (docs/scale-out.md).
--
-- Both feed the pure fold's judge (admissions.status.judge) the numbers of
-- rule 6 computed here; the tests hold them to the fold on random histories.


-- Every record of the fact, for the explanation of its status.
--
-- One row per record (or a single row of nulls when it has none), each
-- carrying A for the scope. ``earlier`` is set on each account's earliest open
-- evidenced challenge on the fact: how many other admitted facts that account
-- challenges, openly and with evidence, ranking before it (rule 6), read by
-- an index range scan over that account's open challenges only.
CREATE OR REPLACE FUNCTION admissions_fact_status(p_fact uuid, p_scope integer)
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
        WHERE o.scope_id = p_scope AND o.fact_id = p_fact
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
              ON v.scope_id = o.scope_id AND v.fact_id = o.fact_id AND v.verdict = 'admitted'
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
        WHERE rec.scope_id = p_scope AND rec.fact_id = p_fact
    ) AS r ON true;
END;
$$;


-- The status alone, from the derived state, whatever the length of the history.
--
-- The latest verdict (admissions_factverdict), the fact's open evidenced
-- challenges (admissions_openchallenge), A, and for each challenger the rank
-- count of rule 6: one row for the verdict (if any) and one per open
-- evidenced challenge, so a fact with a thousand refuted challenges costs
-- what a fact with none does. One statement: each statement in a function
-- call has its own overhead, and this is the hottest read of the app.
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
    RETURN QUERY
    WITH standing AS (
        SELECT v.record_id, v.verdict, v.decided_at
        FROM admissions_factverdict v
        WHERE v.scope_id = p_scope AND v.fact_id = p_fact
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
                WHERE e.scope_id = p_scope AND e.fact_id = p_fact AND e.author_id = o.author_id
                  AND (e.inserted_at, e.challenge_id) < (o.inserted_at, o.challenge_id)
            ) THEN (
                SELECT count(DISTINCT x.fact_id)
                FROM admissions_openchallenge x
                JOIN admissions_factverdict xv
                  ON xv.scope_id = x.scope_id AND xv.fact_id = x.fact_id AND xv.verdict = 'admitted'
                WHERE x.scope_id = p_scope
                  AND x.author_id = o.author_id
                  AND (x.inserted_at, x.challenge_id) < (o.inserted_at, o.challenge_id)
                  AND x.fact_id <> p_fact
            ) END
        FROM admissions_openchallenge o
        WHERE o.scope_id = p_scope AND o.fact_id = p_fact
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
