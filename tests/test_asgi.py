"""The one ASGI application serves Django's static files through whitenoise, DEBUG or not."""

import json
import socket
import warnings

import httpx2
import pytest
from django.core.asgi import get_asgi_application
from django.core.management import call_command

from claimgraph_site.asgi import build_application
from tests.api.mcp_client import live_site
from tests.deadlines import PROCESS_DEADLINE

CSS = "css/console.css"


def served(path: str, **headers: str) -> httpx2.Response:
    """``path`` from a site built now, so whitenoise reads the settings of the test."""
    with (
        warnings.catch_warnings(),
        live_site(build_application(get_asgi_application())) as running,
    ):
        # A Django warning would say the response had to be adapted to ASGI.
        warnings.simplefilter("error")
        return httpx2.get(f"{running.url}{path}", headers=headers, timeout=PROCESS_DEADLINE)


def test_static_files_are_served_under_asgi_in_debug(settings):
    settings.DEBUG = True  # whitenoise then finds them in the apps' static folders
    response = served(f"/static/{CSS}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/css")
    assert b"{" in response.content


@pytest.mark.django_db
def test_collected_static_files_are_served_under_asgi_without_debug(settings, tmp_path):
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    call_command("collectstatic", interactive=False, verbosity=0)
    # A handler built now loads whitenoise with these settings (from STATIC_ROOT).
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. a response Django must adapt for ASGI
        with (
            live_site(build_application(get_asgi_application())) as running,
            httpx2.Client(base_url=running.url, timeout=PROCESS_DEADLINE) as http,
        ):
            original = http.get(f"/static/{CSS}")
            compressed = http.get(f"/static/{CSS}", headers={"Accept-Encoding": "gzip"})
            missing = http.get("/static/css/nothing.css")
    assert original.status_code == 200
    assert original.headers["content-type"].startswith("text/css")
    assert compressed.headers.get("content-encoding") == "gzip"
    assert missing.status_code == 404


# --- paths no router matches ----------------------------------------------------------------

SECURITY_HEADERS = ["content-security-policy", "x-content-type-options", "x-frame-options"]


def raw_get(site: str, path: str) -> tuple[int, dict[str, str], bytes]:
    """``GET path`` sent byte for byte over a socket, as a scanner would: no client rewrites it."""
    port = int(site.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=PROCESS_DEADLINE) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {
        name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)
    }
    return int(status_line.split()[1]), headers, body


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/%0Afacts",
        "/api%0A/v1/facts",
        "/mcp/x%0Ay",
        "/mcp/%0A",
        "/mcp%0A",
        "/%0Ax",
        "/audit/%0A",
    ],
)
def test_a_path_holding_an_encoded_newline_is_answered_with_the_sites_headers(settings, path):
    # Starlette's route patterns never match a newline: such a path once got its
    # bare text 404, with no security headers and no JSON, from the router in front.
    settings.DEBUG = False
    with live_site(build_application(get_asgi_application())) as running:
        status, headers, body = raw_get(running.url, path)
    assert status in (308, 404)
    for name in SECURITY_HEADERS:
        assert name in headers, name
    if path.startswith(("/api/v1/", "/mcp/")):
        assert headers["content-type"].startswith("application/json")
        assert json.loads(body)["code"] == "not_found"
