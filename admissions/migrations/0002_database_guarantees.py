"""What PostgreSQL itself guarantees about admission records (SPEC §6).

Django can declare CHECKs and row triggers (see ``admissions.models``) but not
composite foreign keys, statement-level TRUNCATE triggers or views, so those
are written here in SQL:

1. A record targets a ``system`` fact of its own scope: a composite foreign key
   ``(fact_id, fact_bucket, scope_id)`` onto a unique ``(id, bucket, scope_id)``
   of ``memories_fact``. That unique constraint is added here, not in a
   memories migration, because only this app needs it; ``id`` alone is already
   unique, so it costs one index and refuses nothing new.
2. A refutation names a challenge against the same fact: a composite foreign
   key ``(challenge_id, fact_id, challenge_role)`` onto the record table's own
   ``(id, fact_id, role)``. Both keys are checked immediately (not deferred),
   so a refutation can only ever be inserted after the challenge it names.
3. TRUNCATE is refused by a statement-level trigger. The one way past it is a
   session setting, ``claimgraph.allow_truncate = 'on'``, which exists for the
   test runner alone: Django empties the test database between transactional
   tests with one TRUNCATE over every table, and the test settings set it on
   the *test* database only (tests/conftest.py). Production never sets it;
   and since any session could, the real guard against a hostile or careless
   SQL user is privileges: see docs/admissions.md ("Running as a least-
   privileged role").
4. The derived state (latest verdict per fact, open evidenced challenges, the
   admitted count per scope) is maintained by an AFTER INSERT trigger, in the
   inserting transaction, so a COPY or a psql INSERT keeps it as right as the
   actions do. ``admissions_rebuild_state()`` recomputes it from the records.
5. ``admissions_challenge_rank`` ranks each account's open evidenced
   challenges against admitted facts for the flood cap (rule 6).
"""

from django.db import migrations

FOREIGN_KEYS = """
ALTER TABLE memories_fact
    ADD CONSTRAINT admissions_fact_id_bucket_scope_key UNIQUE (id, bucket, scope_id);

ALTER TABLE admissions_record
    ADD CONSTRAINT record_fact_is_system_fact_of_scope
    FOREIGN KEY (fact_id, fact_bucket, scope_id)
    REFERENCES memories_fact (id, bucket, scope_id);

ALTER TABLE admissions_record
    ADD CONSTRAINT record_refutes_challenge_of_same_fact
    FOREIGN KEY (challenge_id, fact_id, challenge_role)
    REFERENCES admissions_record (id, fact_id, role);
"""

DROP_FOREIGN_KEYS = """
ALTER TABLE admissions_record DROP CONSTRAINT record_refutes_challenge_of_same_fact;
ALTER TABLE admissions_record DROP CONSTRAINT record_fact_is_system_fact_of_scope;
ALTER TABLE memories_fact DROP CONSTRAINT admissions_fact_id_bucket_scope_key;
"""

TRUNCATE_GUARD = """
CREATE FUNCTION admissions_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The test runner's flush is the only caller meant to get past this
    -- (see the migration's docstring); everything else is refused.
    IF current_setting('claimgraph.allow_truncate', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'admission records are append-only: TRUNCATE % is refused', TG_TABLE_NAME;
END;
$$;

CREATE TRIGGER admissions_record_refuse_truncate
    BEFORE TRUNCATE ON admissions_record
    FOR EACH STATEMENT EXECUTE FUNCTION admissions_refuse_truncate();
"""

DROP_TRUNCATE_GUARD = """
DROP TRIGGER admissions_record_refuse_truncate ON admissions_record;
DROP FUNCTION admissions_refuse_truncate();
"""

DERIVED_STATE = """
CREATE FUNCTION admissions_record_inserted() RETURNS trigger
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

        SELECT * INTO standing FROM admissions_factverdict WHERE fact_id = NEW.fact_id;
        IF NOT FOUND THEN
            INSERT INTO admissions_factverdict (fact_id, scope_id, verdict, record_id, decided_at)
                VALUES (NEW.fact_id, NEW.scope_id, NEW.verdict, NEW.id, NEW.inserted_at);
            delta := (NEW.verdict = 'admitted')::integer;
        -- Rule 1 compares (inserted_at, id), never arrival: a backdated
        -- verdict that is not the latest changes nothing.
        ELSIF (NEW.inserted_at, NEW.id) > (standing.decided_at, standing.record_id) THEN
            UPDATE admissions_factverdict
                SET verdict = NEW.verdict, record_id = NEW.id, decided_at = NEW.inserted_at
                WHERE fact_id = NEW.fact_id;
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
            WHERE role = 'refutation' AND challenge_id = NEW.id
        ) THEN
            INSERT INTO admissions_openchallenge
                (challenge_id, scope_id, fact_id, author_id, inserted_at)
                VALUES (NEW.id, NEW.scope_id, NEW.fact_id, NEW.author_id, NEW.inserted_at);
        END IF;
    ELSE
        -- Rule 4: set membership. A second refutation finds nothing to close.
        DELETE FROM admissions_openchallenge WHERE challenge_id = NEW.challenge_id;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER admissions_record_maintain_state
    AFTER INSERT ON admissions_record
    FOR EACH ROW EXECUTE FUNCTION admissions_record_inserted();

CREATE FUNCTION admissions_rebuild_state() RETURNS void
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

-- Rule 6's ranking. Each account's open evidenced challenges against
-- admitted facts, one per fact (the earliest by (inserted_at, id): several
-- challenges by one account on one fact count once), numbered in that
-- order within the scope. A challenge takes effect when
-- position <= ceil(share% * admitted). scope_id leads both the DISTINCT ON
-- and the PARTITION BY so a filter on it is pushed down into both.
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
    JOIN admissions_factverdict v ON v.fact_id = o.fact_id AND v.verdict = 'admitted'
    JOIN admissions_scopetally t ON t.scope_id = o.scope_id
    ORDER BY o.scope_id, o.author_id, o.fact_id, o.inserted_at, o.challenge_id
) AS earliest;
"""

DROP_DERIVED_STATE = """
DROP VIEW admissions_challenge_rank;
DROP FUNCTION admissions_rebuild_state();
DROP TRIGGER admissions_record_maintain_state ON admissions_record;
DROP FUNCTION admissions_record_inserted();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("admissions", "0001_records"),
        ("memories", "0004_audit_merges_withdrawals"),
    ]

    operations = [
        migrations.RunSQL(FOREIGN_KEYS, DROP_FOREIGN_KEYS),
        migrations.RunSQL(TRUNCATE_GUARD, DROP_TRUNCATE_GUARD),
        migrations.RunSQL(DERIVED_STATE, DROP_DERIVED_STATE),
    ]
