"""The search's prepared statement answers as its QuerySet definition does."""

from datetime import timedelta
from itertools import product

import pytest
from django.utils import timezone

from admissions.search import _prepared_page, search_page_through_orm
from memories.store.models import Entity, Scope
from memories.store.roles import readable_scope_ids
from memories.write.actions import assert_fact, invalidate_fact

pytestmark = pytest.mark.django_db


def write(actor, **fields):
    data = {
        "scope": "project",
        "subject": "AuthService",
        "predicate": "core/uses",
        "object": "Redis cache",
        "source_type": "user-assertion",
        **fields,
    }
    return assert_fact(actor=actor, data=data)


def page_of(rows) -> list[tuple]:
    return [
        (
            fact.pk,
            round(fact.rank, 5),
            round(fact.similarity, 5),
            fact.disputed,
            fact.matches,
            fact.subject.name,
            fact.object_display,
            fact.author.get_username(),
        )
        for fact in rows
    ]


def test_the_prepared_search_answers_as_its_queryset_definition(
    member, author, steward, scope_steward, outsider
):
    write(member, object="Redis cache", statement="the session cache")
    write(author, subject="Billing", object="cache warmer", bucket="user")
    write(
        member,
        subject="Billing",
        predicate="core/depends-on",
        object="AuthService",
        object_kind="entity",
    )
    Entity.objects.filter(name="Billing").update(aliases=["payments"])
    write(
        steward,
        subject="AuthService",
        predicate="core/has-version",
        object="2.0.0",
        confidence=0.95,
        source_type="code",
    )
    write(
        member,
        subject="AuthService",
        predicate="core/has-version",
        object="9.9.9 cache",
        source_type="agent-note",
    )
    ended = write(member, subject="Queue", object="cache broker").fact
    invalidate_fact(actor=member, fact_id=ended.pk, reason="gone")
    write(outsider, scope="elsewhere", subject="AuthService", object="cache elsewhere")
    now = timezone.now()
    project = Scope.objects.get(name="project")
    found: set = set()

    for viewer in (member, author, steward, scope_steward, outsider):
        readable = readable_scope_ids(viewer)
        # A named scope is one the caller checked readable (admissions.search.search).
        scopes = [None] + ([project] if readable is None or project.pk in readable else [])
        for text, predicate, status, at, scope in product(
            ("cache", "AuthService", "Authservce", "payments", "nothing-like-it"),
            (None, "core/has-version"),
            ("live", "disputed"),
            (now, now - timedelta(days=400)),
            scopes,
        ):
            ids = [scope.pk] if scope is not None else readable
            if ids is not None and not ids:
                continue
            arguments = {
                "text": text,
                "predicate": predicate,
                "status": status,
                "as_of": at,
                "limit": 5,
            }
            prepared = _prepared_page(viewer, scope_ids=ids, **arguments)
            defined = search_page_through_orm(
                viewer=viewer, scope=scope, scope_ids=ids, **arguments
            )
            case = (viewer.username, text, predicate, status, at, scope)
            assert page_of(prepared) == page_of(defined), case
            found.update(fact.pk for fact in prepared)
    # The cases are not all empty: private, disputed and other scopes' facts were found.
    assert len(found) >= 6
