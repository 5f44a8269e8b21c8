"""A scripted adjudicator for tests: one verdict for every claim set, and a count of requests."""

from dataclasses import dataclass, field

from memories.core.verdicts import Verdict
from memories.maintenance.adjudicator import AdjudicationRequest, Answer


@dataclass
class ScriptedAdjudicator:
    """Answers every request with one verdict kind and confidence; counts the requests."""

    kind: str
    confidence: float
    model: str = "test-model"
    consults_model: bool = True
    requests: list[AdjudicationRequest] = field(default_factory=list)

    def adjudicate(self, request: AdjudicationRequest) -> Answer:
        self.requests.append(request)
        verdict = Verdict(
            kind=self.kind,  # type: ignore[arg-type]
            confidence=self.confidence,
            rationale="scripted",
            claim_set_hash=request.claim_set_hash,
            model=self.model,
        )
        return Answer(verdict, raw_response="{}")
