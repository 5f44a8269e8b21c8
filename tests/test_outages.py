"""The database going away: 503 with Retry-After, never a 500, and recovery by itself.

These run the site's real WSGI application on one long-lived thread, the way a
gunicorn thread serves request after request on its own persistent connection,
so Django's own connection handling between requests (closing a connection
that failed, health-checking one that waited) is what is under test. The
outages are real ones on the real PostgreSQL: the serving connection is
terminated by the server (``pg_terminate_backend``) in the middle of a
request, while it waits on a lock held here, or between requests; or the
database refuses every connection for a while (``ALLOW_CONNECTIONS false``).
"""

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from io import BytesIO
from typing import Any
from wsgiref.util import setup_testing_defaults

import psycopg
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import IntegrityError, OperationalError, connection, connections, transaction
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import include, path

from accounts.actions import issue_token
from claimgraph_site import outages
from memories.store import errors
from tests.deadlines import PROCESS_DEADLINE, wait_until

# Requests are served on another thread, so they must see committed data;
# serialized_rollback keeps the vocabulary the data migrations seeded.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()


class Worker:
    """One server thread running the site's WSGI application, request after request.

    Like a gunicorn thread, it keeps its database connection between requests
    (CONN_MAX_AGE) and Django's request signals run as in production, which
    the test client does not do: it keeps connections open across its requests.
    """

    def __init__(self) -> None:
        self.application = WSGIHandler()
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wsgi-worker")
        self.cookies: dict[str, str] = {}

    def start(self, method: str, path: str, *, body: Any = None, headers: dict | None = None):
        return self.thread.submit(self._serve, method, path, body, headers or {})

    def request(self, method: str, path: str, **options: Any) -> Answer:
        return self.start(method, path, **options).result(timeout=PROCESS_DEADLINE)

    def backend_pid(self) -> int | None:
        """The server process behind the thread's connection (read client-side, no query)."""

        def pid() -> int | None:
            raw = connection.connection
            return None if raw is None or raw.closed else raw.info.backend_pid

        return self.thread.submit(pid).result(timeout=PROCESS_DEADLINE)

    def stop(self) -> None:
        self.thread.submit(connections.close_all).result(timeout=PROCESS_DEADLINE)
        self.thread.shutdown()

    def _serve(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Answer:
        data = b"" if body is None else json.dumps(body).encode()
        environ: dict[str, Any] = {}
        setup_testing_defaults(environ)
        path_info, _, query = path.partition("?")
        environ.update(
            REQUEST_METHOD=method,
            PATH_INFO=path_info,
            QUERY_STRING=query,
            HTTP_HOST="testserver",
            SERVER_NAME="testserver",
            CONTENT_TYPE="application/json",
            CONTENT_LENGTH=str(len(data)),
        )
        environ["wsgi.input"] = BytesIO(data)
        for name, value in headers.items():
            environ["HTTP_" + name.upper().replace("-", "_")] = value
        if self.cookies:
            environ["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        started: dict[str, Any] = {}

        def start_response(status: str, response_headers: list, exc_info: Any = None) -> None:
            started["status"] = int(status.split()[0])
            started["headers"] = response_headers

        result = self.application(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            # What a WSGI server does at the end of every response: Django
            # sends request_finished here, and closes a connection that failed.
            result.close()
        for name, value in started["headers"]:
            if name.lower() == "set-cookie":
                for morsel in SimpleCookie(value).values():
                    self.cookies[morsel.key] = morsel.value
        return Answer(started["status"], dict(started["headers"]), content)


@pytest.fixture
def worker(monkeypatch) -> Iterator[Worker]:
    # Persistent connections, as with DATABASE_URL in production (the
    # embedded default opens one per request, which recovers trivially).
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 60)
    served = Worker()
    yield served
    served.stop()


@pytest.fixture
def bearer(member) -> dict[str, str]:
    _token, secret = issue_token(actor=member, name="outage tests")
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def signed_in(worker, member) -> Worker:
    client = Client()
    client.force_login(member)
    worker.cookies["sessionid"] = client.cookies["sessionid"].value
    return worker


def a_fact(version: str) -> dict[str, str]:
    return {
        "scope": "project",
        "subject": "AuthService",
        "predicate": "core/has-version",
        "object": version,
        "source_type": "code",
    }


def _one(sql: str, parameters: list | None = None) -> Any:
    with connection.cursor() as cursor:
        # Inside a transaction PostgreSQL keeps showing the statistics views
        # as they were first read; each poll must see them afresh.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(sql, parameters or [])
        row = cursor.fetchone() if cursor.description else None
    return row[0] if row else None


def terminate(pid: int) -> None:
    """The server ends that connection, as it does when it shuts down or is told to."""
    assert _one("SELECT pg_terminate_backend(%s)", [pid]) is True
    wait_until(
        lambda: _one("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]) is None,
        what=f"backend {pid} to end",
        every=0.02,
    )


def the_backend_waiting_on_a_lock() -> int | None:
    return _one(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
    )


def killed_mid_request(worker: Worker, table: str, method: str, path: str, **options) -> Answer:
    """Serve one request, and terminate its connection while it waits on ``table``."""
    with transaction.atomic():
        _one(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        pending = worker.start(method, path, **options)
        terminate(wait_until(the_backend_waiting_on_a_lock, what="the request to wait on the lock"))
    return pending.result(timeout=PROCESS_DEADLINE)


@contextmanager
def database_refusing_connections() -> Iterator[None]:
    """The database down: every connection but this test's own is dropped and refused."""
    given = connection.settings_dict
    name = connection.ops.quote_name(given["NAME"])
    # PostgreSQL changes that only from a connection to another database.
    maintenance = psycopg.connect(
        dbname="postgres",
        host=given["HOST"] or None,
        port=given["PORT"] or None,
        user=given["USER"] or None,
        password=given["PASSWORD"] or None,
        autocommit=True,
    )
    maintenance.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            others = [pid for (pid,) in cursor.fetchall()]
        for pid in others:
            terminate(pid)
        yield
    finally:
        maintenance.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        maintenance.close()


def assert_api_unavailable(answer: Answer) -> None:
    assert answer.status == 503, answer.body[:500]
    assert answer.headers["Content-Type"].startswith("application/json")
    assert answer.json() == {"code": "unavailable", "message": errors.UNAVAILABLE_MESSAGE}
    assert answer.headers["Retry-After"] == str(errors.RETRY_AFTER_SECONDS)


def assert_console_unavailable(answer: Answer) -> None:
    assert answer.status == 503, answer.body[:500]
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "cannot reach its database" in answer.text
    assert answer.headers["Retry-After"] == str(errors.RETRY_AFTER_SECONDS)


# --- the API ------------------------------------------------------------------------------


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_an_api_write_whose_connection_dies_mid_request_is_503_json_and_the_next_succeeds(
    settings, worker, bearer, debug
):
    settings.DEBUG = debug
    assert worker.request("POST", "/api/v1/facts", body=a_fact("1.0"), headers=bearer).status == 201
    answer = killed_mid_request(
        worker, "memories_fact", "POST", "/api/v1/facts", body=a_fact("2.0"), headers=bearer
    )
    assert_api_unavailable(answer)
    retried = worker.request("POST", "/api/v1/facts", body=a_fact("2.0"), headers=bearer)
    assert retried.status == 201, retried.body[:500]
    assert retried.json()["status"] == "superseded"


def test_an_api_read_whose_connection_dies_mid_request_is_503_json(worker, bearer):
    written = worker.request("POST", "/api/v1/facts", body=a_fact("1.0"), headers=bearer).json()
    read = f"/api/v1/facts/{written['fact']['id']}"
    assert_api_unavailable(killed_mid_request(worker, "memories_fact", "GET", read, headers=bearer))
    assert worker.request("GET", read, headers=bearer).status == 200


# --- the console --------------------------------------------------------------------------


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_a_console_page_whose_connection_dies_mid_request_is_a_503_page_and_the_next_renders(
    settings, signed_in, debug
):
    settings.DEBUG = debug
    assert signed_in.request("GET", "/facts/").status == 200
    answer = killed_mid_request(signed_in, "memories_fact", "GET", "/facts/")
    assert_console_unavailable(answer)
    # Still signed in: the session outlived the connection.
    assert signed_in.request("GET", "/facts/").status == 200


def _remember_a_visit(request) -> HttpResponse:
    request.session["visits"] = request.session.get("visits", 0) + 1
    return HttpResponse("noted")


# For the test below: a view that only changes the session, which the session
# middleware then saves on the way out, after the view has answered.
urlpatterns = [path("remember/", _remember_a_visit), path("", include("claimgraph_site.urls"))]


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_a_session_that_cannot_be_saved_after_the_view_answered_is_a_503_page(
    settings, worker, debug
):
    settings.DEBUG = debug
    settings.ROOT_URLCONF = __name__
    assert worker.request("GET", "/remember/").status == 200
    answer = killed_mid_request(worker, "django_session", "GET", "/remember/")
    assert_console_unavailable(answer)
    assert worker.request("GET", "/remember/").status == 200


# --- down for a while, then back ----------------------------------------------------------


def test_while_the_database_refuses_connections_api_and_console_answer_503_then_recover(
    signed_in, bearer
):
    fact = signed_in.request("POST", "/api/v1/facts", body=a_fact("1.0"), headers=bearer).json()
    read = f"/api/v1/facts/{fact['fact']['id']}"
    with database_refusing_connections():
        for _ in range(2):
            assert_api_unavailable(signed_in.request("GET", read, headers=bearer))
            assert_api_unavailable(
                signed_in.request("POST", "/api/v1/facts", body=a_fact("2.0"), headers=bearer)
            )
            assert_console_unavailable(signed_in.request("GET", "/facts/"))
            assert_console_unavailable(signed_in.request("GET", "/signin/"))
    assert signed_in.request("GET", read, headers=bearer).status == 200
    assert signed_in.request("GET", "/facts/").status == 200


def test_a_connection_the_server_dropped_between_requests_is_replaced_without_an_error(
    worker, bearer
):
    assert worker.request("GET", "/api/v1/truth?scope=project", headers=bearer).status == 200
    pid = worker.backend_pid()
    assert pid is not None, "the connection should persist between requests"
    terminate(pid)
    # CONN_HEALTH_CHECKS: the dead connection is noticed before use, not by a 503.
    assert worker.request("GET", "/api/v1/truth?scope=project", headers=bearer).status == 200
    assert worker.backend_pid() not in {None, pid}


# --- the answers themselves ---------------------------------------------------------------


def test_the_unavailable_page_is_rendered_without_a_single_query(django_assert_num_queries):
    request = RequestFactory().get("/facts/")
    with django_assert_num_queries(0):
        response = outages.unavailable(request, OperationalError("connection refused"))
    assert response.status_code == 503
    assert "cannot reach its database" in response.content.decode()
    assert "default-src" in response["Content-Security-Policy"]
    assert "nonce" not in response["Content-Security-Policy"]


def test_database_errors_that_are_not_outages_are_not_turned_into_503():
    middleware = outages.DatabaseOutageMiddleware(lambda request: HttpResponse())
    request = RequestFactory().post("/api/v1/facts")
    assert middleware.process_exception(request, IntegrityError("duplicate key")) is None
    assert middleware.process_exception(request, ValueError("a bug")) is None
    assert middleware.process_exception(request, OperationalError("gone")).status_code == 503
