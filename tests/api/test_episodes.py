"""POST /episodes/{name}/withdraw (SPEC §12); the withdrawal itself is tested in tests/memories."""

import pytest

from memories.store.models import Withdrawal
from memories.write.actions import assert_fact
from tests.memories.test_episodes import poisoned  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def test_the_api_withdraws_after_a_dry_run(poisoned, steward, member, agent_for):  # noqa: F811
    path = "/episodes/run-13/withdraw"
    refused = agent_for(member).post(path, {"scope": "project", "reason": "x"})
    assert refused.status_code == 403
    dry = agent_for(steward).post(path, {"scope": "project", "reason": "x", "dry_run": True})
    assert dry.status_code == 200
    assert dry.json()["withdrawal"] is None and len(dry.json()["withdrawn"]) == 5
    token = dry.json()["token"]
    done = agent_for(steward).post(
        path, {"scope": "project", "reason": "poisoned", "confirm": token}
    )
    assert done.status_code == 201
    body = done.json()
    assert body["withdrawal"] == str(Withdrawal.objects.get().pk)
    assert {f["object"] for f in body["reinstated"]} == {"2.0.0", "Y", "REST"}
    assert [k["fact"]["object"] for k in body["not_reinstated"]] == ["1"]


def test_a_confirmation_that_no_longer_matches_its_dry_run_is_409_with_the_new_one(
    poisoned,  # noqa: F811
    steward,
    agent_for,
):
    """Issue 29 §2: the agent writes into the episode after the dry run."""
    path = "/episodes/run-13/withdraw"
    as_steward = agent_for(steward)
    dry = as_steward.post(path, {"scope": "project", "reason": "x", "dry_run": True}).json()
    assert len(dry["withdrawn"]) == 5
    agent = poisoned["extra"].fact.author
    data = {"scope": "project", "subject": "queue", "predicate": "core/uses", "object": "sqs"}
    assert_fact(actor=agent, data={**data, "source_type": "code", "episode": "run-13"})

    refused = as_steward.post(path, {"scope": "project", "reason": "x", "confirm": dry["token"]})
    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "state_conflict"
    assert len(body["dry_run"]["withdrawn"]) == 6 and body["dry_run"]["dry_run"] is True
    assert not Withdrawal.objects.exists()
    unconfirmed = as_steward.post(path, {"scope": "project", "reason": "x"})
    assert unconfirmed.status_code == 409 and not Withdrawal.objects.exists()

    token = body["dry_run"]["token"]
    done = as_steward.post(path, {"scope": "project", "reason": "x", "confirm": token})
    assert done.status_code == 201 and len(done.json()["withdrawn"]) == 6
