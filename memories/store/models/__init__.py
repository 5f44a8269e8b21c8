"""The memory store's models, one module per concern, all importable from here.

Django imports an app's ``models``; this app's are this package, which
``memories.apps.MemoriesConfig.import_models`` imports (the app label stays
``memories``, so tables, migrations and permissions are unchanged).
"""

from memories.store.models.admitted import AdmittedFact
from memories.store.models.facts import (
    FACT_DISPLAY_RELATIONS,
    FACT_NAME_RELATIONS,
    AuditEntry,
    AuditEntryQuerySet,
    Bucket,
    Conflict,
    ConflictKind,
    ConflictMember,
    ConflictMemberQuerySet,
    ConflictQuerySet,
    Fact,
    FactQuerySet,
    InvalidationKind,
    MemberRole,
    ObjectKind,
    Resolution,
)
from memories.store.models.merges import EntityMerge, EntityMergeQuerySet, MergeInForce
from memories.store.models.outcomes import Outcome
from memories.store.models.review_claims import ReviewClaim, ReviewClaimQuerySet, active_claims
from memories.store.models.runs import CrawlerRun, DoctorRun, PeriodicRun, WorkerHeartbeat
from memories.store.models.scopes import Entity, Scope, ScopeQuerySet
from memories.store.models.truth import (
    Adjudication,
    DecidedBy,
    PredicateProposal,
    TouchedSlot,
    TruthSlot,
    TruthSlotQuerySet,
    VerdictKind,
)
from memories.store.models.vocabulary import Cardinality, Epistemic, Policy, Predicate, SourceType
from memories.store.models.withdrawals import Withdrawal

__all__ = [
    "FACT_DISPLAY_RELATIONS",
    "FACT_NAME_RELATIONS",
    "Adjudication",
    "AdmittedFact",
    "AuditEntry",
    "AuditEntryQuerySet",
    "Bucket",
    "Cardinality",
    "Conflict",
    "ConflictKind",
    "ConflictMember",
    "ConflictMemberQuerySet",
    "ConflictQuerySet",
    "CrawlerRun",
    "DecidedBy",
    "DoctorRun",
    "Entity",
    "EntityMerge",
    "EntityMergeQuerySet",
    "Epistemic",
    "Fact",
    "FactQuerySet",
    "InvalidationKind",
    "MemberRole",
    "MergeInForce",
    "ObjectKind",
    "Outcome",
    "PeriodicRun",
    "Policy",
    "Predicate",
    "PredicateProposal",
    "Resolution",
    "ReviewClaim",
    "ReviewClaimQuerySet",
    "Scope",
    "ScopeQuerySet",
    "SourceType",
    "TouchedSlot",
    "TruthSlot",
    "TruthSlotQuerySet",
    "VerdictKind",
    "Withdrawal",
    "WorkerHeartbeat",
    "active_claims",
]
