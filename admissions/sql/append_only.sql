-- Admission records are append-only (SPEC §6): TRUNCATE is refused.
--
-- UPDATE and DELETE are refused by a row trigger that django-pgtrigger keeps
-- (admissions.models.Record's Meta). pgtrigger has no statement-level
-- TRUNCATE protection, so that one is written here.
--
-- The one way past it is a session setting, claimgraph.allow_truncate = 'on',
-- which exists for the test runner alone: Django empties the test database
-- between transactional tests with one TRUNCATE over every table, and the
-- tests set it on the *test* database only (tests/conftest.py). Production
-- never sets it; since any session could, the real guard against a hostile or
-- careless SQL user is privileges (docs/admissions.md, "Running as a least-
-- privileged role").

CREATE OR REPLACE FUNCTION admissions_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The test runner's flush is the only caller meant to get past this;
    -- everything else is refused.
    IF current_setting('claimgraph.allow_truncate', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'admission records are append-only: TRUNCATE % is refused', TG_TABLE_NAME;
END;
$$;

CREATE OR REPLACE TRIGGER admissions_record_refuse_truncate
    BEFORE TRUNCATE ON admissions_record
    FOR EACH STATEMENT EXECUTE FUNCTION admissions_refuse_truncate();
