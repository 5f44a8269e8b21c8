"""What PostgreSQL itself refuses: the record table is append-only and well-formed.

Each test writes or changes rows behind the actions' back (raw SQL or the
ORM), because the point is that the database holds even when Python does not.
"""

import uuid

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from admissions.actions import file_challenge, record_verdict
from admissions.models import FactVerdict, OpenChallenge, Record, Role, ScopeTally
from tests.admissions.conftest import write_fact
from tests.conftest import at

pytestmark = pytest.mark.django_db

T = at("2026-03-01T12:00:00")


def insert(**fields) -> Record:
    """One record straight into the table, inside a savepoint so a refusal is contained."""
    fields.setdefault("inserted_at", T)
    fields.setdefault("ground", "because")
    if fields.get("role") == Role.REFUTATION:
        fields.setdefault("challenge_role", Role.CHALLENGE)
    with transaction.atomic():
        return Record.objects.create(**fields)


def refused(sql: str) -> str:
    # The test's own transaction holds deferred foreign-key checks, and
    # PostgreSQL will not TRUNCATE a table with pending trigger events: run
    # them first so the refusal seen is the one under test.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    with pytest.raises(DatabaseError) as error, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql)
    return str(error.value)


@pytest.fixture
def admission(steward, system_fact) -> Record:
    return record_verdict(
        actor=steward, fact_id=system_fact.pk, verdict="admitted", ground="ok"
    ).record


# --- append-only ----------------------------------------------------------------------


def test_raw_update_of_a_record_is_refused(admission):
    message = refused("UPDATE admissions_record SET ground = 'rewritten'")
    assert "Cannot update" in message
    assert Record.objects.get().ground == "ok"


def test_raw_update_through_the_orm_is_refused(admission):
    with pytest.raises(DatabaseError), transaction.atomic():
        Record.objects.filter(pk=admission.pk).update(verdict="rejected")


def test_raw_delete_of_a_record_is_refused(admission):
    assert "Cannot" in refused("DELETE FROM admissions_record")
    assert Record.objects.count() == 1


def test_truncate_of_the_record_table_is_refused(admission):
    # The test database allows TRUNCATE for Django's flush (tests/conftest.py);
    # an ordinary session does not have the setting, as here.
    message = refused(
        "SET LOCAL claimgraph.allow_truncate = 'off'; TRUNCATE admissions_record CASCADE"
    )
    assert "append-only" in message
    assert Record.objects.count() == 1


def test_truncate_cascading_from_the_facts_is_refused(admission):
    message = refused("SET LOCAL claimgraph.allow_truncate = 'off'; TRUNCATE memories_fact CASCADE")
    assert "append-only" in message


def test_a_role_without_write_privileges_cannot_change_records_even_with_the_escape_hatch(
    admission,
):
    # How an operator runs the app (docs/admissions.md): as a role granted
    # SELECT and INSERT on the record table and nothing more. The role is
    # created inside this test's transaction and rolled back with it.
    role = f"claimgraph_app_{uuid.uuid4().hex[:12]}"
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {role} NOLOGIN")
        cursor.execute(f"GRANT SELECT, INSERT ON admissions_record TO {role}")
    for statement in (
        "UPDATE admissions_record SET ground = 'x'",
        "DELETE FROM admissions_record",
        "TRUNCATE admissions_record",
    ):
        message = refused(
            f"SET LOCAL claimgraph.allow_truncate = 'on'; SET LOCAL ROLE {role}; {statement}"
        )
        assert "permission denied" in message
    assert Record.objects.count() == 1


# --- what a record may point at ---------------------------------------------------------


def test_a_record_on_a_user_fact_is_refused_by_the_database(steward, user_fact):
    with pytest.raises(IntegrityError):
        insert(
            scope=user_fact.scope,
            fact=user_fact,
            role=Role.ADMISSION,
            verdict="admitted",
            author=steward,
        )


def test_a_record_claiming_a_user_bucket_is_refused_by_the_database(steward, user_fact):
    with pytest.raises(IntegrityError):
        insert(
            scope=user_fact.scope,
            fact=user_fact,
            fact_bucket="user",
            role=Role.CHALLENGE,
            author=steward,
        )


def test_a_record_in_another_scope_than_its_fact_is_refused(steward, system_fact, other_scope):
    with pytest.raises(IntegrityError):
        insert(
            scope=other_scope,
            fact=system_fact,
            role=Role.ADMISSION,
            verdict="admitted",
            author=steward,
        )


def test_a_refutation_naming_another_facts_challenge_is_refused(author, steward, system_fact):
    other = write_fact(author, "postgres")
    challenge = file_challenge(
        actor=author, fact_id=other.pk, ground="wrong", evidence=["ticket-1"]
    )
    with pytest.raises(IntegrityError):
        insert(
            scope=system_fact.scope,
            fact=system_fact,
            role=Role.REFUTATION,
            challenge=challenge,
            author=steward,
        )
    assert not Record.objects.refutations().exists()


def test_a_refutation_naming_an_admission_is_refused(steward, admission, system_fact):
    with pytest.raises(IntegrityError):
        insert(
            scope=system_fact.scope,
            fact=system_fact,
            role=Role.REFUTATION,
            challenge=admission,
            author=steward,
        )


# --- the shape of each role ---------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"role": Role.CHALLENGE, "evidence": []}, id="empty-evidence"),
        pytest.param({"role": Role.CHALLENGE, "evidence": {"ref": "x"}}, id="evidence-not-list"),
        pytest.param(
            {"role": Role.ADMISSION, "verdict": "admitted", "evidence": [{"ref": "x"}]},
            id="evidence-on-admission",
        ),
        pytest.param({"role": Role.ADMISSION}, id="admission-without-verdict"),
        pytest.param({"role": Role.ADMISSION, "verdict": "maybe"}, id="unknown-verdict"),
        pytest.param({"role": Role.CHALLENGE, "verdict": "admitted"}, id="verdict-on-challenge"),
        pytest.param({"role": Role.REFUTATION}, id="refutation-naming-nothing"),
        pytest.param({"role": "endorsement"}, id="unknown-role"),
        pytest.param({"role": Role.CHALLENGE, "ground": "   "}, id="blank-ground"),
    ],
)
def test_malformed_records_are_refused_by_the_database(fields, steward, system_fact):
    with pytest.raises(IntegrityError):
        insert(scope=system_fact.scope, fact=system_fact, author=steward, **fields)
    assert not Record.objects.exists()


def test_a_challenge_naming_a_challenge_is_refused(steward, system_fact):
    challenge = insert(
        scope=system_fact.scope, fact=system_fact, role=Role.CHALLENGE, author=steward
    )
    with pytest.raises(IntegrityError):
        insert(
            scope=system_fact.scope,
            fact=system_fact,
            role=Role.CHALLENGE,
            challenge=challenge,
            challenge_role=Role.CHALLENGE,
            author=steward,
        )


# --- the derived state follows every insert ----------------------------------------------


def test_records_inserted_behind_the_actions_back_keep_the_derived_state_right(
    steward, member, system_fact
):
    verdict = insert(
        scope=system_fact.scope,
        fact=system_fact,
        role=Role.ADMISSION,
        verdict="admitted",
        author=steward,
    )
    assert FactVerdict.objects.get(fact=system_fact).record_id == verdict.pk
    assert ScopeTally.objects.get(scope=system_fact.scope).admitted == 1

    challenge = insert(
        scope=system_fact.scope,
        fact=system_fact,
        role=Role.CHALLENGE,
        evidence=[{"ref": "ticket-9", "quote": ""}],
        author=member,
    )
    assert list(OpenChallenge.objects.values_list("challenge_id", flat=True)) == [challenge.pk]
    insert(
        scope=system_fact.scope,
        fact=system_fact,
        role=Role.REFUTATION,
        challenge=challenge,
        author=steward,
    )
    assert not OpenChallenge.objects.exists()

    # A verdict dated before the standing one is on the record but does not decide.
    insert(
        scope=system_fact.scope,
        fact=system_fact,
        role=Role.ADMISSION,
        verdict="rejected",
        inserted_at=at("2026-01-01T00:00:00"),
        author=steward,
    )
    assert FactVerdict.objects.get(fact=system_fact).verdict == "admitted"
    assert ScopeTally.objects.get(scope=system_fact.scope).admitted == 1


def test_the_derived_state_can_be_rebuilt_from_the_records(steward, member, system_fact):
    record_verdict(actor=steward, fact_id=system_fact.pk, verdict="admitted", ground="ok")
    file_challenge(actor=member, fact_id=system_fact.pk, ground="no", evidence=["ref"])

    def snapshot():
        return (
            list(FactVerdict.objects.values_list("fact_id", "verdict", "record_id")),
            list(OpenChallenge.objects.values_list("challenge_id", "author_id")),
            list(ScopeTally.objects.values_list("scope_id", "admitted")),
        )

    before = snapshot()
    with connection.cursor() as cursor:
        cursor.execute("SELECT admissions_rebuild_state()")
    assert snapshot() == before
    assert before[0] and before[1] and before[2]


def test_every_open_challenge_is_in_the_derived_state_flagged_for_the_rules(
    steward, member, system_fact
):
    scope, fact = system_fact.scope, system_fact
    plain = insert(scope=scope, fact=fact, role=Role.CHALLENGE, author=member)
    evidenced = insert(
        scope=scope,
        fact=fact,
        role=Role.CHALLENGE,
        evidence=[{"ref": "ticket-9", "quote": ""}],
        author=member,
    )

    def flags():
        return sorted(
            OpenChallenge.objects.values_list("challenge_id", "evidenced", "fact_admitted")
        )

    # A candidate: the challenges are open and count for nothing yet (rule 2).
    assert flags() == sorted([(plain.pk, False, False), (evidenced.pk, True, False)])
    assert set(Record.objects.open()) == {plain, evidenced}
    assert not Record.objects.resolved().exists()

    # The fact's verdict carries over to its open challenges, both ways.
    admitted = insert(
        scope=scope, fact=fact, role=Role.ADMISSION, verdict="admitted", author=steward
    )
    assert flags() == sorted([(plain.pk, False, True), (evidenced.pk, True, True)])
    insert(
        scope=scope,
        fact=fact,
        role=Role.ADMISSION,
        verdict="rejected",
        inserted_at=at("2026-03-02T12:00:00"),
        author=steward,
    )
    assert flags() == sorted([(plain.pk, False, False), (evidenced.pk, True, False)])
    # A backdated verdict decides nothing and changes no flag.
    insert(
        scope=scope,
        fact=fact,
        role=Role.ADMISSION,
        verdict="admitted",
        inserted_at=at("2026-01-01T00:00:00"),
        author=steward,
    )
    assert flags() == sorted([(plain.pk, False, False), (evidenced.pk, True, False)])
    assert FactVerdict.objects.get(fact=fact).record_id != admitted.pk

    # A refutation of the unevidenced challenge closes it like any other.
    insert(scope=scope, fact=fact, role=Role.REFUTATION, challenge=plain, author=steward)
    assert flags() == [(evidenced.pk, True, False)]
    assert list(Record.objects.open()) == [evidenced]
    assert list(Record.objects.resolved()) == [plain]
    assert {r.pk: r.refuted for r in Record.objects.challenges().with_refuted()} == {
        plain.pk: True,
        evidenced.pk: False,
    }
