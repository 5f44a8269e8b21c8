-- When an entity merge is in force (SPEC §12): the one statement of the rule.
--
-- Merge records are only ever inserted (memories.write.merges). A record is in force
-- while it is not itself an undo record and no later record undoes it. An
-- entity with a merge in force answers as the entity it was merged into
-- (into_id), so new writes naming either spelling land on one slot.
--
-- merge_entities refuses to merge an entity twice, so at most one record per
-- entity is in force; the earliest by (at, id) is chosen all the same, so the
-- answer never depends on the order the rows are read in.
--
-- Everyone asks here: claimgraph_open_slot (slots.sql) and the entity lookup
-- (memories.store.lookups) for the write path, the import (memories.write.ingest), and
-- the ORM through EntityMerge.objects.in_force() (memories.store.models), each as
--     (SELECT m.into_id FROM claimgraph_merge_in_force(<scope id>, <entity id>) AS m)
--
-- A merge never crosses scopes, and the scope comes first: every read here
-- names it, so a store distributed by scope answers from one shard
-- (docs/scale-out.md).
--
-- A set-returning SQL function, read in a FROM clause, because PostgreSQL
-- then inlines its query into the caller's: the write path pays nothing for
-- the rule having a name. (A scalar function with a query inside is never
-- inlined, and a PL/pgSQL one is a call on every row.)
-- (Until memories 0016 it took the entity alone.)
DROP FUNCTION IF EXISTS claimgraph_merge_in_force(bigint);
CREATE OR REPLACE FUNCTION claimgraph_merge_in_force(p_scope_id bigint, p_entity_id bigint)
RETURNS TABLE (id bigint, into_id bigint)
LANGUAGE sql STABLE ROWS 1 AS $$
    SELECT m.id, m.into_id
      FROM memories_entitymerge m
     WHERE m.scope_id = p_scope_id
       AND m.entity_id = p_entity_id
       AND m.undoes_id IS NULL
       AND NOT EXISTS (
           SELECT 1 FROM memories_entitymerge u
            WHERE u.scope_id = m.scope_id AND u.undoes_id = m.id
       )
     ORDER BY m.at, m.id
     LIMIT 1
$$;
