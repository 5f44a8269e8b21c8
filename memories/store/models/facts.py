"""Facts, the conflicts among them, and the audit feed of their changes (SPEC §1, §2, §3, §12).

One module because their QuerySets read one another: a fact's disputes are
its conflict memberships, when a human ruled on a member is read from the
audit feed too, and an audit entry names its conflict. Split, they would
import each other in a cycle.

Rows here are written only by ``memories.write.actions`` (and the admissions actions
above it). What must never happen is refused by PostgreSQL itself through the
constraints declared below, so a bug in Python cannot store an impossible fact.
"""

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Case, Exists, F, OuterRef, Prefetch, Q, Subquery, When
from django.db.models.fields.json import KT
from django.db.models.functions import MD5, Cast, Concat, Greatest

from memories.core.confidence import effective_confidence, fact_decays
from memories.core.reverts import REVERT_CONFLICT_KIND, REVERT_TARGET, REVERTED, SUPERSESSION
from memories.core.rulings import RULINGS
from memories.store.models.review_claims import ReviewClaim
from memories.store.models.scopes import Entity, Scope
from memories.store.models.vocabulary import Epistemic, Predicate, SourceType
from memories.store.roles import readable_scope_ids, steward_scope_ids


class ObjectKind(models.TextChoices):
    ENTITY = "entity"
    LITERAL = "literal"


class Bucket(models.TextChoices):
    USER = "user"
    SYSTEM = "system"


class FactQuerySet(models.QuerySet["Fact"]):
    def in_scope(self, scope: Scope) -> "FactQuerySet":
        return self.filter(scope=scope)

    def live(self) -> "FactQuerySet":
        """Valid now: the interval is still open. Disputed facts are live."""
        return self.filter(t_invalid__isnull=True)

    def valid_at(self, at: datetime, *, known_at: datetime | None = None) -> "FactQuerySet":
        """Facts valid at ``at`` as the store knew them at ``known_at`` (bitemporal).

        Without ``known_at`` the store's present knowledge is used. With it, a
        fact recorded later is unknown, and an interval closed later is still
        open as far as that moment's knowledge goes.
        """
        if known_at is None:
            return self.filter(Q(t_invalid__isnull=True) | Q(t_invalid__gt=at), t_valid__lte=at)
        return self.filter(
            Q(t_invalid__isnull=True) | Q(t_invalid__gt=at) | Q(invalidated_at__gt=known_at),
            t_valid__lte=at,
            recorded_at__lte=known_at,
        )

    def with_disputed(self, *, known_at: datetime | None = None) -> "FactQuerySet":
        """Annotate ``disputed``: the fact is a disputed member of a conflict open then."""
        members = ConflictMember.objects.in_scope_of(OuterRef("scope_id")).filter(
            fact=OuterRef("pk"), disputes=True
        )
        if known_at is None:
            members = members.filter(conflict__resolved_at__isnull=True)
        else:
            members = members.filter(
                Q(conflict__resolved_at__isnull=True) | Q(conflict__resolved_at__gt=known_at),
                conflict__opened_at__lte=known_at,
            )
        return self.annotate(disputed=Exists(members))

    def undisputed(self, *, known_at: datetime | None = None) -> "FactQuerySet":
        return self.with_disputed(known_at=known_at).filter(disputed=False)

    def disputed(self, *, known_at: datetime | None = None) -> "FactQuerySet":
        """The disputed members of a conflict open then: what the Fact shape calls ``disputed``."""
        return self.with_disputed(known_at=known_at).filter(disputed=True)

    def readable_by(self, user) -> "FactQuerySet":
        """Who may read a fact (SPEC §6), the one statement of it.

        Facts in the scopes the user may read (``ScopeQuerySet.visible_to``);
        a ``user`` bucket fact only for its author or a steward of its scope.
        A global steward reads everything.
        """
        ids = readable_scope_ids(user)
        if ids is None:  # a global steward
            return self.all()
        if not ids:  # signed out, deactivated, or in no scope
            return self.none()
        return self.filter(scope_id__in=ids).filter(
            Q(bucket=Bucket.SYSTEM) | Q(author=user) | Q(scope_id__in=steward_scope_ids(user))
        )

    def for_display(self) -> "FactQuerySet":
        return self.select_related(*FACT_DISPLAY_RELATIONS)

    def named(self) -> "FactQuerySet":
        """With only what ``str(fact)`` reads, for pages that name facts without showing them.

        Each relation joined is paid for in planning
        (docs/bench-log/2026-12-02-console-pages.md).
        """
        return self.select_related(*FACT_NAME_RELATIONS)


# What a fact's name reads beyond its own row (``str(fact)``, ``FactQuerySet.named``), and
# what its display reads (``FactQuerySet.for_display``).
FACT_NAME_RELATIONS = ("subject", "predicate", "object_ref")
FACT_DISPLAY_RELATIONS = ("scope", *FACT_NAME_RELATIONS, "source_type", "author")


class InvalidationKind(models.TextChoices):
    INVALIDATED = "invalidated"
    SUPERSEDED = "superseded"
    WITHDRAWN = "withdrawn"


class Fact(models.Model):
    """One claim: subject, predicate, object, with its provenance and two timelines.

    Valid time (``t_valid`` .. ``t_invalid``) says when the fact held in the
    world; transaction time (``recorded_at``, ``invalidated_at``) says when this
    store learned it. Nothing is deleted: invalidation closes the valid interval
    and records who, when and why.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Every index on this table is paid for on each write. Foreign keys that
    # lead a composite index below, or are only ever read with one, have no
    # index of their own.
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="facts", db_index=False)
    subject = models.ForeignKey(
        Entity, on_delete=models.PROTECT, related_name="facts_as_subject", db_index=False
    )
    predicate = models.ForeignKey(
        Predicate, on_delete=models.PROTECT, related_name="facts", db_index=False
    )
    object_kind = models.CharField(max_length=10, choices=ObjectKind.choices)
    object_ref = models.ForeignKey(
        Entity,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="facts_as_object",
        db_index=False,
    )
    # Null, not "", for an entity object: the check constraint ties null to the kind.
    object_lit = models.TextField(null=True, blank=True)  # noqa: DJ001
    # The comparison key of the object: the literal's normalized text, or the
    # entity's id. Two facts hold the same object when kind and key are equal.
    object_key = models.TextField(editable=False)
    epistemic = models.CharField(max_length=20, choices=Epistemic.choices)
    source_type = models.ForeignKey(
        SourceType, on_delete=models.PROTECT, related_name="facts", db_index=False
    )
    confidence = models.FloatField()
    episode = models.CharField(max_length=200, blank=True)
    statement = models.TextField(blank=True)
    evidence = models.JSONField(default=list, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="facts"
    )
    bucket = models.CharField(max_length=10, choices=Bucket.choices, default=Bucket.SYSTEM)
    t_valid = models.DateTimeField()
    t_invalid = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField()
    last_reinforced_at = models.DateTimeField()
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalidated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="invalidated_facts",
        db_index=False,
    )
    invalidation_kind = models.CharField(
        max_length=20, choices=InvalidationKind.choices, blank=True
    )
    invalidation_reason = models.TextField(blank=True)
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="supersedes",
        db_index=False,
    )
    # Set by the maintenance crawler when the fact's effective confidence fell
    # below its threshold (SPEC §8): an annotation, the fact stays live.
    decayed_at = models.DateTimeField(null=True, blank=True)
    # Set when a steward reverted a decay mark: the crawler marks the fact
    # again only once it has been reinforced since (memories.core.crawl).
    decay_reverted_at = models.DateTimeField(null=True, blank=True)

    objects = FactQuerySet.as_manager()

    class Meta:
        ordering = ["recorded_at", "id"]
        constraints = [
            # One live fact per (scope, bucket, author-if-user, subject,
            # predicate, object): the write path reinforces instead. The object
            # key can be 2,000 characters of any script, longer than a btree
            # entry may be, so the index holds its MD5.
            models.UniqueConstraint(
                F("scope"),
                F("subject"),
                F("predicate"),
                F("object_kind"),
                MD5("object_key"),
                name="fact_one_live_system_fact_per_slot_value",
                condition=Q(t_invalid__isnull=True, bucket="system"),
            ),
            models.UniqueConstraint(
                F("scope"),
                F("author"),
                F("subject"),
                F("predicate"),
                F("object_kind"),
                MD5("object_key"),
                name="fact_one_live_user_fact_per_author_slot_value",
                condition=Q(t_invalid__isnull=True, bucket="user"),
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1),
                name="fact_confidence_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=(
                    Q(
                        object_kind="entity",
                        object_ref__isnull=False,
                        object_lit__isnull=True,
                    )
                    | Q(object_kind="literal", object_ref__isnull=True, object_lit__isnull=False)
                ),
                name="fact_object_matches_kind",
            ),
            models.CheckConstraint(
                condition=Q(t_invalid__isnull=True) | Q(t_invalid__gt=F("t_valid")),
                name="fact_invalid_after_valid",
            ),
            models.CheckConstraint(
                condition=Q(bucket__in=["user", "system"]), name="fact_bucket_known"
            ),
            models.CheckConstraint(
                condition=Q(epistemic__in=["observation", "preference", "commitment"]),
                name="fact_epistemic_known",
            ),
        ]
        indexes = [
            # Not on object_key: a 2,000-character literal can outgrow a btree
            # entry. A slot holds few facts, so filtering them is cheap.
            models.Index(fields=["scope", "subject", "predicate"], name="fact_slot"),
            models.Index(fields=["scope", "recorded_at"], name="fact_scope_recorded"),
            # Lists across scopes in recorded order (the Facts browser, the
            # Candidates queue of many scopes) walk this and stop at the page's
            # end instead of sorting every fact.
            models.Index(fields=["recorded_at", "id"], name="fact_recorded"),
            # Withdrawal finds an episode's facts (a plain btree: no LIKE index).
            models.Index(fields=["scope", "episode"], name="fact_scope_episode"),
            # Most facts have a literal object, and a fact is superseded only
            # once it has been written: indexing these two keys only where they
            # are set spares the NULL entry every new fact would add. Every
            # read by either key compares it with a value, which implies it
            # is set, so PostgreSQL uses these indexes for it (the foreign
            # keys' own checks included).
            models.Index(
                fields=["object_ref"],
                name="fact_object_ref",
                condition=Q(object_ref__isnull=False),
            ),
            models.Index(
                fields=["superseded_by"],
                name="fact_superseded_by",
                condition=Q(superseded_by__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject} {self.predicate} {self.object_display}"

    @property
    def object_display(self) -> str:
        if self.object_kind == ObjectKind.ENTITY and self.object_ref is not None:
            return self.object_ref.name
        return self.object_lit or ""

    @property
    def is_live(self) -> bool:
        return self.t_invalid is None

    @property
    def active_claim(self) -> "ReviewClaim | None":
        """The live review claim on this item, if any (prefetched by ``active_claims()``)."""
        return _active_claim(self)

    def effective_confidence(self, at: datetime) -> float:
        """The base confidence decayed by disuse up to ``at`` (SPEC §4)."""
        return effective_confidence(
            self.confidence,
            last_reinforced_at=self.last_reinforced_at,
            at=at,
            decays=fact_decays(self.epistemic, self.source_type.decays),
            half_life_days=settings.CLAIMGRAPH_HALF_LIFE_DAYS,
            floor=settings.CLAIMGRAPH_CONFIDENCE_FLOOR,
        )


class ConflictKind(models.TextChoices):
    COMMITMENT = "commitment"
    BACKDATED = "backdated"
    OUTRANKED = "outranked"
    REVENANT = "revenant"
    CONTRADICTION = "contradiction"
    CRAWLER = "crawler"
    # Opened by a steward's revert of an automatic supersession: the reopened
    # value and every value live on its slot stand side by side, all
    # disputed, and a human decides (memories.write.reverts).
    REVERTED = "reverted"


class Resolution(models.TextChoices):
    KEPT = "kept"
    COEXIST = "coexist"
    DISMISSED = "dismissed"
    # Closed without a ruling: its incoming member, or every standing
    # member, stopped being live (SPEC §3).
    MOOT = "moot"


class ConflictQuerySet(models.QuerySet["Conflict"]):
    def open(self) -> "ConflictQuerySet":
        return self.filter(resolved_at__isnull=True)

    def resolved(self) -> "ConflictQuerySet":
        return self.filter(resolved_at__isnull=False)

    def in_scope(self, scope: Scope) -> "ConflictQuerySet":
        return self.filter(scope=scope)

    def visible_to(self, user) -> "ConflictQuerySet":
        """Conflicts in the scopes ``user`` may read (see ``ScopeQuerySet.visible_to``)."""
        ids = readable_scope_ids(user)
        return self.all() if ids is None else self.filter(scope_id__in=ids)

    def with_candidates(self) -> "ConflictQuerySet":
        """Prefetch each conflict's members as ``candidates``, as a list of conflicts shows them.

        In ``ConflictMemberQuerySet.in_order()``, each with what a row shows
        of it: its fact's predicate, object (entity or literal) and source type.
        """
        members = ConflictMember.objects.in_order().select_related(
            "fact__predicate", "fact__object_ref", "fact__source_type"
        )
        return self.prefetch_related(
            models.Prefetch("members", queryset=members, to_attr="candidates")
        )

    def on_slot_of(self, conflict: "Conflict") -> "ConflictQuerySet":
        """The other conflicts on ``conflict``'s slot: same scope, subject and predicate."""
        return self.filter(
            scope_id=conflict.scope_id,
            subject_id=conflict.subject_id,
            predicate_id=conflict.predicate_id,
        ).exclude(pk=conflict.pk)

    def readable_by(self, user) -> "ConflictQuerySet":
        """The conflicts ``user`` may read (SPEC §6).

        Those in the scopes ``user`` may read (``visible_to``), except that one
        with a member in another account's ``user`` bucket is read only by a
        steward of its scope: a private fact is not shown through its conflict.
        A global steward reads every conflict.
        """
        ids = readable_scope_ids(user)
        if ids is None:  # a global steward
            return self.all()
        if not ids:
            return self.none()
        others_private = ConflictMember.objects.filter(
            Q(fact__bucket=Bucket.USER) & ~Q(fact__author=user), conflict=OuterRef("pk")
        )
        return self.filter(scope_id__in=ids).filter(
            Q(scope_id__in=steward_scope_ids(user)) | ~Exists(others_private)
        )

    def for_display(self) -> "ConflictQuerySet":
        """With what a conflict's display reads: its scope, its ruler, its members' facts.

        The members come in one more query for the whole page, in the
        members' order (by the facts' recording), each with its fact and
        what the fact's display reads.
        """
        members = ConflictMember.objects.select_related(
            "fact", *(f"fact__{name}" for name in FACT_DISPLAY_RELATIONS)
        ).order_by("conflict_id", "fact__recorded_at", "fact_id")
        return self.select_related("scope", "resolved_by").prefetch_related(
            Prefetch("members", queryset=members)
        )


class Conflict(models.Model):
    """Facts that contradict each other, open until a human rules (SPEC §3)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="conflicts")
    kind = models.CharField(max_length=20, choices=ConflictKind.choices)
    subject = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="conflicts")
    predicate = models.ForeignKey(Predicate, on_delete=models.PROTECT, related_name="conflicts")
    facts = models.ManyToManyField(Fact, through="ConflictMember", related_name="conflicts")
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="resolved_conflicts",
    )
    resolution = models.CharField(max_length=20, choices=Resolution.choices, blank=True)
    reason = models.TextField(blank=True)
    # Set when a steward reverted an automatic resolution of it: from then on
    # only a human rules on it (the judge leaves it alone).
    reopened_at = models.DateTimeField(null=True, blank=True)

    objects = ConflictQuerySet.as_manager()

    class Meta:
        ordering = ["opened_at", "id"]
        indexes = [
            models.Index(
                fields=["scope", "opened_at"],
                name="conflict_open_by_age",
                condition=Q(resolved_at__isnull=True),
            ),
            # The queue of every scope, oldest first, read in order and stopped
            # at the page's end (a list of scopes defeats the index above).
            models.Index(
                fields=["opened_at", "id"],
                name="conflict_open_oldest",
                condition=Q(resolved_at__isnull=True),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(resolved_at__isnull=True, resolution="")
                    | Q(resolved_at__isnull=False) & ~Q(resolution="")
                ),
                name="conflict_resolution_iff_resolved",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} conflict on {self.subject} {self.predicate}"

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None

    @property
    def active_claim(self) -> "ReviewClaim | None":
        """The live review claim on this item, if any (prefetched by ``active_claims()``)."""
        return _active_claim(self)


class MemberRole(models.TextChoices):
    INCOMING = "incoming"
    EXISTING = "existing"


class ConflictMemberQuerySet(models.QuerySet["ConflictMember"]):
    def in_scope_of(self, scope) -> "ConflictMemberQuerySet":
        """Members in ``scope`` (an id, or an expression such as ``OuterRef("scope_id")``),
        their conflicts read in it too.

        A member, its conflict and its fact share one scope; naming it on the
        member and on the conflict it joins keeps the read on that scope's
        shard (docs/scale-out.md).
        """
        return self.filter(scope=scope, conflict__scope=F("scope"))

    def ties(self, fact_ids) -> "dict[uuid.UUID, tuple[frozenset, frozenset]]":
        """Each fact's (open conflicts, conflicts a steward ruled on), by conflict id.

        What ``memories.core.rulings`` weighs: a fact with neither is absent.
        One query.
        """
        open_: dict[uuid.UUID, set] = {}
        ruled: dict[uuid.UUID, set] = {}
        rows = self.filter(
            Q(conflict__resolved_at__isnull=True)
            | Q(conflict__resolution__in=sorted(RULINGS))
            # Closed as moot by a person's act (a steward rejecting a side):
            # the steward answered the question, as a ruling does.
            | Q(conflict__resolution="moot", conflict__resolved_by__isnull=False),
            fact_id__in=list(fact_ids),
        ).values_list("fact_id", "conflict_id", "conflict__resolved_at")
        for fact_id, conflict_id, resolved_at in rows:
            (open_ if resolved_at is None else ruled).setdefault(fact_id, set()).add(conflict_id)
        return {
            fact_id: (frozenset(open_.get(fact_id, ())), frozenset(ruled.get(fact_id, ())))
            for fact_id in open_.keys() | ruled.keys()
        }

    def ruled_at(self, fact_ids, *, scope_ids) -> "dict[uuid.UUID, datetime]":
        """When a human last ruled on each fact, by fact id: what
        ``memories.core.rulings.left_for_a_human`` weighs. A fact no human ruled on is absent.

        A human rules on a fact by resolving a conflict it is a member of
        (a resolution that names who made it), by reopening one (reverting
        its automatic resolution: ``reopened_at``), and by reverting an
        automatic supersession: the revert names the fact it reopened, and
        the conflict of kind ``reverted`` it opens names the values that
        fact competes with, ruled on at its opening. (A supersession
        reverted before reverts opened that conflict is found by its audit
        entry alone.) The facts are of the scopes ``scope_ids``, which the
        read names (docs/scale-out.md). One query.
        """
        ids = list(fact_ids)
        if not ids:
            return {}
        scope_ids = sorted(set(scope_ids))
        memberships = (
            self.filter(fact_id__in=ids, scope_id__in=scope_ids, conflict__scope_id__in=scope_ids)
            .annotate(
                ruled=Greatest(
                    Case(When(conflict__kind=REVERT_CONFLICT_KIND, then=F("conflict__opened_at"))),
                    Case(
                        When(conflict__resolved_by__isnull=False, then=F("conflict__resolved_at"))
                    ),
                    F("conflict__reopened_at"),
                )
            )
            .filter(ruled__isnull=False)
            .order_by()
            .values_list("fact_id", "ruled")
        )
        reverts = (
            AuditEntry.objects.filter(
                scope_id__in=scope_ids,
                action=REVERTED,
                target_type=REVERT_TARGET,
                after__kind=SUPERSESSION,
                after__fact__in=[str(fact_id) for fact_id in ids],
            )
            .annotate(fact=Cast(KT("after__fact"), models.UUIDField()))
            .order_by()
            .values_list("fact", "at")
        )
        latest: dict[uuid.UUID, datetime] = {}
        for fact_id, at in memberships.union(reverts, all=True).order_by():
            if fact_id not in latest or at > latest[fact_id]:
                latest[fact_id] = at
        return latest

    def in_order(self) -> "ConflictMemberQuerySet":
        """Oldest recorded first, then by id: the order every page lists candidates in.

        The candidates carry equal weight, so their order never depends on
        confidence or trust (SPEC §9).
        """
        return self.order_by("fact__recorded_at", "fact_id")

    def candidates(self) -> "ConflictMemberQuerySet":
        """The members as a conflict page shows them: ``in_order()``, with their facts.

        Each member's fact comes with its subject, predicate, object entity,
        source type and author, in the one query that reads the members.
        """
        return self.in_order().select_related(
            "fact__subject",
            "fact__predicate",
            "fact__object_ref",
            "fact__source_type",
            "fact__author",
        )


class ConflictMember(models.Model):
    """One fact's place in a conflict.

    ``disputes`` is true for the member that is disputed while the conflict is
    open: the incoming fact of a flagged write (the standing facts it collided
    with stay believed), or every member of a conflict without an incoming
    side. Stored rather than re-derived so the "disputed" read is one indexed
    EXISTS.
    """

    # Found by conflict through conflict_member_once, which the conflict
    # leads, and by fact through conflict_member_fact: no index of their own.
    conflict = models.ForeignKey(
        Conflict, on_delete=models.PROTECT, related_name="members", db_index=False
    )
    fact = models.ForeignKey(
        Fact, on_delete=models.PROTECT, related_name="conflict_memberships", db_index=False
    )
    # The conflict's scope (and so its facts'), copied so that every read
    # through a member can name its scope (docs/scale-out.md). No index of its
    # own: members are found by conflict or by fact, and scopes are never deleted.
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="+", db_index=False)
    role = models.CharField(max_length=10, choices=MemberRole.choices)
    disputes = models.BooleanField()
    kept = models.BooleanField(null=True, blank=True)

    objects = ConflictMemberQuerySet.as_manager()

    class Meta:
        ordering = ["conflict", "fact__recorded_at", "fact_id"]
        constraints = [
            models.UniqueConstraint(fields=["conflict", "fact"], name="conflict_member_once"),
        ]
        indexes = [models.Index(fields=["fact"], name="conflict_member_fact")]

    def __str__(self) -> str:
        return f"{self.role} {self.fact_id}"


class AuditEntryQuerySet(models.QuerySet["AuditEntry"]):
    def automatic(self) -> "AuditEntryQuerySet":
        """Automatic changes (SPEC §12): every entry that names the rule that decided it.

        The one definition: the console's feed filter, its "Automatic changes"
        page and ``GET /api/v1/changes`` all read it. An entry with an actor
        can be automatic too: a write-path supersession is credited to the
        account whose write triggered it, and still names its rule.
        """
        return self.exclude(rule="")

    def human(self) -> "AuditEntryQuerySet":
        """Every entry that is not an automatic change: a person's own action."""
        return self.filter(rule="")

    def visible_to(self, user) -> "AuditEntryQuerySet":
        """Entries of the scopes ``user`` may read (see ``ScopeQuerySet.visible_to``)."""
        ids = readable_scope_ids(user)
        return self.all() if ids is None else self.filter(scope_id__in=ids)

    def with_conflict_names(self) -> "AuditEntryQuerySet":
        """Each entry about a conflict with ``conflict_name``: its subject and predicate.

        Read in the entries' own query, so a page of entries costs the same
        whatever kinds of action it holds. The conflict is in the entry's
        scope, so whoever may read the entry may read its name.
        """
        named = Conflict.objects.filter(
            pk=Cast(OuterRef("target_id"), models.UUIDField())
        ).annotate(name=Concat("subject__name", models.Value(" "), "predicate__name"))
        return self.annotate(
            conflict_name=Case(
                When(target_type="conflict", then=Subquery(named.values("name")[:1])),
                output_field=models.TextField(),
            )
        )

    def reverts_of(self, entry_ids) -> "AuditEntryQuerySet":
        """The revert records of these entries, with the steward who made each."""
        return self.filter(
            action=REVERTED, target_type=REVERT_TARGET, target_id__in=[str(i) for i in entry_ids]
        ).select_related("actor")


class AuditEntry(models.Model):
    """One line of the curator audit feed (SPEC §12): who did what, before, after, why.

    Written by the actions, in the same transaction as the change it
    describes, for every human action and every automatic change
    (``actor`` null, ``rule`` naming what decided). Append-only.
    """

    id = models.BigAutoField(primary_key=True)
    # Indexed with ``id`` below, not alone: see Meta.indexes.
    at = models.DateTimeField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="audit_entries",
    )
    # Found by scope through audit_scope_latest, which it leads.
    scope = models.ForeignKey(
        Scope, on_delete=models.PROTECT, related_name="audit_entries", db_index=False
    )
    # A domain verb: asserted, invalidated, resolved-conflict, admitted, ...
    action = models.CharField(max_length=50)
    target_type = models.CharField(max_length=50)
    target_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    # For automatic changes: the rule that decided and its rationale.
    rule = models.CharField(max_length=100, blank=True)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["at", "id"]
        # The feeds read newest first by (at, id). Many entries share an
        # ``at`` (one transaction's automatic changes, a bulk load), so an
        # index on ``at`` alone makes PostgreSQL read a whole tie group to
        # sort it by ``id``; with ``id`` in the index the first page is the
        # index's last 25 entries. The automatic changes are a minority of
        # the recent entries: their own partial index keeps that page from
        # filtering its way back through the human ones.
        indexes = [
            models.Index(fields=["scope", "at", "id"], name="audit_scope_latest"),
            models.Index(fields=["at", "id"], name="audit_latest"),
            models.Index(fields=["at", "id"], name="audit_automatic_latest", condition=~Q(rule="")),
            # Compared for equality only: not ``db_index``, which on PostgreSQL
            # adds a second, LIKE-ready index that every entry would pay for.
            models.Index(fields=["action"], name="audit_action"),
            models.Index(fields=["target_id"], name="audit_target"),
        ]
        constraints = [
            # One revert per automatic change: a second is refused by the
            # database even when two stewards click at once.
            models.UniqueConstraint(
                fields=["target_id"],
                name="audit_one_revert_per_entry",
                condition=Q(action=REVERTED, target_type=REVERT_TARGET),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type} {self.target_id}"


def _active_claim(item: "Fact | Conflict") -> "ReviewClaim | None":
    prefetched = getattr(item, "active_claims", None)
    if prefetched is None:
        prefetched = item.active_claims = list(
            ReviewClaim.objects.active()
            .filter(**{type(item).__name__.lower(): item})
            .select_related("claimed_by")
        )
    return prefetched[0] if prefetched else None
