-- The derived state PostgreSQL keeps from the admission records (SPEC §6).
--
-- FactVerdict (each fact's latest verdict, rule 1), OpenChallenge (evidenced
-- challenges no refutation names, rules 3 and 4) and ScopeTally (A, the
-- scope's count of admitted facts, rule 6) are maintained by an AFTER INSERT
-- trigger in the inserting transaction, so a COPY or a psql INSERT keeps them
-- as right as the actions do; Python never writes them.
-- admissions_rebuild_state() recomputes them from the records, and
-- admissions_challenge_rank ranks each account's challenges for the flood cap.
-- The pure fold these must agree with is admissions.status; the tests hold
-- the two to the same answers on random histories.


CREATE OR REPLACE FUNCTION admissions_record_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    standing admissions_factverdict%ROWTYPE;
    delta integer := 0;
BEGIN
    IF NEW.role = 'admission' THEN
        -- Lock the scope's tally row *before* reading the fact's standing
        -- verdict: two verdicts committed at once in one scope then apply
        -- one after the other, each reading what the previous committed
        -- (READ COMMITTED gives every statement below a fresh snapshot).
        INSERT INTO admissions_scopetally (scope_id, admitted)
            VALUES (NEW.scope_id, 0) ON CONFLICT (scope_id) DO NOTHING;
        PERFORM 1 FROM admissions_scopetally WHERE scope_id = NEW.scope_id FOR UPDATE;

        -- Every statement here names the record's scope as well as its fact
        -- (a fact's records, verdict and challenges share its scope), so a
        -- store distributed by scope runs each on the fact's shard
        -- (docs/scale-out.md).
        SELECT * INTO standing FROM admissions_factverdict
            WHERE scope_id = NEW.scope_id AND fact_id = NEW.fact_id;
        IF NOT FOUND THEN
            INSERT INTO admissions_factverdict (fact_id, scope_id, verdict, record_id, decided_at)
                VALUES (NEW.fact_id, NEW.scope_id, NEW.verdict, NEW.id, NEW.inserted_at);
            delta := (NEW.verdict = 'admitted')::integer;
        -- Rule 1 compares (inserted_at, id), never arrival: a backdated
        -- verdict that is not the latest changes nothing.
        ELSIF (NEW.inserted_at, NEW.id) > (standing.decided_at, standing.record_id) THEN
            UPDATE admissions_factverdict
                SET verdict = NEW.verdict, record_id = NEW.id, decided_at = NEW.inserted_at
                WHERE scope_id = NEW.scope_id AND fact_id = NEW.fact_id;
            delta := (NEW.verdict = 'admitted')::integer
                   - (standing.verdict = 'admitted')::integer;
        END IF;
        IF delta <> 0 THEN
            UPDATE admissions_scopetally SET admitted = admitted + delta
                WHERE scope_id = NEW.scope_id;
        END IF;
    ELSIF NEW.role = 'challenge' THEN
        -- The immediate foreign key makes a refutation impossible before its
        -- challenge; the NOT EXISTS keeps this right even if it were not.
        IF NEW.evidence IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM admissions_record
            WHERE scope_id = NEW.scope_id AND role = 'refutation' AND challenge_id = NEW.id
        ) THEN
            INSERT INTO admissions_openchallenge
                (challenge_id, scope_id, fact_id, author_id, inserted_at)
                VALUES (NEW.id, NEW.scope_id, NEW.fact_id, NEW.author_id, NEW.inserted_at);
        END IF;
    ELSE
        -- Rule 4: set membership. A second refutation finds nothing to close.
        DELETE FROM admissions_openchallenge
            WHERE scope_id = NEW.scope_id AND challenge_id = NEW.challenge_id;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER admissions_record_maintain_state
    AFTER INSERT ON admissions_record
    FOR EACH ROW EXECUTE FUNCTION admissions_record_inserted();


-- The derived state recomputed from the records alone (an operator's repair).
CREATE OR REPLACE FUNCTION admissions_rebuild_state() RETURNS void
LANGUAGE sql AS $$
    LOCK TABLE admissions_record IN SHARE MODE;
    DELETE FROM admissions_openchallenge;
    DELETE FROM admissions_factverdict;
    DELETE FROM admissions_scopetally;
    INSERT INTO admissions_factverdict (fact_id, scope_id, verdict, record_id, decided_at)
        SELECT DISTINCT ON (fact_id) fact_id, scope_id, verdict, id, inserted_at
        FROM admissions_record
        WHERE role = 'admission'
        ORDER BY fact_id, inserted_at DESC, id DESC;
    INSERT INTO admissions_scopetally (scope_id, admitted)
        SELECT scope_id, count(*) FILTER (WHERE verdict = 'admitted')
        FROM admissions_factverdict
        GROUP BY scope_id;
    INSERT INTO admissions_openchallenge (challenge_id, scope_id, fact_id, author_id, inserted_at)
        SELECT c.id, c.scope_id, c.fact_id, c.author_id, c.inserted_at
        FROM admissions_record c
        WHERE c.role = 'challenge' AND c.evidence IS NOT NULL
          AND NOT EXISTS (
              SELECT 1 FROM admissions_record r
              WHERE r.role = 'refutation' AND r.challenge_id = c.id
          );
$$;


-- Rule 6's ranking (the ChallengeRank model reads it). Each account's open
-- evidenced challenges against admitted facts, one per fact (the earliest by
-- (inserted_at, id): several challenges by one account on one fact count
-- once), numbered in that order within the scope. A challenge takes effect
-- when position <= ceil(share% * admitted). scope_id leads both the
-- DISTINCT ON and the PARTITION BY so a filter on it is pushed down into both.
-- Dropped and created rather than replaced: CREATE OR REPLACE VIEW cannot
-- change or remove a column, and nothing in the database depends on the view.
DROP VIEW IF EXISTS admissions_challenge_rank;
CREATE VIEW admissions_challenge_rank AS
SELECT
    challenge_id, scope_id, fact_id, author_id, inserted_at,
    row_number() OVER (
        PARTITION BY scope_id, author_id ORDER BY inserted_at, challenge_id
    ) AS position,
    admitted
FROM (
    SELECT DISTINCT ON (o.scope_id, o.author_id, o.fact_id)
        o.challenge_id, o.scope_id, o.fact_id, o.author_id, o.inserted_at, t.admitted
    FROM admissions_openchallenge o
    JOIN admissions_factverdict v
      ON v.scope_id = o.scope_id AND v.fact_id = o.fact_id AND v.verdict = 'admitted'
    JOIN admissions_scopetally t ON t.scope_id = o.scope_id
    ORDER BY o.scope_id, o.author_id, o.fact_id, o.inserted_at, o.challenge_id
) AS earliest;
