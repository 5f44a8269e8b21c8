"""The doctor (``manage.py doctor``): every invariant the database does not enforce by itself.

The checks of the store and its workers are ``memories.maintenance.doctor``'s. The one
here compares the admission state PostgreSQL derives from the records with
the pure fold of those records (``admissions.status``), which stands above
``memories``; so the whole doctor runs from here, the top of the domain,
and the worker that runs it hourly is started from here too
(``admissions.worker``).
"""

from datetime import datetime
from typing import Any
from uuid import UUID

from django.db.models import Exists, OuterRef
from django.tasks import task
from django.utils import timezone

from admissions import status as fold
from admissions.models import FactVerdict, OpenChallenge, Record, Role, ScopeTally
from admissions.selectors import scope_records, scope_statuses, share_percent
from admissions.status import PlainRecord
from memories.maintenance.doctor import (
    ENTITY_CHECKS,
    STORE_CHECKS,
    WORKER_CHECKS,
    Check,
    Examination,
    Violation,
    examine,
    record_examination,
)
from memories.store.models import AdmittedFact, Scope

ADMISSION_STATE = "admission-state"

_REBUILD = (
    "The records are the truth and these tables PostgreSQL's copy of them: rebuild it with "
    "SELECT admissions_rebuild_state(); (in manage.py dbshell), then run the doctor again. "
    "Something wrote the derived tables without going through the record trigger."
)


def admission_state(now: datetime, limit: int) -> list[Violation]:
    """Derived admission state that disagrees with the fold of its scope's records.

    For each scope with records: every fact's status as the derived state
    gives it (``scope_statuses``) and its latest verdict record
    (``FactVerdict``) against the fold's; the open challenges
    (``OpenChallenge``: every challenge no refutation names, with its
    ``evidenced`` and ``fact_admitted`` flags) against the records'; and A
    (``ScopeTally``) against the fold's count of admitted facts; and the
    facts the write path takes as admitted (memories' ``AdmittedFact``). The fold
    reads the scope's whole history: this check costs what the history does.
    """
    violations: list[Violation] = []
    scopes = Scope.objects.filter(Exists(Record.objects.filter(scope_id=OuterRef("pk"))))
    for scope in scopes.order_by("pk"):
        violations += _drift(scope)
        if len(violations) >= limit:
            break
    return violations


def _drift(scope: Scope) -> list[Violation]:
    records = list(scope_records(scope))
    folded = fold.derive(records, share_percent=share_percent())
    violations = []

    derived_status = scope_statuses(scope)
    derived_verdict = dict(
        FactVerdict.objects.filter(scope=scope).values_list("fact_id", "record_id")
    )
    # What the write path a layer below reads of the verdicts (issue 29 item 8).
    derived_admitted = set(
        AdmittedFact.objects.filter(scope=scope).values_list("fact_id", flat=True)
    )
    facts = (
        set(folded.statuses)
        | {UUID(key) for key in derived_status}
        | set(derived_verdict)
        | derived_admitted
    )
    for fact_id in sorted(facts, key=str):
        wanted = folded.status_of(fact_id)
        differences = []
        got = derived_status.get(str(fact_id), "candidate")
        if got != wanted.status:
            differences.append(f"status {got}, not {wanted.status}")
        # Only an admitted fact can be suspended, so both are admitted by their verdict.
        admitted = wanted.status in ("admitted", "suspended")
        if (fact_id in derived_admitted) != admitted:
            said = "admitted" if fact_id in derived_admitted else "a candidate"
            differences.append(
                f"the write path taking it as {said} (memories_admittedfact), though the "
                f"records {'admit' if admitted else 'do not admit'} it"
            )
        if derived_verdict.get(fact_id) != wanted.verdict_record:
            differences.append(
                f"latest verdict record {derived_verdict.get(fact_id)}, not {wanted.verdict_record}"
            )
        if differences:
            violations.append(
                Violation(
                    ADMISSION_STATE,
                    f"fact {fact_id} in scope {scope.pk}: the derived state gives "
                    f"{' and '.join(differences)} (the fold of its records)",
                    (str(fact_id),),
                    _REBUILD,
                )
            )

    expected = _open_challenges(records, folded)
    derived_open = {
        challenge_id: (evidenced, fact_admitted)
        for challenge_id, evidenced, fact_admitted in OpenChallenge.objects.filter(
            scope=scope
        ).values_list("challenge_id", "evidenced", "fact_admitted")
    }
    for challenge_id in sorted(expected.keys() | derived_open.keys(), key=str):
        want, got = expected.get(challenge_id), derived_open.get(challenge_id)
        if want == got:
            continue
        violations.append(
            Violation(
                ADMISSION_STATE,
                f"challenge {challenge_id} in scope {scope.pk}: the derived state has it "
                f"{_open_words(got)}, the records {_open_words(want)}",
                (str(challenge_id),),
                _REBUILD,
            )
        )

    tally = ScopeTally.objects.filter(scope=scope).values_list("admitted", flat=True).first()
    if (tally or 0) != folded.admitted_count:
        violations.append(
            Violation(
                ADMISSION_STATE,
                f"scope {scope.pk}: the derived count of admitted facts is {tally}, "
                f"the records admit {folded.admitted_count}",
                (str(scope.pk),),
                _REBUILD,
            )
        )
    return violations


def _open_challenges(records: list[PlainRecord], folded: fold.Fold) -> dict[UUID, Any]:
    """Each challenge no refutation names, with (evidenced, its fact's latest verdict admitted)."""
    refuted = {record.challenge_id for record in records if record.role == Role.REFUTATION}
    return {
        record.id: (
            record.evidenced,
            folded.status_of(record.fact_id).status in ("admitted", "suspended"),
        )
        for record in records
        if record.role == Role.CHALLENGE and record.id not in refuted
    }


def _open_words(flags: tuple[bool, bool] | None) -> str:
    if flags is None:
        return "closed"
    evidenced, fact_admitted = flags
    return (
        f"open ({'evidenced' if evidenced else 'unevidenced'}, "
        f"fact {'admitted' if fact_admitted else 'not admitted'})"
    )


# Every check, in the order a run lists them.
CHECKS: tuple[Check, ...] = (
    *STORE_CHECKS,
    Check(
        ADMISSION_STATE,
        "the derived admission state agrees with the fold of the records",
        admission_state,
    ),
    *ENTITY_CHECKS,
    *WORKER_CHECKS,
)


def run_doctor(*, now: datetime | None = None) -> Examination:
    """Run every check as of ``now`` (the clock by default) and record the run."""
    examination = examine(CHECKS, now=now or timezone.now(), clock=timezone.now)
    record_examination(examination)
    return examination


@task
def doctor_task() -> dict[str, Any]:
    """The doctor as a periodic job, so the Health page shows a recent run."""
    examination = run_doctor()
    return {"violations": len(examination.violations), "capped": list(examination.capped)}
