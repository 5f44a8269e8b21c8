"""POST /episodes/{name}/withdraw (SPEC §12); the withdrawal itself is tested in tests/memories."""

import pytest

from memories.store.models import Withdrawal
from tests.memories.test_episodes import poisoned  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def test_the_api_withdraws_after_a_dry_run(poisoned, steward, member, agent_for):  # noqa: F811
    path = "/episodes/run-13/withdraw"
    refused = agent_for(member).post(path, {"scope": "project", "reason": "x"})
    assert refused.status_code == 403
    dry = agent_for(steward).post(path, {"scope": "project", "reason": "x", "dry_run": True})
    assert dry.status_code == 200
    assert dry.json()["withdrawal"] is None and len(dry.json()["withdrawn"]) == 5
    done = agent_for(steward).post(path, {"scope": "project", "reason": "poisoned"})
    assert done.status_code == 201
    body = done.json()
    assert body["withdrawal"] == str(Withdrawal.objects.get().pk)
    assert {f["object"] for f in body["reinstated"]} == {"2.0.0", "Y", "REST"}
    assert [k["fact"]["object"] for k in body["not_reinstated"]] == ["1"]
