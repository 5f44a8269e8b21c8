"""Names that look alike are one entity (issue 29 item 4).

Sixteen spellings of "PaySvc" that render as "PaySvc": the ones hiding an
invisible or direction-changing character are refused (nothing written), the
compatibility spellings share its key, and the look-alikes (another script's
letters) resolve to it by their confusable skeleton, which the answer and the
audit feed say. The console isolates text others wrote.
"""

import json

import pytest
from django.apps import apps
from django.db import connection
from django.template import Context, Template
from django.test import Client

from accounts.actions import issue_token
from api.mcp.server import OPERATIONS
from memories.core.normalize import name_skeleton
from memories.store.errors import Rejected
from memories.store.lookups import find_entity
from memories.store.models import AuditEntry, Conflict, Entity, Fact
from memories.write.actions import assert_fact
from memories.write.ingest import import_lines
from tests.racing import race

# The sixteen spellings: (spelling, what becomes of it).
REFUSED, SAME_KEY, LOOK_ALIKE = "refused", "same key", "look-alike"
SPELLINGS = [
    ("PaySvc", SAME_KEY),
    ("Pay\u200bSvc", REFUSED),  # zero-width space
    ("\ufeffPaySvc", REFUSED),  # byte-order mark
    ("\u202ePaySvc", REFUSED),  # right-to-left override
    ("Pay\U000e0041Svc", REFUSED),  # a tag character
    ("PaySvc\ufe0f", REFUSED),  # a variation selector
    ("Pay\u00adSvc", REFUSED),  # soft hyphen
    ("P\u0430ySvc", LOOK_ALIKE),  # Cyrillic a (U+0430)
    ("\u0420\u0430ySvc", LOOK_ALIKE),  # Cyrillic Er and a
    ("PaySv\u0441", LOOK_ALIKE),  # Cyrillic es
    ("\u03a1aySvc", LOOK_ALIKE),  # Greek Rho
    ("Pay\u0405vc", LOOK_ALIKE),  # Cyrillic Dze
    ("P\u0251ySvc", LOOK_ALIKE),  # Latin alpha (U+0251)
    ("\uff30\uff41\uff59\uff33\uff56\uff43", SAME_KEY),  # full-width
    ("\U0001d40f\U0001d41a\U0001d432\U0001d412\U0001d42f\U0001d41c", SAME_KEY),  # math bold
    ("paysvc", SAME_KEY),
]


def write(actor, subject, obj="2.0.0", source="code", predicate="core/has-version", **extra):
    return assert_fact(
        actor=actor,
        data={
            "scope": "project",
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "source_type": source,
            **extra,
        },
    )


# --- the skeleton (pure) -------------------------------------------------------------


@pytest.mark.parametrize("spelling", [spelling for spelling, fate in SPELLINGS if fate != REFUSED])
def test_every_visible_spelling_of_paysvc_has_its_skeleton(spelling):
    assert name_skeleton(spelling) == name_skeleton("PaySvc")


@pytest.mark.parametrize("other", ["PayService", "Pay Svc", "PaySvc2", "ПейСвк", "Bolt"])
def test_names_that_look_different_have_different_skeletons(other):
    assert name_skeleton(other) != name_skeleton("PaySvc")


def test_case_and_spacing_noise_collapse_in_the_skeleton_as_in_the_key():
    assert name_skeleton("  PAY   svc ") == name_skeleton("pay svc")


# --- the write path ------------------------------------------------------------------


def test_sixteen_spellings_of_paysvc_end_as_one_entity_and_one_fact(member, scope):
    fates = []
    for spelling, _ in SPELLINGS:
        try:
            result = write(member, spelling)
        except Rejected as refused:
            assert refused.field == "subject"
            fates.append(REFUSED)
            continue
        assert result.status in ("created", "reinforced")
        fates.append(LOOK_ALIKE if result.look_alikes else SAME_KEY)
        if result.look_alikes:
            [alike] = result.look_alikes
            assert (alike.role, alike.given, alike.entity_name) == ("subject", spelling, "PaySvc")
    assert fates == [fate for _, fate in SPELLINGS]
    assert list(Entity.objects.filter(scope=scope).values_list("name", flat=True)) == ["PaySvc"]
    assert Fact.objects.count() == 1


def test_a_look_alike_subject_with_a_contradicting_value_opens_a_conflict(member, scope):
    write(member, "PaySvc", "2.0.0", source="code", confidence=0.95)
    clash = write(member, "P\u0430ySvc", "3.0.0", source="agent-note")
    assert (clash.status, clash.reason) == ("flagged", "outranked")
    assert clash.fact.subject.name == "PaySvc"
    assert Conflict.objects.open().count() == 1
    entry = AuditEntry.objects.get(action="resolved-name")
    assert (entry.target_type, entry.target_id) == ("entity", str(clash.fact.subject_id))
    assert entry.after == {
        "entity": "PaySvc",
        "given": "P\u0430ySvc",
        "role": "subject",
        "fact": str(clash.fact.pk),
    }
    assert entry.actor_id == member.pk
    assert "UTS #39" in entry.rule


def test_an_entity_object_that_looks_like_an_entity_is_that_entity(member, scope):
    first = write(member, "api", "Postgres", predicate="core/depends-on", object_kind="entity")
    again = write(
        member, "api", "P\u043estgres", predicate="core/depends-on", object_kind="entity"
    )  # Cyrillic o (U+043E)
    assert again.status == "reinforced"
    assert again.fact.pk == first.fact.pk
    assert [(a.role, a.entity_name) for a in again.look_alikes] == [("object", "Postgres")]
    assert Entity.objects.filter(scope=scope).count() == 2  # api, Postgres
    assert AuditEntry.objects.filter(action="resolved-name").count() == 1


def test_a_look_alike_of_an_alias_resolves_to_its_entity(member, scope):
    entity = Entity(scope=scope, name="Payments core", aliases=["PaySvc"])
    entity.set_keys()
    entity.save()
    result = write(member, "P\u0430ySvc")
    assert result.fact.subject_id == entity.pk
    assert find_entity(scope, "P\u0430ySvc") == entity


def test_a_mixed_script_name_with_no_look_alike_is_a_new_entity(member, scope):
    write(member, "PaySvc")
    result = write(member, "Pay\u0436Svc")  # a Cyrillic zhe: looks like nothing here
    assert result.look_alikes == []
    assert Entity.objects.filter(scope=scope).count() == 2


def test_a_look_alike_in_another_scope_is_not_that_entity(member, scope, other_scope):
    other_scope.members.add(member)
    write(member, "PaySvc")
    result = assert_fact(
        actor=member,
        data={
            "scope": "elsewhere",
            "subject": "P\u0430ySvc",
            "predicate": "core/has-version",
            "object": "1.0.0",
            "source_type": "code",
        },
    )
    assert result.look_alikes == []
    assert result.fact.subject.scope_id == other_scope.pk


def test_the_api_answer_names_the_entity_a_look_alike_resolved_to(member, scope):
    write(member, "PaySvc")
    _token, secret = issue_token(actor=member, name="tests")
    answer = Client().post(
        "/api/v1/facts",
        json.dumps(
            {
                "scope": "project",
                "subject": "P\u0430ySvc",
                "predicate": "core/has-version",
                "object": "2.0.0",
                "source_type": "code",
            }
        ),
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["status"] == "reinforced"
    assert body["look_alikes"] == [{"role": "subject", "given": "P\u0430ySvc", "entity": "PaySvc"}]
    plain = write(member, "PaySvc")
    assert plain.look_alikes == []


def test_the_mcp_answer_tells_the_agent_which_entity_it_wrote_about(member, scope):
    from api.schemas import FactIn

    write(member, "PaySvc")
    operation = next(op for op in OPERATIONS if op.name == "assert_fact")
    body = operation.run(
        member,
        FactIn(
            scope="project",
            subject="\u0420\u0430ySvc",
            predicate="core/has-version",
            object="2.0.0",
            source_type="code",
        ),
    )
    assert body["look_alikes"][0]["entity"] == "PaySvc"
    assert "“PaySvc”" in body["instruction"]


# --- concurrency ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_look_alike_first_mentions_racing_end_with_one_entity(scope, member):
    spellings = [spelling for spelling, fate in SPELLINGS if fate != REFUSED]
    results = race(lambda spelling: write(member, spelling).status, spellings)
    assert set(results) <= {"created", "reinforced"}
    assert Entity.objects.filter(scope=scope).count() == 1
    assert Fact.objects.filter(t_invalid__isnull=True).count() == 1


# --- the import ----------------------------------------------------------------------


def _line(subject, obj="2.0.0"):
    return json.dumps(
        {
            "scope": "project",
            "subject": subject,
            "predicate": "core/has-version",
            "object": obj,
            "source_type": "code",
        }
    )


def test_an_import_resolves_look_alikes_as_the_write_path_does(member, scope):
    write(member, "Bolt")
    report = import_lines(
        [_line(spelling) for spelling, _ in SPELLINGS] + [_line("B\u043elt", "9.9.9")],
        actor=member,
    )
    fates = [o.status == "rejected" for o in report.outcomes]
    assert fates == [fate == REFUSED for fate, _ in ((f, s) for s, f in SPELLINGS)] + [False]
    assert sorted(Entity.objects.filter(scope=scope).values_list("name", flat=True)) == [
        "Bolt",
        "PaySvc",
    ]
    resolved = AuditEntry.objects.filter(action="resolved-name")
    assert sorted(entry.after["given"] for entry in resolved) == sorted(
        [spelling for spelling, fate in SPELLINGS if fate == LOOK_ALIKE] + ["B\u043elt"]
    )


# --- existing rows -------------------------------------------------------------------


def test_the_migration_gives_existing_entities_their_skeletons(scope):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memories_entity (scope_id, name, key, type, aliases, alias_keys,"
            " created_at) VALUES (%s, 'PaySvc', 'paysvc', '', '{Payments}', '{payments}', now())",
            [scope.pk],
        )
    assert find_entity(scope, "P\u0430ySvc") is None  # no skeleton yet
    fill = __import__(
        "memories.migrations.0024_entity_skeletons", fromlist=["fill_skeletons"]
    ).fill_skeletons
    fill(apps, None)
    entity = Entity.objects.get(scope=scope)
    assert (entity.skeleton, entity.alias_skeletons) == (
        name_skeleton("PaySvc"),
        [name_skeleton("Payments")],
    )
    assert find_entity(scope, "P\u0430ySvc") == entity
    assert find_entity(scope, "P\u0430yments") == entity


# --- the console ---------------------------------------------------------------------


def test_the_isolating_filters_escape_and_isolate():
    rendered = Template("{{ value|bdi }}|{{ names|bdi_join:', ' }}|{{ value|fsi }}").render(
        Context({"value": "<b>גרסה</b> 2.1", "names": ["א", "b"]})
    )
    assert rendered == (
        "<bdi>&lt;b&gt;גרסה&lt;/b&gt; 2.1</bdi>|<bdi>א</bdi>, <bdi>b</bdi>"
        "|\u2068&lt;b&gt;גרסה&lt;/b&gt; 2.1\u2069"
    )


def test_a_right_to_left_value_and_name_render_isolated_on_the_console(member, scope, steward):
    fact = write(member, "שירות תשלומים", "גרסה 2.1.0").fact
    client = Client()
    client.force_login(steward)
    page = client.get(f"/facts/{fact.pk}/").content.decode()
    assert "<bdi>גרסה 2.1.0</bdi>" in page
    assert "<bdi>שירות תשלומים</bdi>" in page
    listing = client.get("/facts/").content.decode()
    assert "<bdi>גרסה 2.1.0</bdi>" in listing
    subject = client.get(f"/subjects/{fact.subject_id}/").content.decode()
    assert "<h1><bdi>שירות תשלומים</bdi></h1>" in subject


# --- the doctor ----------------------------------------------------------------------


def test_the_doctor_finds_look_alike_entities_until_a_steward_merges_them(scope, steward):
    from memories.maintenance.doctor import look_alike_entities
    from memories.write.merges import merge_entities

    made = []
    for name in ("PaySvc", "P\u0430ySvc", "Bolt"):  # made by hand: no resolution
        entity = Entity(scope=scope, name=name)
        entity.set_keys()
        entity.save()
        made.append(entity)
    [violation] = look_alike_entities(None, 10)
    assert violation.check == "look-alike-entities"
    assert violation.ids == (str(made[0].pk), str(made[1].pk))
    merge_entities(actor=steward, entity_id=made[1].pk, into_id=made[0].pk, reason="one service")
    assert look_alike_entities(None, 10) == []


def test_the_audit_feed_names_the_letters_a_look_alike_was_spelled_with(member, steward):
    write(member, "PaySvc")
    write(member, "P\u0430ySvc")
    client = Client()
    client.force_login(steward)
    page = client.get("/audit/", {"action": "resolved-name"}).content.decode()
    assert "(spelled with U+0430 CYRILLIC SMALL LETTER A) as the entity" in page
    assert "<bdi>P\u0430ySvc</bdi>" in page
