"""Which system facts a steward has admitted, as the write path must know it (issue 29 item 8).

The write path's decision weighs a candidate (a system fact no steward has
admitted) differently from an admitted fact when a steward writes
(``memories.core.decisions``, rule 3), and it decides inside the slot's
lock, in the SQL that reads the slot (``claimgraph_slot_facts``). The
verdicts themselves are the admissions app's records, a layer above this
one, which memories must not read. So this table, which memories owns and
reads, holds the one fact the write path needs of them: the set of facts
whose latest verdict is ``admitted``. The admissions app's record trigger
keeps it in the inserting transaction, as it keeps its own derived state
(``admissions/sql/state.sql``; ``admissions_rebuild_state()`` rebuilds it);
no Python writes it.

Not a flag on the fact (SPEC §6: a status is a record, never a flag): the
table is derived from the records, cannot be set by a fact's author, and a
suspended fact is still here (its latest verdict admits it; only a
steward's refutation or a new verdict changes what it weighs).
"""

from django.db import models

from memories.store.models.facts import Fact
from memories.store.models.scopes import Scope


class AdmittedFact(models.Model):
    """A system fact whose latest admission record, by ``(inserted_at, id)``, is ``admitted``."""

    fact = models.OneToOneField(
        Fact, primary_key=True, on_delete=models.DO_NOTHING, related_name="+"
    )
    scope = models.ForeignKey(Scope, on_delete=models.DO_NOTHING, related_name="+")

    def __str__(self) -> str:
        return f"{self.fact_id}: admitted"
