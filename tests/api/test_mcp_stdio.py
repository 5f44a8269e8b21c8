"""MCP over stdio: ``manage.py mcp --user`` with the SDK's stdio client, acting as that account."""

import json
import select
import subprocess
import sys

import pytest

from admissions.actions import record_verdict
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body
from tests.api.mcp_client import ROOT, body, over_stdio, stdio_parameters
from tests.deadlines import PROCESS_DEADLINE

# Committed data, for the command's own connection to see it; the data
# migrations' rows come back after each flush.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


async def _each(session, calls):
    return [await session.call_tool(name, arguments) for name, arguments in calls]


def test_assert_and_recall_over_stdio_act_as_the_named_account(member, steward):
    standing = assert_fact(actor=steward, data=fact_body(object="2.0.0", confidence=0.95)).fact
    record_verdict(actor=steward, fact_id=standing.pk, verdict="admitted", ground="in the code")

    flagged, refused, truth, contested = over_stdio(
        member.username,
        lambda session: _each(
            session,
            [
                ("assert_fact", fact_body(object="3.0.0", source_type="agent-note")),
                ("assert_fact", fact_body(confidence="high")),
                ("recall", {"scope": "project"}),
                ("recall", {"scope": "project", "contested": True}),
            ],
        ),
    )
    answer = body(flagged)
    assert (answer["status"], answer["reason"]) == ("flagged", "outranked")
    assert [candidate["id"] for candidate in answer["candidates"]] == [str(standing.pk)]
    assert answer["fact"]["author"] == member.username
    assert "do not pick a winner" in flagged.content[0].text

    assert refused.is_error
    assert body(refused)["field"] == "confidence"

    assert [fact["object"] for fact in body(truth)["results"]] == ["2.0.0"]
    (slot,) = body(contested)["contested"]
    assert [value["fact"]["object"] for value in slot["values"]] == ["3.0.0"]


def test_stdio_sees_only_the_accounts_scopes(outsider, steward):
    fact = assert_fact(actor=steward, data=fact_body(object="2.0.0")).fact
    (hidden,) = over_stdio(
        outsider.username,
        lambda session: _each(session, [("get_fact", {"fact_id": str(fact.pk)})]),
    )
    assert body(hidden) == {"code": "not_found", "message": "fact not found"}


def test_the_command_refuses_an_unknown_account(db):
    parameters = stdio_parameters("nobody")
    finished = subprocess.run(
        [sys.executable, *parameters.args],
        cwd=ROOT,
        env=parameters.env,
        capture_output=True,
        text=True,
        timeout=PROCESS_DEADLINE,
        stdin=subprocess.DEVNULL,
    )
    assert finished.returncode != 0
    assert "no active account named 'nobody'" in finished.stderr


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("this is not json", -32700),
        ('{"jsonrpc": "2.0"', -32700),
        ("[1, 2]", -32600),
        # A request whose id is not an integer or a string was read as a
        # notification and dropped: answered -32600 as over HTTP.
        ('{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', -32600),
        ('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', -32600),
        ('{"jsonrpc": "2.0", "id": {"n": 1}, "method": "tools/list"}', -32600),
        ('{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', -32600),
        ('{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "recall"}}', -32600),
    ],
)
def test_a_line_that_is_not_json_rpc_gets_an_error_reply(member, line, code):
    # The SDK dropped such a line without a word: the client waited forever.
    parameters = stdio_parameters(member.username)
    with subprocess.Popen(
        [sys.executable, *parameters.args],
        cwd=ROOT,
        env=parameters.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as server:
        try:
            server.stdin.write(line + "\n")
            server.stdin.flush()
            ready, _, _ = select.select([server.stdout], [], [], PROCESS_DEADLINE)
            assert ready, "no reply"
            answer = json.loads(server.stdout.readline())
        finally:
            server.stdin.close()  # end of input: the server stops and lets go of the database
            try:
                server.wait(timeout=PROCESS_DEADLINE)
            except subprocess.TimeoutExpired:
                server.kill()
    assert (answer["jsonrpc"], answer["id"], answer["error"]["code"]) == ("2.0", None, code)
