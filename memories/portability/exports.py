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

This module is the machinery. What goes in an export comes from each app's
optional ``portable`` module (or the one its AppConfig's ``portable_module``
names), a ``SECTIONS`` list found in INSTALLED_APPS order
(``memories.portability.portable``, then ``admissions.portable``): memories never
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

from memories.store.errors import Rejected
from memories.store.models import Predicate, Scope, SourceType

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
            name = getattr(config, "portable_module", f"{config.name}.portable")
            module = importlib.import_module(name)
        except ModuleNotFoundError as missing:
            if missing.name != name:
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


def parse_time(value: str | None) -> datetime | None:
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
