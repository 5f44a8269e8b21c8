"""What the store puts in an export, and how it reads it back (``memories.portability.exports``).

Kinds, in file order: predicate and source_type (the vocabulary), scope
(with members and stewards), entity, entity_merge, fact, conflict (with its
members), outcome, withdrawal, audit. Rows keep their ids; accounts are
named by username, vocabulary by name, scopes by name.
"""

from collections.abc import Iterator
from typing import Any

from django.contrib.auth import get_user_model
from guardian.shortcuts import assign_perm, get_users_with_perms

from memories.portability.exports import CHUNK, Section
from memories.portability.exports import parse_time as _time
from memories.store.errors import StateConflict
from memories.store.models import (
    AuditEntry,
    Conflict,
    ConflictMember,
    Entity,
    EntityMerge,
    Fact,
    Outcome,
    Predicate,
    Scope,
    SourceType,
    Withdrawal,
)
from memories.store.roles import STEWARD_PERMISSION
from memories.store.stewardship import unaudited


class Vocabulary:
    kinds = ("predicate", "source_type")

    def export(self, scopes, names) -> Iterator[dict[str, Any]]:
        for p in Predicate.objects.order_by("name"):
            yield {
                "kind": "predicate",
                "name": p.name,
                "cardinality": p.cardinality,
                "exclusion_group": p.exclusion_group,
                "default_epistemic": p.default_epistemic,
                "policy": p.policy,
                "event_like": p.event_like,
                "description": p.description,
            }
        for s in SourceType.objects.order_by("name"):
            yield {
                "kind": "source_type",
                "name": s.name,
                "trust_rank": s.trust_rank,
                "confidence_ceiling": s.confidence_ceiling,
                "decays": s.decays,
            }

    def restore(self, kind, item, into) -> None:
        model, table = (
            (Predicate, into.predicates) if kind == "predicate" else (SourceType, into.sources)
        )
        fields = {k: v for k, v in item.items() if k != "kind"}
        row, created = model.objects.get_or_create(name=fields["name"], defaults=fields)
        if not created:
            differs = sorted(k for k, v in fields.items() if getattr(row, k) != v)
            if differs:
                # The store's own vocabulary wins: facts keep the class and
                # source they were written with, and statuses come from records.
                into.notes.append(f"{kind} {row.name}: kept this store's {', '.join(differs)}")
        table[row.name] = row.pk


class Scopes:
    kinds = ("scope",)

    def export(self, scopes, names) -> Iterator[dict[str, Any]]:
        for scope in scopes:
            stewards = get_users_with_perms(
                scope, only_with_perms_in=["steward_scope"], with_group_users=False
            )
            yield {
                "kind": "scope",
                "id": scope.pk,
                "name": scope.name,
                "description": scope.description,
                "created_at": scope.created_at,
                "members": sorted(scope.members.values_list("username", flat=True)),
                "stewards": sorted(user.username for user in stewards),
            }

    def restore(self, kind, item, into) -> None:
        if Scope.objects.filter(name=item["name"]).exists():
            raise StateConflict(f"the scope {item['name']!r} already exists; restore never merges")
        scope = Scope(id=item["id"], name=item["name"], description=item["description"])
        scope.save(force_insert=True)
        # auto_now_add ignores the value given at creation.
        Scope.objects.filter(pk=scope.pk).update(created_at=_time(item["created_at"]))
        scope.members.set([into.user(name) for name in item["members"]])
        User = get_user_model()
        # The export's audit entries already tell of these grants.
        with unaudited():
            for name in item["stewards"]:
                assign_perm(STEWARD_PERMISSION, User.objects.get(pk=into.user(name)), scope)
        into.scopes[scope.name] = scope.pk


def _scope_rows(model, scopes, *order, prefetch: tuple[str, ...] = ()):
    rows = model.objects.filter(scope__in=scopes).order_by(*order).prefetch_related(*prefetch)
    return rows.iterator(chunk_size=CHUNK)


class Entities:
    kinds = ("entity", "entity_merge")

    def export(self, scopes, names) -> Iterator[dict[str, Any]]:
        for e in _scope_rows(Entity, scopes, "id"):
            yield {
                "kind": "entity",
                "id": e.pk,
                "scope": names.scopes[e.scope_id],
                "name": e.name,
                "key": e.key,
                "type": e.type,
                "aliases": e.aliases,
                "alias_keys": e.alias_keys,
                "created_at": e.created_at,
            }
        for m in _scope_rows(EntityMerge, scopes, "id"):
            yield {
                "kind": "entity_merge",
                "id": m.pk,
                "scope": names.scopes[m.scope_id],
                "entity": m.entity_id,
                "into": m.into_id,
                "undoes": m.undoes_id,
                "actor": names.user(m.actor_id),
                "at": m.at,
                "reason": m.reason,
            }

    def restore(self, kind, item, into) -> None:
        if kind == "entity":
            entity = Entity(
                id=item["id"],
                scope_id=into.scopes[item["scope"]],
                name=item["name"],
                key=item["key"],
                type=item["type"],
                aliases=item["aliases"],
                alias_keys=item["alias_keys"],
                created_at=_time(item["created_at"]),
            )
            # Derived, not exported: a restore computes them with its own ICU.
            entity.set_skeletons()
            into.queue(entity)
        else:
            into.queue(
                EntityMerge(
                    id=item["id"],
                    scope_id=into.scopes[item["scope"]],
                    entity_id=item["entity"],
                    into_id=item["into"],
                    undoes_id=item["undoes"],
                    actor_id=into.user(item["actor"]),
                    at=_time(item["at"]),
                    reason=item["reason"],
                )
            )


class Facts:
    kinds = ("fact",)

    def export(self, scopes, names) -> Iterator[dict[str, Any]]:
        for f in _scope_rows(Fact, scopes, "recorded_at", "id"):
            yield {
                "kind": "fact",
                "id": str(f.pk),
                "scope": names.scopes[f.scope_id],
                "subject": f.subject_id,
                "predicate": names.predicates[f.predicate_id],
                "object_kind": f.object_kind,
                "object_ref": f.object_ref_id,
                "object_lit": f.object_lit,
                "object_key": f.object_key,
                "epistemic": f.epistemic,
                "source_type": names.sources[f.source_type_id],
                "confidence": f.confidence,
                "episode": f.episode,
                "statement": f.statement,
                "evidence": f.evidence,
                "author": names.user(f.author_id),
                "bucket": f.bucket,
                "t_valid": f.t_valid,
                "t_invalid": f.t_invalid,
                "recorded_at": f.recorded_at,
                "last_reinforced_at": f.last_reinforced_at,
                "invalidated_at": f.invalidated_at,
                "invalidated_by": names.user(f.invalidated_by_id),
                "invalidation_kind": f.invalidation_kind,
                "invalidation_reason": f.invalidation_reason,
                "superseded_by": str(f.superseded_by_id) if f.superseded_by_id else None,
                "decayed_at": f.decayed_at,
                "decay_reverted_at": f.decay_reverted_at,
            }

    def restore(self, kind, item, into) -> None:
        # superseded_by may name a fact later in the file: the foreign key
        # is checked at commit (Django creates it DEFERRABLE INITIALLY DEFERRED).
        into.queue(
            Fact(
                id=item["id"],
                scope_id=into.scopes[item["scope"]],
                subject_id=item["subject"],
                predicate_id=into.predicates[item["predicate"]],
                object_kind=item["object_kind"],
                object_ref_id=item["object_ref"],
                object_lit=item["object_lit"],
                object_key=item["object_key"],
                epistemic=item["epistemic"],
                source_type_id=into.sources[item["source_type"]],
                confidence=item["confidence"],
                episode=item["episode"],
                statement=item["statement"],
                evidence=item["evidence"],
                author_id=into.user(item["author"]),
                bucket=item["bucket"],
                t_valid=_time(item["t_valid"]),
                t_invalid=_time(item["t_invalid"]),
                recorded_at=_time(item["recorded_at"]),
                last_reinforced_at=_time(item["last_reinforced_at"]),
                invalidated_at=_time(item["invalidated_at"]),
                invalidated_by_id=into.user(item["invalidated_by"]),
                invalidation_kind=item["invalidation_kind"],
                invalidation_reason=item["invalidation_reason"],
                superseded_by_id=item["superseded_by"],
                # Absent from exports written before the crawler marked decay.
                decayed_at=_time(item.get("decayed_at")),
                # Absent from exports written before stewards reverted automatic changes.
                decay_reverted_at=_time(item.get("decay_reverted_at")),
            )
        )


class Conflicts:
    kinds = ("conflict",)

    def export(self, scopes, names) -> Iterator[dict[str, Any]]:
        members: dict[Any, list] = {}
        for m in (
            ConflictMember.objects.filter(conflict__scope__in=scopes)
            .order_by("conflict_id", "id")
            .iterator(chunk_size=CHUNK)
        ):
            members.setdefault(m.conflict_id, []).append(
                {
                    "id": m.pk,
                    "fact": str(m.fact_id),
                    "role": m.role,
                    "disputes": m.disputes,
                    "kept": m.kept,
                }
            )
        for c in _scope_rows(Conflict, scopes, "opened_at", "id"):
            yield {
                "kind": "conflict",
                "id": str(c.pk),
                "scope": names.scopes[c.scope_id],
                "conflict_kind": c.kind,
                "subject": c.subject_id,
                "predicate": names.predicates[c.predicate_id],
                "opened_at": c.opened_at,
                "resolved_at": c.resolved_at,
                "resolved_by": names.user(c.resolved_by_id),
                "resolution": c.resolution,
                "reason": c.reason,
                "reopened_at": c.reopened_at,
                "members": members.get(c.pk, []),
            }

    def restore(self, kind, item, into) -> None:
        into.flush()
        Conflict.objects.create(
            id=item["id"],
            scope_id=into.scopes[item["scope"]],
            kind=item["conflict_kind"],
            subject_id=item["subject"],
            predicate_id=into.predicates[item["predicate"]],
            opened_at=_time(item["opened_at"]),
            resolved_at=_time(item["resolved_at"]),
            resolved_by_id=into.user(item["resolved_by"]),
            resolution=item["resolution"],
            reason=item["reason"],
            reopened_at=_time(item.get("reopened_at")),
        )
        ConflictMember.objects.bulk_create(
            [
                ConflictMember(
                    id=m["id"],
                    conflict_id=item["id"],
                    scope_id=into.scopes[item["scope"]],
                    fact_id=m["fact"],
                    role=m["role"],
                    disputes=m["disputes"],
                    kept=m["kept"],
                )
                for m in item["members"]
            ]
        )


class History:
    """Outcomes, withdrawals and the audit feed."""

    kinds = ("outcome", "withdrawal", "audit")

    def export(self, scopes, names) -> Iterator[dict[str, Any]]:
        for o in _scope_rows(Outcome, scopes, "reported_at", "id", prefetch=("facts",)):
            yield {
                "kind": "outcome",
                "id": str(o.pk),
                "scope": names.scopes[o.scope_id],
                "outcome": o.outcome,
                "reported_by": names.user(o.reported_by_id),
                "reported_at": o.reported_at,
                "facts": sorted(str(fact.pk) for fact in o.facts.all()),
            }
        for w in _scope_rows(Withdrawal, scopes, "at", "id"):
            yield {
                "kind": "withdrawal",
                "id": str(w.pk),
                "scope": names.scopes[w.scope_id],
                "episode": w.episode,
                "actor": names.user(w.actor_id),
                "at": w.at,
                "reason": w.reason,
                "withdrawn": w.withdrawn,
                "reinstated": w.reinstated,
            }
        for a in _scope_rows(AuditEntry, scopes, "id"):
            yield {
                "kind": "audit",
                "id": a.pk,
                "scope": names.scopes[a.scope_id],
                "at": a.at,
                "actor": names.user(a.actor_id),
                "action": a.action,
                "target_type": a.target_type,
                "target_id": a.target_id,
                "before": a.before,
                "after": a.after,
                "reason": a.reason,
                "rule": a.rule,
            }

    def restore(self, kind, item, into) -> None:
        scope_id = into.scopes[item["scope"]]
        if kind == "outcome":
            into.flush()
            outcome = Outcome.objects.create(
                id=item["id"],
                scope_id=scope_id,
                outcome=item["outcome"],
                reported_by_id=into.user(item["reported_by"]),
                reported_at=_time(item["reported_at"]),
            )
            outcome.facts.set(item["facts"])
        elif kind == "withdrawal":
            into.flush()
            Withdrawal.objects.create(
                id=item["id"],
                scope_id=scope_id,
                episode=item["episode"],
                actor_id=into.user(item["actor"]),
                at=_time(item["at"]),
                reason=item["reason"],
                withdrawn=item["withdrawn"],
                reinstated=item["reinstated"],
            )
        else:
            into.queue(
                AuditEntry(
                    id=item["id"],
                    scope_id=scope_id,
                    at=_time(item["at"]),
                    actor_id=into.user(item["actor"]),
                    action=item["action"],
                    target_type=item["target_type"],
                    target_id=item["target_id"],
                    before=item["before"],
                    after=item["after"],
                    reason=item["reason"],
                    rule=item["rule"],
                )
            )


SECTIONS: list[Section] = [Vocabulary(), Scopes(), Entities(), Facts(), Conflicts(), History()]
