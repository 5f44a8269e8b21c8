"""Connections and statements that would never finish are ended (Operations: Timeouts).

Each against a real served process (gunicorn with the production settings,
gunicorn.conf.py): a client that sends half its headers, or nothing, or
leaves a keep-alive connection idle, is disconnected within the bound; a web
request that waits on a lock held by another connection answers 503
``database_busy`` within the lock timeout and writes nothing. Management
commands (the task worker among them) run without those bounds.
"""

import argparse
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import psycopg
import pytest
from django.contrib.auth.models import Group
from django.db import connection

from accounts.actions import issue_token
from claimgraph_site.lib import http_protocol, serve
from memories.store.models import Fact, Scope
from memories.store.roles import STEWARDS_GROUP
from tests.conftest import make_user
from tests.deadlines import wait_until
from tests.processes import (
    ROOT,
    database_environment,
    free_port,
    listening,
    production_environment,
    web_server,
)

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BOUND_SECONDS = 2


@pytest.fixture
def server(tmp_path: Path):
    port = free_port()
    env = production_environment(
        CLAIMGRAPH_HEADER_TIMEOUT_SECONDS=str(BOUND_SECONDS),
        CLAIMGRAPH_KEEPALIVE_SECONDS=str(BOUND_SECONDS),
        CLAIMGRAPH_LOCK_TIMEOUT_MS="500",
        CLAIMGRAPH_API_WRITE_RATE="0",
        CLAIMGRAPH_LOG_LEVEL="ERROR",
    )
    process = web_server(port, env, tmp_path / "web.log", workers=1).start()
    try:
        wait_until(lambda: listening(port), what="the web server")
        yield port
    finally:
        process.stop()


def _seconds_until_closed(sock: socket.socket, limit: float) -> float:
    """How long until the server closes ``sock`` (reading and dropping what it sends)."""
    started = time.monotonic()
    sock.settimeout(limit)
    while True:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            pytest.fail(f"the connection was still open after {limit} s")
        except ConnectionResetError:
            data = b""
        if not data:
            return time.monotonic() - started


def test_a_connection_that_sends_half_its_headers_is_closed_within_the_bound(server: int):
    connections = []
    for _ in range(4):
        sock = socket.create_connection(("127.0.0.1", server))
        sock.sendall(b"GET /api/v1/truth HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
        connections.append(sock)
    try:
        for sock in connections:
            assert _seconds_until_closed(sock, BOUND_SECONDS + 10) < BOUND_SECONDS + 5
    finally:
        for sock in connections:
            sock.close()


def test_a_connection_that_sends_nothing_is_closed_within_the_bound(server: int):
    with socket.create_connection(("127.0.0.1", server)) as sock:
        assert _seconds_until_closed(sock, BOUND_SECONDS + 10) < BOUND_SECONDS + 5


def test_an_idle_keep_alive_connection_is_closed_after_its_answer(server: int):
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"GET /signin/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(10)
        assert sock.recv(65536).startswith(b"HTTP/1.1 ")
        assert _seconds_until_closed(sock, BOUND_SECONDS + 10) < BOUND_SECONDS + 5


def _json_rpc_result(answer: httpx2.Response) -> dict:
    text = answer.text
    if answer.headers["content-type"].startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)["result"]


def test_a_request_uvicorn_cannot_parse_gets_its_400_with_the_security_headers(server: int):
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"GET /\x01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(10)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head = answer.split(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 400")
    assert b"x-content-type-options: nosniff" in head
    assert b"x-frame-options: deny" in head
    assert b"content-security-policy: default-src 'none'" in head
    assert b"cache-control: no-store" in head


def _other_connection() -> psycopg.Connection:
    database = connection.settings_dict
    return psycopg.connect(
        host=database["HOST"] or None,
        port=database["PORT"] or None,
        dbname=database["NAME"],
        user=database["USER"] or None,
        password=database["PASSWORD"] or None,
    )


def test_a_web_request_waiting_on_a_lock_answers_503_database_busy_and_writes_nothing(
    server: int,
):
    scope = Scope.objects.create(name="locked")
    agent = make_user("waiting-agent")
    scope.members.add(agent)
    secret = issue_token(actor=agent, name="timeouts")[1]
    body = {
        "scope": "locked",
        "subject": "PaySvc",
        "predicate": "core/has-version",
        "object": "1.0",
        "source_type": "code",
    }
    with (
        httpx2.Client(headers={"Authorization": f"Bearer {secret}"}, timeout=60) as client,
        _other_connection() as holder,
    ):
        # Warm the worker up, so the timing below is the lock's alone.
        assert client.get(f"http://127.0.0.1:{server}/api/v1/truth").status_code < 500
        holder.execute(f'LOCK TABLE "{Fact._meta.db_table}" IN ACCESS EXCLUSIVE MODE')
        started = time.monotonic()
        answer = client.post(f"http://127.0.0.1:{server}/api/v1/facts", json=body)
        waited = time.monotonic() - started
        # The same over MCP: the tool's answer is the error, in the JSON API's shape.
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "assert_fact", "arguments": body},
        }
        over_mcp = client.post(
            f"http://127.0.0.1:{server}/mcp/",
            json=call,
            headers={
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-06-18",
            },
        )
        holder.rollback()
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "database_busy"
    assert "nothing written" in answer.json()["message"]
    assert answer.headers["Retry-After"]
    assert waited < 10
    assert over_mcp.status_code == 200, over_mcp.text
    result = _json_rpc_result(over_mcp)
    assert result["isError"] is True
    assert result["structuredContent"]["code"] == "database_busy"
    assert not Fact.objects.filter(scope=scope).exists()


@pytest.mark.parametrize("setting", ["statement_timeout", "lock_timeout"])
def test_management_commands_and_the_worker_run_without_the_web_bounds(setting: str):
    show = (
        "from django.db import connection\n"
        "with connection.cursor() as cursor:\n"
        f"    cursor.execute('SHOW {setting}')\n"
        "    print(cursor.fetchone()[0])\n"
    )
    env = database_environment(
        CLAIMGRAPH_LOCK_TIMEOUT_MS="500", CLAIMGRAPH_STATEMENT_TIMEOUT_MS="500"
    )
    # A test that imported the ASGI application marked this process as served;
    # a management command started from it is not.
    env.pop("CLAIMGRAPH_WEB_DATABASE_TIMEOUTS", None)
    shown = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", show],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert shown.stdout.split()[-1] == "0"


def test_a_console_page_waiting_on_a_lock_is_the_plain_503_page(client):
    steward = make_user("waiting-steward")
    steward.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    client.force_login(steward)
    with connection.cursor() as cursor:
        # What the served process sets on each connection (the settings).
        cursor.execute("SET lock_timeout = '300ms'")
    try:
        with _other_connection() as holder:
            holder.execute(f'LOCK TABLE "{Fact._meta.db_table}" IN ACCESS EXCLUSIVE MODE')
            answer = client.get("/")
            holder.rollback()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert answer.status_code == 503
    assert answer["Retry-After"]
    assert b"too busy" in answer.content
    assert answer["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("value", ["soon", "0", "-3"])
def test_a_bad_connection_bound_is_refused_by_name(monkeypatch, value: str):
    monkeypatch.setenv("CLAIMGRAPH_KEEPALIVE_SECONDS", value)
    with pytest.raises(ValueError, match="CLAIMGRAPH_KEEPALIVE_SECONDS"):
        http_protocol.keepalive_seconds()


def test_make_run_serves_with_the_same_connection_bounds(monkeypatch):
    monkeypatch.setenv("CLAIMGRAPH_KEEPALIVE_SECONDS", "7")
    options = argparse.Namespace(port=8000, reload=False, demo=False)
    web = next(command for command in serve.services(options) if command.name == "web server")
    assert web.argv[web.argv.index("--http") + 1] == (
        "claimgraph_site.lib.http_protocol:HeaderDeadlineProtocol"
    )
    assert web.argv[web.argv.index("--timeout-keep-alive") + 1] == "7"
