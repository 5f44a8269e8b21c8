"""An agent's view of the API: a token per account, JSON in and out."""

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from accounts.actions import issue_token


class Agent:
    """A client that presents one account's bearer token, and nothing else."""

    def __init__(self, secret: str | None) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {secret}"} if secret else {}

    def get(self, path: str, **query: Any):
        return self.client.get(f"/api/v1{path}", query, headers=self.headers)

    def post(self, path: str, body: Any = None, *, raw: str | bytes | None = None):
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post(
            f"/api/v1{path}", data, content_type="application/json", headers=self.headers
        )


@pytest.fixture
def agent_for(db):
    def make(user) -> Agent:
        _token, secret = issue_token(actor=user, name="tests")
        return Agent(secret)

    return make


@pytest.fixture
def anonymous() -> Agent:
    return Agent(None)


def fact_body(**fields: Any) -> dict[str, Any]:
    return {
        "scope": "project",
        "subject": "AuthService",
        "predicate": "core/has-version",
        "object": "2.0.0",
        "source_type": "code",
        **fields,
    }


# --- the live site, for the MCP tests over HTTP -----------------------------------


@pytest.fixture(scope="module")
def live():
    """The whole site (Django and /mcp/) under uvicorn, once per test module."""
    # Imported here: the SDK's client and uvicorn are for the MCP modules only.
    from tests.api.mcp_client import live_site

    with live_site() as running:
        yield running


@pytest.fixture
def site(live) -> Iterator[str]:
    """The live site's base URL; the test's database is flushed only once it is idle."""
    yield live.url
    live.settle()


@pytest.fixture
def mcp_url(site) -> str:
    return f"{site}/mcp/"
