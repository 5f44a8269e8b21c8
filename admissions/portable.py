"""The admissions part of an export (see ``memories.portability.exports``): every record, as it was.

Records are append-only; a restore INSERTs them (which the database allows),
and PostgreSQL's triggers rebuild the derived state as each one goes in, so
every status after a restore is the status before. Challenges and verdicts
come before refutations, since a refutation's composite foreign key needs
the challenge it names.
"""

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import Case, IntegerField, Value, When

from admissions.models import Record, Role

CHUNK = 2_000


class Records:
    kinds = ("record",)

    def export(self, scopes, names) -> Iterator[dict[str, Any]]:
        rows = (
            Record.objects.filter(scope__in=scopes)
            .annotate(
                refutes=Case(
                    When(role=Role.REFUTATION, then=Value(1)),
                    default=Value(0),
                    output_field=IntegerField(),
                )
            )
            .order_by("refutes", "inserted_at", "id")
        )
        for r in rows.iterator(chunk_size=CHUNK):
            yield {
                "kind": "record",
                "id": str(r.pk),
                "scope": names.scopes[r.scope_id],
                "fact": str(r.fact_id),
                "role": r.role,
                "verdict": r.verdict,
                "ground": r.ground,
                "evidence": r.evidence,
                "challenge": str(r.challenge_id) if r.challenge_id else None,
                "author": names.user(r.author_id),
                "inserted_at": r.inserted_at,
            }

    def restore(self, kind, item, into) -> None:
        into.queue(
            Record(
                id=item["id"],
                scope_id=into.scopes[item["scope"]],
                fact_id=item["fact"],
                role=item["role"],
                verdict=item["verdict"],
                ground=item["ground"],
                evidence=item["evidence"],
                challenge_id=item["challenge"],
                challenge_role=Role.CHALLENGE if item["role"] == Role.REFUTATION else None,
                author_id=into.user(item["author"]),
                inserted_at=datetime.fromisoformat(item["inserted_at"]),
            )
        )


SECTIONS = [Records()]
