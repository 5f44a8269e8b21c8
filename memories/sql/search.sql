-- Search (issue 31 §1): the one statement of what an entity's searchable names are.
--
-- An entity's names are its name and its aliases, as one text. The entity
-- table keeps two columns generated from it by PostgreSQL (memories 0027):
-- search_names (pg_trgm's near-misses and typos, GIN gin_trgm_ops) and
-- search_vector (full-text, GIN). A rename or a new alias regenerates both
-- in the UPDATE that makes it, so no trigger and no writer keeps them.
--
-- array_to_string is only STABLE (it calls the element type's output
-- function), which a generated column may not use; for text it cannot vary,
-- so this wrapper says IMMUTABLE, as PostgreSQL's own documentation
-- suggests for such cases.
CREATE OR REPLACE FUNCTION claimgraph_entity_names(p_name text, p_aliases text[])
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_to_string(array_prepend(p_name, coalesce(p_aliases, '{}')), ' ')
$$;
