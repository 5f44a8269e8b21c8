-- The write path's slot functions: the slot's lock, its facts, and opening it.
--
-- A slot is (scope, subject, exclusion group or else predicate): the facts
-- that can contradict each other. Its *name* (the group or the predicate) is
-- decided in Python by the pure memories.core.decisions.Vocabulary.slot_name
-- and passed in; from here on the slot's lock is computed only in this file.


-- The id of a slot's transaction-scoped advisory lock. Every writer to a slot
-- takes pg_advisory_xact_lock(claimgraph_slot_lock_id(...)): claimgraph_open_slot
-- below and memories.store.slots (one slot, or many in lock-id order). IMMUTABLE and a
-- bare expression, so PostgreSQL inlines it into each caller's statement.
CREATE OR REPLACE FUNCTION claimgraph_slot_lock_id(
    p_scope_id bigint, p_subject_id bigint, p_slot_name text
) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended(
        'claimgraph:slot:' || p_scope_id::text || ':' || p_subject_id::text || ':' || p_slot_name,
        0)
$$;


-- Which standing facts can matter to an assertion (see memories.core.decisions.decide),
-- the one statement of it. Narrower than the whole slot on purpose: a busy
-- 'many' slot can hold hundreds of live values, and only a 'one' predicate or
-- a low-trust writer (the revenant rule) needs to see the other values
-- (p_all_values, decided by memories.write.actions._slot_read_arguments).
-- candidate: a system fact whose latest verdict is not admitted (no row in
-- memories_admittedfact, which the admissions app's record trigger keeps):
-- a steward's write is never held up by one (decisions.decide, rule 3).
-- Dropped first: CREATE OR REPLACE cannot change a function's columns.
DROP FUNCTION IF EXISTS claimgraph_slot_facts(
    bigint, bigint, text, bigint, bigint, text, text, boolean, bigint[]);
CREATE FUNCTION claimgraph_slot_facts(
    p_scope_id bigint, p_subject_id bigint, p_bucket text, p_author_id bigint,
    p_predicate_id bigint, p_object_kind text, p_object_key text,
    p_all_values boolean, p_group_ids bigint[]
) RETURNS TABLE (
    id uuid, predicate_id bigint, object_kind varchar, object_key text, epistemic varchar,
    source_type_id bigint, confidence double precision, t_valid timestamptz,
    t_invalid timestamptz, evidence jsonb, candidate boolean
) LANGUAGE sql STABLE AS $$
    SELECT f.id, f.predicate_id, f.object_kind, f.object_key, f.epistemic, f.source_type_id,
           f.confidence, f.t_valid, f.t_invalid, f.evidence,
           f.bucket = 'system' AND NOT EXISTS (
               SELECT 1 FROM memories_admittedfact a
                WHERE a.scope_id = f.scope_id AND a.fact_id = f.id)
      FROM memories_fact f
     WHERE f.scope_id = p_scope_id AND f.subject_id = p_subject_id AND f.bucket = p_bucket
       AND (p_author_id IS NULL OR f.author_id = p_author_id)
       AND (
             -- the incoming value, live or not: duplicates and buried values
             (f.predicate_id = p_predicate_id
              AND f.object_kind = p_object_kind AND f.object_key = p_object_key)
             -- every live value: a 'one' predicate, or a low-trust writer
          OR (p_all_values AND f.predicate_id = p_predicate_id AND f.t_invalid IS NULL)
             -- the exclusion group's live facts with the incoming value
          OR (f.predicate_id = ANY (p_group_ids)
              AND f.object_kind = p_object_kind AND f.object_key = p_object_key
              AND f.t_invalid IS NULL)
       )
     -- candidates and superseded facts are listed (and audited) by recorded time
     ORDER BY f.recorded_at, f.id
$$;


-- An entity of a scope by its key, else by an alias key (the earliest such
-- entity), else by its look: the earliest entity whose name or an alias has
-- the name's confusable skeleton p_skeleton (UTS #39, computed in Python by
-- memories.core.normalize.name_skeleton), else -- with p_create -- a new one
-- named p_name: "looked up by name or alias, created on first mention" (SPEC
-- §1), with look-alike spellings taken as the entity they look like (issue
-- 29), the one statement of it, for the write path (claimgraph_open_slot
-- below) and every other caller (memories.store.lookups). An exact name wins
-- over an alias, and both over a look, so the answer is deterministic when
-- one entity's name is another's alias. merged_into is the entity it answers
-- as while a steward's merge of it is in force; looked_alike is true when
-- the entity was found by its look only, which the write reports.
--
-- A first mention takes a transaction-scoped advisory lock on the scope and
-- skeleton and then looks again, so two writers naming look-alike new
-- entities at once end with one: the second waits for the first to commit
-- and finds its entity. ON CONFLICT DO NOTHING still yields to a concurrent
-- inserter of the same key that took no such lock (the import takes it too).
DROP FUNCTION IF EXISTS claimgraph_entity(bigint, text, text, boolean);
DROP FUNCTION IF EXISTS claimgraph_entity(bigint, text, text, text, boolean);
CREATE FUNCTION claimgraph_entity(
    p_scope_id bigint, p_name text, p_key text, p_skeleton text, p_create boolean
) RETURNS TABLE (
    id bigint, scope_id bigint, name varchar, key varchar, type varchar,
    aliases varchar[], alias_keys varchar[], skeleton text, alias_skeletons text[],
    created_at timestamptz, merged_into bigint, looked_alike boolean
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    FOR pass IN 1..2 LOOP
        RETURN QUERY
            SELECT e.id, e.scope_id, e.name, e.key, e.type, e.aliases, e.alias_keys,
                   e.skeleton, e.alias_skeletons, e.created_at,
                   (SELECT m.into_id FROM claimgraph_merge_in_force(e.scope_id, e.id) AS m),
                   false
              FROM memories_entity e
             WHERE e.scope_id = p_scope_id AND e.key = p_key;
        IF FOUND THEN
            RETURN;
        END IF;
        -- MATERIALIZED: with the LIMIT pulled into it, PostgreSQL would walk the
        -- primary key in id order through every entity when no alias matches
        -- (the usual case: a new subject) instead of asking the alias index.
        RETURN QUERY
            WITH named AS MATERIALIZED (
                SELECT e.id FROM memories_entity e
                 WHERE e.scope_id = p_scope_id AND e.alias_keys @> ARRAY[p_key]::varchar[]
            )
            SELECT e.id, e.scope_id, e.name, e.key, e.type, e.aliases, e.alias_keys,
                   e.skeleton, e.alias_skeletons, e.created_at,
                   (SELECT m.into_id FROM claimgraph_merge_in_force(e.scope_id, e.id) AS m),
                   false
              FROM memories_entity e
             WHERE e.scope_id = p_scope_id AND e.id = (SELECT min(n.id) FROM named n);
        IF FOUND THEN
            RETURN;
        END IF;
        -- The same for the look: a name with the same skeleton (its own index,
        -- per scope), then an alias with it (the GIN index); the earliest.
        RETURN QUERY
            WITH looks AS MATERIALIZED (
                SELECT e.id FROM memories_entity e
                 WHERE e.scope_id = p_scope_id AND p_skeleton <> '' AND e.skeleton = p_skeleton
            )
            SELECT e.id, e.scope_id, e.name, e.key, e.type, e.aliases, e.alias_keys,
                   e.skeleton, e.alias_skeletons, e.created_at,
                   (SELECT m.into_id FROM claimgraph_merge_in_force(e.scope_id, e.id) AS m),
                   true
              FROM memories_entity e
             WHERE e.scope_id = p_scope_id AND e.id = (SELECT min(l.id) FROM looks l);
        IF FOUND THEN
            RETURN;
        END IF;
        RETURN QUERY
            WITH looks AS MATERIALIZED (
                SELECT e.id FROM memories_entity e
                 WHERE e.scope_id = p_scope_id AND p_skeleton <> ''
                   AND e.alias_skeletons @> ARRAY[p_skeleton]::text[]
            )
            SELECT e.id, e.scope_id, e.name, e.key, e.type, e.aliases, e.alias_keys,
                   e.skeleton, e.alias_skeletons, e.created_at,
                   (SELECT m.into_id FROM claimgraph_merge_in_force(e.scope_id, e.id) AS m),
                   true
              FROM memories_entity e
             WHERE e.scope_id = p_scope_id AND e.id = (SELECT min(l.id) FROM looks l);
        IF FOUND OR NOT p_create THEN
            RETURN;
        END IF;
        EXIT WHEN pass = 2;
        PERFORM pg_advisory_xact_lock(claimgraph_entity_lock_id(p_scope_id, p_skeleton));
    END LOOP;
    INSERT INTO memories_entity AS e
           (scope_id, name, key, type, aliases, alias_keys, skeleton, alias_skeletons,
            created_at)
         VALUES (p_scope_id, p_name, p_key, '', '{}', '{}', p_skeleton, '{}', now())
    ON CONFLICT ON CONSTRAINT entity_unique_key_in_scope DO NOTHING;
    RETURN QUERY
        SELECT e.id, e.scope_id, e.name, e.key, e.type, e.aliases, e.alias_keys,
               e.skeleton, e.alias_skeletons, e.created_at,
               (SELECT m.into_id FROM claimgraph_merge_in_force(e.scope_id, e.id) AS m),
               false
          FROM memories_entity e
         WHERE e.scope_id = p_scope_id AND e.key = p_key;
END
$$;


-- The lock a first mention of a name takes (claimgraph_entity above, and the
-- import, memories.write.ingest): one per scope and skeleton.
CREATE OR REPLACE FUNCTION claimgraph_entity_lock_id(
    p_scope_id bigint, p_skeleton text
) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT hashtextextended('claimgraph:entity:' || p_scope_id::text || ':' || p_skeleton, 0)
$$;


-- An entity a write is about to name (as its subject or its object), held
-- against merges: claimgraph_entity, then -- while no merge of it is in force
-- -- its own lock, shared, and the merge looked up again in a fresh snapshot.
-- A merge (memories.write.merges) takes that lock exclusively before it reads
-- the facts to move, so a write that found the entity unmerged either commits
-- before the merge reads them (and its fact moves with the rest) or waits for
-- the merge and then answers as the survivor (merged_into set): no fact is
-- ever left naming an entity merged away. The one statement of it, for the
-- slot's subject (claimgraph_open_slot below) and every other entity a write
-- names (memories.store.lookups.hold_entity). Every writer holds its entities
-- before it takes a slot lock, as a merge takes the entity's lock before the
-- slots', so the two never wait for each other in a cycle.
CREATE OR REPLACE FUNCTION claimgraph_entity_held(
    p_scope_id bigint, p_name text, p_key text, p_skeleton text
) RETURNS TABLE (
    id bigint, scope_id bigint, name varchar, key varchar, type varchar,
    aliases varchar[], alias_keys varchar[], skeleton text, alias_skeletons text[],
    created_at timestamptz, merged_into bigint, looked_alike boolean
) LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    held bigint;
BEGIN
    SELECT e.id, e.scope_id, e.name, e.key, e.type, e.aliases, e.alias_keys, e.skeleton,
           e.alias_skeletons, e.created_at, e.merged_into, e.looked_alike
      INTO id, scope_id, name, key, type, aliases, alias_keys, skeleton, alias_skeletons,
           created_at, merged_into, looked_alike
      FROM claimgraph_entity(p_scope_id, p_name, p_key, p_skeleton, true) AS e;
    held := id;
    IF held IS NOT NULL AND merged_into IS NULL THEN
        PERFORM pg_advisory_xact_lock_shared(claimgraph_slot_lock_id(p_scope_id, held, ''));
        SELECT m.into_id INTO merged_into FROM claimgraph_merge_in_force(p_scope_id, held) AS m;
    END IF;
    RETURN NEXT;
END
$$;


-- Opening a slot in one round trip, for every assertion
-- (memories.write.actions._open_slot): authorize the writer, find the subject
-- (creating it on first mention), take the slot's lock, then read the slot's
-- facts that can matter. Inside a VOLATILE PL/pgSQL function each statement
-- takes a fresh snapshot, so the read that follows the lock sees everything
-- the previous holder of the lock committed, exactly as separate statements
-- would. A subject merged into another comes back with merged_into set and
-- no slot lock taken: its slot is the other entity's, which the caller locks;
-- so does an assertion whose object is an entity (p_object_key null), whose
-- caller holds the object (claimgraph_entity_held) before it locks the slot.
DROP FUNCTION IF EXISTS claimgraph_open_slot(
    bigint, text, text, text, text, bigint, bigint, text, text, boolean, bigint[]);
-- Earlier return types and argument lists (the skeleton, the source types each
-- role may claim) are dropped first.
DROP FUNCTION IF EXISTS claimgraph_open_slot(
    bigint, text, text, text, text, text, bigint, bigint, text, text, boolean, bigint[]);
DROP FUNCTION IF EXISTS claimgraph_open_slot(
    bigint, text, text, text, text, text, text, bigint, bigint, text, text, boolean, bigint[]);
CREATE FUNCTION claimgraph_open_slot(
    p_user_id bigint, p_scope_name text, p_subject_name text, p_subject_key text,
    p_subject_skeleton text, p_slot_name text, p_bucket text, p_author_id bigint, p_predicate_id bigint,
    p_object_kind text, p_object_key text, p_all_values boolean, p_group_ids bigint[]
) RETURNS TABLE (
    scope_id bigint, scope_name varchar, scope_description text, scope_created_at timestamptz,
    scope_member_source_types varchar[], scope_steward_source_types varchar[],
    entity_id bigint, entity_scope_id bigint, entity_name varchar, entity_key varchar,
    entity_type varchar, entity_aliases varchar[], entity_alias_keys varchar[],
    entity_skeleton text, entity_alias_skeletons text[], entity_created_at timestamptz,
    merged_into bigint, looked_alike boolean, standing jsonb
) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- Who may WRITE a scope, its common case: a member. Nothing comes back
    -- for anyone else, and the caller then asks memories.store.lookups.writable_scope,
    -- the whole rule (a member, or a steward of the scope who is not one).
    -- This is not who may READ a fact: that is Fact.objects.readable_by.
    SELECT s.id, s.name, s.description, s.created_at, s.member_source_types,
           s.steward_source_types
      INTO scope_id, scope_name, scope_description, scope_created_at,
           scope_member_source_types, scope_steward_source_types
      FROM memories_scope s
      JOIN memories_scope_members sm ON sm.scope_id = s.id AND sm.user_id = p_user_id
     WHERE s.name = p_scope_name;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT e.id, e.scope_id, e.name, e.key, e.type, e.aliases, e.alias_keys, e.skeleton,
           e.alias_skeletons, e.created_at, e.merged_into, e.looked_alike
      INTO entity_id, entity_scope_id, entity_name, entity_key, entity_type, entity_aliases,
           entity_alias_keys, entity_skeleton, entity_alias_skeletons, entity_created_at,
           merged_into, looked_alike
      FROM claimgraph_entity_held(scope_id, p_subject_name, p_subject_key,
                                  p_subject_skeleton) AS e;
    -- The subject is held against merges (claimgraph_entity_held above); an
    -- entity object must be held before the slot's lock too, so a write
    -- naming one comes here with p_object_key null and locks the slot itself.
    IF merged_into IS NULL AND p_object_key IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(claimgraph_slot_lock_id(scope_id, entity_id, p_slot_name));
        SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]'::jsonb) INTO standing
          FROM claimgraph_slot_facts(
               scope_id, entity_id, p_bucket, p_author_id, p_predicate_id,
               p_object_kind, p_object_key, p_all_values, p_group_ids) t;
    END IF;
    RETURN NEXT;
END
$$;
