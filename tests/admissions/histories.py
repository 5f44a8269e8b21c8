"""Building record histories for the pure fold, readably, in tests."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from uuid import UUID

from admissions.status import PlainRecord

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
STEWARD = 1


def fact(n: int) -> UUID:
    return UUID(int=1_000_000 + n)


def minute(n: float) -> datetime:
    return T0 + timedelta(minutes=n)


@dataclass
class History:
    """Records appended in the order written; ids count up unless given."""

    records: list[PlainRecord] = field(default_factory=list)
    next_id: int = 1

    def _id(self, given: int | None) -> UUID:
        if given is not None:
            return UUID(int=given)
        self.next_id += 1
        return UUID(int=10_000 + self.next_id)

    def verdict(
        self, target: UUID, verdict: str = "admitted", at: float = 0, by: int = STEWARD, id=None
    ) -> UUID:
        record = PlainRecord(
            id=self._id(id),
            fact_id=target,
            role="admission",
            author_id=by,
            inserted_at=minute(at),
            verdict=verdict,  # type: ignore[arg-type]
            author_name=f"user{by}",
        )
        self.records.append(record)
        return record.id

    def admit(self, *targets: UUID, at: float = 0) -> None:
        for target in targets:
            self.verdict(target, "admitted", at=at)

    def challenge(self, target: UUID, at: float, by: int, evidenced: bool = True, id=None) -> UUID:
        record = PlainRecord(
            id=self._id(id),
            fact_id=target,
            role="challenge",
            author_id=by,
            inserted_at=minute(at),
            evidenced=evidenced,
            author_name=f"user{by}",
        )
        self.records.append(record)
        return record.id

    def refute(self, challenge: UUID, at: float, by: int = STEWARD, id=None) -> UUID:
        target = next(r.fact_id for r in self.records if r.id == challenge)
        record = PlainRecord(
            id=self._id(id),
            fact_id=target,
            role="refutation",
            author_id=by,
            inserted_at=minute(at),
            challenge_id=challenge,
            author_name=f"user{by}",
        )
        self.records.append(record)
        return record.id
