"""A fact's subject and object entity are in the fact's scope, held by the database.

Composite foreign keys (issue 29 §6): the fact's (subject, scope) and
(object_ref, scope) must be an entity's (id, scope), so no writer (and no
admin edit moving an entity to another scope) can leave a fact on a subject
of another scope. The entity table gains the unique (id, scope_id) a foreign
key needs; it is paid by entity inserts only, which are few beside the
facts'. A null object_ref is not checked (MATCH SIMPLE). Added NOT VALID and
then validated, so the check of the rows already there does not hold a lock
that blocks writers. docs/scale-out.md plans these keys on (scope, id).
"""

from django.db import migrations

FACT_ENTITIES_IN_ITS_SCOPE = """
ALTER TABLE memories_entity ADD CONSTRAINT entity_id_scope_key UNIQUE (id, scope_id);
ALTER TABLE memories_fact ADD CONSTRAINT fact_subject_in_its_scope
    FOREIGN KEY (subject_id, scope_id) REFERENCES memories_entity (id, scope_id) NOT VALID;
ALTER TABLE memories_fact ADD CONSTRAINT fact_object_ref_in_its_scope
    FOREIGN KEY (object_ref_id, scope_id) REFERENCES memories_entity (id, scope_id) NOT VALID;
ALTER TABLE memories_fact VALIDATE CONSTRAINT fact_subject_in_its_scope;
ALTER TABLE memories_fact VALIDATE CONSTRAINT fact_object_ref_in_its_scope;
"""

DROP_FACT_ENTITIES_IN_ITS_SCOPE = """
ALTER TABLE memories_fact DROP CONSTRAINT fact_object_ref_in_its_scope;
ALTER TABLE memories_fact DROP CONSTRAINT fact_subject_in_its_scope;
ALTER TABLE memories_entity DROP CONSTRAINT entity_id_scope_key;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0022_entity_in_one_statement")]

    operations = [migrations.RunSQL(FACT_ENTITIES_IN_ITS_SCOPE, DROP_FACT_ENTITIES_IN_ITS_SCOPE)]
