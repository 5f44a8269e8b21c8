"""The vocabulary as the write path sees it: predicates and source types, cached briefly.

``load_vocabulary`` returns the pure ``decisions.Vocabulary`` together with the
model rows the shell needs to write facts.
"""

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.conf import settings

from memories.core.decisions import EPISTEMIC_STRENGTH, PredicateSpec, SourceSpec, Vocabulary
from memories.store.models import Fact, Predicate, SourceType


@dataclass(frozen=True)
class LoadedVocabulary:
    """The pure vocabulary plus the rows the shell needs to write facts."""

    spec: Vocabulary
    predicates: Mapping[str, Predicate]
    sources: Mapping[str, SourceType]

    @cached_property
    def predicate_names(self) -> Mapping[int, str]:
        return {row.pk: name for name, row in self.predicates.items()}

    @cached_property
    def source_names(self) -> Mapping[int, str]:
        return {row.pk: name for name, row in self.sources.items()}

    @cached_property
    def source_ids(self) -> Mapping[str, int]:
        return {name: row.pk for name, row in self.sources.items()}

    def knows(self, data: Mapping[str, Any]) -> bool:
        """Whether the predicate and source type ``data`` names are in this copy."""
        return data.get("predicate") in self.predicates and data.get("source_type") in self.sources


# The epistemic classes, weakest first, and when a writer should choose each
# (SPEC §1): a fixed set, unlike predicates and source types, so it lives in
# code; discovery (api.discovery) serves it with the rest of the vocabulary.
EPISTEMIC_CLASSES: Mapping[str, str] = {
    "observation": "How things are (a version, a dependency, who owns what); the usual class.",
    "preference": "A like or dislike, a stance that may change (prefers, avoids).",
    "commitment": (
        "A decision actually made, which must never be overruled silently: any contradiction"
        " with it is flagged for a human, whatever the sources' trust."
    ),
}
assert tuple(EPISTEMIC_CLASSES) == tuple(sorted(EPISTEMIC_STRENGTH, key=EPISTEMIC_STRENGTH.get))

# The vocabulary is read on every write but edited rarely (in the admin), so
# each process keeps a copy for a few seconds (CLAIMGRAPH_VOCABULARY_CACHE_SECONDS,
# 0 = always read). An admin edit clears this process's copy at once; other
# processes see it when their copy expires. A name missing from the copy
# forces a fresh read, so a new predicate is usable immediately.
_vocabulary_cache: tuple[float, LoadedVocabulary] | None = None


def forget_vocabulary() -> None:
    global _vocabulary_cache
    _vocabulary_cache = None


def load_vocabulary(data: Mapping[str, Any] | None = None) -> LoadedVocabulary:
    global _vocabulary_cache
    lifetime = settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS
    cached = _vocabulary_cache
    if (
        cached is not None
        and time.monotonic() - cached[0] < lifetime
        and (data is None or cached[1].knows(data))
    ):
        return cached[1]
    predicates = {p.name: p for p in Predicate.objects.all()}
    sources = {s.name: s for s in SourceType.objects.all()}
    vocabulary = LoadedVocabulary(
        spec=Vocabulary(
            predicates={
                name: PredicateSpec(
                    name=name,
                    cardinality=p.cardinality,  # type: ignore[arg-type]
                    default_epistemic=p.default_epistemic,
                    policy=p.policy,  # type: ignore[arg-type]
                    exclusion_group=p.exclusion_group,
                    event_like=p.event_like,
                )
                for name, p in predicates.items()
            },
            sources={
                name: SourceSpec(
                    name=name,
                    trust_rank=s.trust_rank,
                    confidence_ceiling=s.confidence_ceiling,
                    decays=s.decays,
                )
                for name, s in sources.items()
            },
        ),
        predicates=predicates,
        sources=sources,
    )
    _vocabulary_cache = (time.monotonic(), vocabulary)
    return vocabulary


def attach_vocabulary(facts: Iterable[Fact]) -> None:
    """Set each fact's predicate and source type from this process's copy of the vocabulary.

    Joining the two tiny vocabulary tables into a fact query costs PostgreSQL
    more to plan than to run; read with ``select_related`` on the other
    relations and attach these. A row newer than the copy is read directly.
    """
    facts = list(facts)
    vocabulary = load_vocabulary()
    predicates = {row.pk: row for row in vocabulary.predicates.values()}
    sources = {row.pk: row for row in vocabulary.sources.values()}
    missing_predicates = {f.predicate_id for f in facts} - predicates.keys()
    missing_sources = {f.source_type_id for f in facts} - sources.keys()
    if missing_predicates:
        predicates |= Predicate.objects.in_bulk(missing_predicates)
    if missing_sources:
        sources |= SourceType.objects.in_bulk(missing_sources)
    for fact in facts:
        fact.predicate = predicates[fact.predicate_id]
        fact.source_type = sources[fact.source_type_id]
