"""Export and restore: a store as JSONL, and back, ids and history intact.

An export is one JSON object per line, each with a ``kind``: a header, then
the vocabulary, scopes (with members and stewards), entities, entity merges,
facts, conflicts with their members, outcomes, withdrawals and the audit
feed, then whatever the apps above memories add (admissions adds its
records). Each kind comes after everything it refers to, so a restore reads
the file once, top to bottom.

A restore inserts the rows as they were, ids included: nothing passes
through the write path, because nothing is being decided — the decisions are
history. Append-only tables (admission records) accept INSERT, and their
derived state is maintained by PostgreSQL as each row goes in. A restore is
all or nothing, and it refuses a scope that already exists: it fills an
empty store (or new scopes), it never merges into a live one.

Each app contributes *sections* through an optional ``portable`` module
with a ``SECTIONS`` list, found in INSTALLED_APPS order; so memories never
imports the apps above it, and their rows follow its own in the file.
"""

import importlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management.color import no_style
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone
from guardian.shortcuts import assign_perm, get_users_with_perms

from memories.errors import Rejected, StateConflict
from memories.models import (
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
from memories.roles import STEWARD_PERMISSION

FORMAT = "claimgraph-export"
VERSION = 1
CHUNK = 2_000


class Section(Protocol):
    """One part of an export: the kinds it writes, and how each is read back."""

    kinds: tuple[str, ...]

    def export(self, scopes: list[Scope], names: "Names") -> Iterator[dict[str, Any]]: ...

    def restore(self, kind: str, item: dict[str, Any], into: "Restoring") -> None: ...


class Names:
    """Row ids in an export are replaced by names that survive a move between databases."""

    def __init__(self) -> None:
        self.users = dict(get_user_model().objects.values_list("pk", "username"))
        self.predicates = dict(Predicate.objects.values_list("pk", "name"))
        self.sources = dict(SourceType.objects.values_list("pk", "name"))
        self.scopes = dict(Scope.objects.values_list("pk", "name"))

    def user(self, pk: int | None) -> str | None:
        return None if pk is None else self.users[pk]


@dataclass
class Restoring:
    """What a restore has put in so far, and the rows waiting for their batch insert."""

    users: dict[str, int] = field(default_factory=dict)
    predicates: dict[str, int] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)
    scopes: dict[str, int] = field(default_factory=dict)
    created_accounts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # Rows of one model waiting for a batch insert; the file is grouped by
    # kind, so a change of model flushes the batch before.
    pending: list[Any] = field(default_factory=list)

    def user(self, username: str | None) -> int | None:
        """An account's id by name; one this store lacks is created, with no password."""
        if username is None:
            return None
        if username not in self.users:
            User = get_user_model()
            user = User.objects.filter(username=username).first()
            if user is None:
                user = User(username=username)
                user.set_unusable_password()
                user.save()
                self.created_accounts.append(username)
            self.users[username] = user.pk
        return self.users[username]

    def queue(self, row: Any) -> None:
        if self.pending and type(self.pending[0]) is not type(row):
            self.flush()
        self.pending.append(row)
        if len(self.pending) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        model = type(self.pending[0])
        # bulk_create stamps auto_now_add fields with the present; put back
        # the times the rows were made.
        stamped = [f for f in model._meta.concrete_fields if getattr(f, "auto_now_add", False)]
        times = {f.column: [getattr(row, f.attname) for row in self.pending] for f in stamped}
        model.objects.bulk_create(self.pending)
        pk = model._meta.pk
        with connection.cursor() as cursor:
            for column, values in times.items():
                cursor.execute(
                    f"UPDATE {model._meta.db_table} AS t SET {column} = v.at"
                    f" FROM unnest(%s::{pk.db_type(connection)}[], %s::timestamptz[]) AS v(id, at)"
                    f" WHERE t.{pk.column} = v.id",
                    [[row.pk for row in self.pending], values],
                )
        self.pending = []


def sections() -> list[Section]:
    """Every installed app's sections, in INSTALLED_APPS order."""
    found: list[Section] = []
    for config in apps.get_app_configs():
        try:
            module = importlib.import_module(f"{config.name}.portable")
        except ModuleNotFoundError as missing:
            if missing.name != f"{config.name}.portable":
                raise
            continue
        found += getattr(module, "SECTIONS", [])
    return found


# --- export --------------------------------------------------------------------------


def export_lines(scope_names: Iterable[str] | None = None) -> Iterator[str]:
    """The export of the named scopes (all when None), line by line."""
    scopes = list(Scope.objects.order_by("name"))
    if scope_names is not None:
        wanted = set(scope_names)
        missing = wanted - {scope.name for scope in scopes}
        if missing:
            raise Rejected("scope", f"no scope named {sorted(missing)[0]!r}")
        scopes = [scope for scope in scopes if scope.name in wanted]
    names = Names()
    yield _dump(
        {
            "kind": FORMAT,
            "version": VERSION,
            "exported_at": timezone.now(),
            "scopes": [scope.name for scope in scopes],
        }
    )
    for section in sections():
        for item in section.export(scopes, names):
            yield _dump(item)


class _Encoder(DjangoJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            return o.isoformat()  # to the microsecond, unlike Django's encoder
        return super().default(o)


def _dump(item: dict[str, Any]) -> str:
    return json.dumps(item, cls=_Encoder, ensure_ascii=False, sort_keys=False)


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


# --- restore -------------------------------------------------------------------------


def restore_lines(lines: Iterable[str]) -> Restoring:
    """Restore an export into this database, in one transaction."""
    by_kind: dict[str, Section] = {}
    for section in sections():
        for kind in section.kinds:
            by_kind[kind] = section
    into = Restoring()
    with transaction.atomic():
        header_seen = False
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                item = json.loads(text)
                kind = item["kind"]
            except (ValueError, TypeError, KeyError):
                raise Rejected("line", f"line {number} is not an export line") from None
            if not header_seen:
                if kind != FORMAT or item.get("version") != VERSION:
                    raise Rejected("line", f"line {number}: not a {FORMAT} version {VERSION}")
                header_seen = True
                continue
            section = by_kind.get(kind)
            if section is None:
                raise Rejected("line", f"line {number}: unknown kind {kind!r}")
            try:
                section.restore(kind, item, into)
            except (KeyError, TypeError, ValueError) as error:
                raise Rejected("line", f"line {number} ({kind}): {error!r}") from None
            into.counts[kind] = into.counts.get(kind, 0) + 1
        into.flush()
        _reset_sequences()
    return into


def _reset_sequences() -> None:
    """Rows went in with their ids: move each id sequence past them."""
    models = [m for m in apps.get_models() if m._meta.pk.get_internal_type() == "BigAutoField"]
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(statement)


# --- the memory store's sections ------------------------------------------------------


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
            into.queue(
                Entity(
                    id=item["id"],
                    scope_id=into.scopes[item["scope"]],
                    name=item["name"],
                    key=item["key"],
                    type=item["type"],
                    aliases=item["aliases"],
                    alias_keys=item["alias_keys"],
                    created_at=_time(item["created_at"]),
                )
            )
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
        )
        ConflictMember.objects.bulk_create(
            [
                ConflictMember(
                    id=m["id"],
                    conflict_id=item["id"],
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
