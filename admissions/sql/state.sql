-- The derived state PostgreSQL keeps from the admission records (SPEC §6).
--
-- FactVerdict (each fact's latest verdict, rule 1; and, for the write path a
-- layer below, memories' AdmittedFact: the facts it admits), OpenChallenge (every
-- challenge no refutation names, rule 4, flagged ``evidenced`` for rule 3 and
-- ``fact_admitted`` for rule 2: the open challenges are read from it, never
-- found by walking past the refuted ones in the records) and ScopeTally (A, the
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
        -- delta is not 0 exactly when the fact became admitted or stopped
        -- being admitted: its open challenges carry that (rule 2), so the
        -- rank view reads them alone.
        IF delta <> 0 THEN
            UPDATE admissions_scopetally SET admitted = admitted + delta
                WHERE scope_id = NEW.scope_id;
            UPDATE admissions_openchallenge SET fact_admitted = delta > 0
                WHERE scope_id = NEW.scope_id AND fact_id = NEW.fact_id;
            -- The one thing the write path below us needs of the verdicts
            -- (memories.store.models.admitted): whether the fact is admitted.
            IF delta > 0 THEN
                INSERT INTO memories_admittedfact (fact_id, scope_id)
                    VALUES (NEW.fact_id, NEW.scope_id) ON CONFLICT (fact_id) DO NOTHING;
            ELSE
                DELETE FROM memories_admittedfact
                    WHERE scope_id = NEW.scope_id AND fact_id = NEW.fact_id;
            END IF;
        END IF;
    ELSIF NEW.role = 'challenge' THEN
        -- The tally row locked as a verdict locks it, but shared: a verdict
        -- on the fact committed at the same time then applies before or
        -- after this challenge, never beside it, so fact_admitted below
        -- reads the verdict as it stands (or the verdict's UPDATE above
        -- finds this row). Challenges do not wait for one another.
        INSERT INTO admissions_scopetally (scope_id, admitted)
            VALUES (NEW.scope_id, 0) ON CONFLICT (scope_id) DO NOTHING;
        PERFORM 1 FROM admissions_scopetally WHERE scope_id = NEW.scope_id FOR SHARE;
        -- Every open challenge, evidenced or not (rule 3 reads the flag).
        -- The immediate foreign key makes a refutation impossible before its
        -- challenge; the NOT EXISTS keeps this right even if it were not.
        IF NOT EXISTS (
            SELECT 1 FROM admissions_record
            WHERE scope_id = NEW.scope_id AND role = 'refutation' AND challenge_id = NEW.id
        ) THEN
            INSERT INTO admissions_openchallenge
                (challenge_id, scope_id, fact_id, author_id, inserted_at, evidenced,
                 fact_admitted)
                VALUES (NEW.id, NEW.scope_id, NEW.fact_id, NEW.author_id, NEW.inserted_at,
                        NEW.evidence IS NOT NULL,
                        EXISTS (
                            SELECT 1 FROM admissions_factverdict
                            WHERE scope_id = NEW.scope_id AND fact_id = NEW.fact_id
                              AND verdict = 'admitted'
                        ));
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
    DELETE FROM memories_admittedfact;
    INSERT INTO admissions_factverdict (fact_id, scope_id, verdict, record_id, decided_at)
        SELECT DISTINCT ON (fact_id) fact_id, scope_id, verdict, id, inserted_at
        FROM admissions_record
        WHERE role = 'admission'
        ORDER BY fact_id, inserted_at DESC, id DESC;
    INSERT INTO memories_admittedfact (fact_id, scope_id)
        SELECT fact_id, scope_id FROM admissions_factverdict WHERE verdict = 'admitted';
    -- A row for every scope with a verdict or a challenge: the trigger makes
    -- one at the first of either.
    INSERT INTO admissions_scopetally (scope_id, admitted)
        SELECT s.id, (
            SELECT count(*) FROM admissions_factverdict v
            WHERE v.scope_id = s.id AND v.verdict = 'admitted'
        )
        FROM memories_scope s
        WHERE EXISTS (
            SELECT 1 FROM admissions_record r
            WHERE r.scope_id = s.id AND r.role IN ('admission', 'challenge')
        );
    INSERT INTO admissions_openchallenge
        (challenge_id, scope_id, fact_id, author_id, inserted_at, evidenced, fact_admitted)
        SELECT c.id, c.scope_id, c.fact_id, c.author_id, c.inserted_at, c.evidence IS NOT NULL,
               EXISTS (
                   SELECT 1 FROM admissions_factverdict v
                   WHERE v.fact_id = c.fact_id AND v.verdict = 'admitted'
               )
        FROM admissions_record c
        WHERE c.role = 'challenge'
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
-- It reads the open challenges alone (their fact_admitted flag, kept by the
-- trigger, stands for the fact's verdict), through the partial index of the
-- ones it ranks: its cost follows them, not the verdicts of the store.
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
    JOIN admissions_scopetally t ON t.scope_id = o.scope_id
    WHERE o.evidenced AND o.fact_admitted
    ORDER BY o.scope_id, o.author_id, o.fact_id, o.inserted_at, o.challenge_id
) AS earliest;
