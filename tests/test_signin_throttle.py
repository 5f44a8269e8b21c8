"""Sign-in throttling (SPEC §11): repeated failures lock out one account from one address."""

import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone

from accounts.actions import issue_token
from claimgraph_site.signin import client_address
from tests.conftest import make_user
from tests.deadlines import PROCESS_DEADLINE

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "a-long-test-password"  # tests.conftest.make_user's
LOCKED_OUT = "Too many failed sign-ins"


def browser(address: str = "203.0.113.7", **headers: str) -> Client:
    return Client(REMOTE_ADDR=address, headers=headers)


def sign_in(client: Client, username: str, password: str):
    return client.post(reverse("login"), {"username": username, "password": password})


def signed_in(client: Client) -> bool:
    return client.get(reverse("dashboard")).status_code == 200


def fail(client: Client, username: str, times: int):
    answers = [sign_in(client, username, "not-the-password") for _ in range(times)]
    return answers[-1]


def test_failures_below_the_limit_are_ordinary_refusals(settings, member):
    client = browser()
    answer = fail(client, "mira", settings.AXES_FAILURE_LIMIT - 1)
    assert answer.status_code == 200
    assert "do not match an active account" in answer.content.decode()
    assert LOCKED_OUT not in answer.content.decode()
    assert sign_in(client, "mira", PASSWORD).status_code == 302
    assert signed_in(client)


def test_the_limit_th_failure_locks_the_account_out_from_that_address_even_for_the_password(
    settings, member
):
    client = browser()
    answer = fail(client, "mira", settings.AXES_FAILURE_LIMIT)
    assert answer.status_code == 429
    page = answer.content.decode()
    assert LOCKED_OUT in page
    assert f"After {settings.AXES_FAILURE_LIMIT} wrong passwords" in page
    assert "signing in as <strong>mira</strong> from your address is paused for 15 minutes" in page
    assert answer["Retry-After"] == str(15 * 60)
    # The page is the sign-in page, with its form, so another account can still sign in.
    assert '<label for="id_username">Username</label>' in page

    right = sign_in(client, "mira", PASSWORD)
    assert right.status_code == 429
    assert LOCKED_OUT in right.content.decode()
    assert not signed_in(client)


def test_the_lockout_holds_only_for_that_account_and_that_address(settings, member, author):
    fail(browser("203.0.113.7"), "mira", settings.AXES_FAILURE_LIMIT)

    elsewhere = browser("198.51.100.20")
    assert sign_in(elsewhere, "mira", PASSWORD).status_code == 302
    assert signed_in(elsewhere)

    same_address_other_account = browser("203.0.113.7")
    assert sign_in(same_address_other_account, "arlo", PASSWORD).status_code == 302
    assert signed_in(same_address_other_account)


def test_an_api_token_of_a_locked_out_account_still_works(settings, member):
    _token, secret = issue_token(actor=member, name="agent")
    fail(browser(), "mira", settings.AXES_FAILURE_LIMIT)
    assert not signed_in(browser())

    agent = Client(REMOTE_ADDR="203.0.113.7")
    answer = agent.get(
        "/api/v1/truth", {"scope": "project"}, headers={"Authorization": f"Bearer {secret}"}
    )
    assert answer.status_code == 200, answer.content


def test_a_lockout_is_logged_with_the_account_and_address(settings, member, caplog):
    with caplog.at_level(logging.WARNING, logger="axes"):
        fail(browser(), "mira", settings.AXES_FAILURE_LIMIT)
    lockouts = [r.getMessage() for r in caplog.records if "Locking out" in r.getMessage()]
    assert len(lockouts) == 1
    assert "mira" in lockouts[0]
    assert "203.0.113.7" in lockouts[0]


def test_the_lockout_ends_when_the_cool_off_has_passed(settings, member):
    client = browser()
    fail(client, "mira", settings.AXES_FAILURE_LIMIT)
    assert sign_in(client, "mira", PASSWORD).status_code == 429
    # As if the last attempt had been a little longer ago than the cool-off.
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert sign_in(client, "mira", PASSWORD).status_code == 302
    assert signed_in(client)


def test_a_successful_sign_in_clears_the_earlier_failures(settings, member):
    client = browser()
    fail(client, "mira", settings.AXES_FAILURE_LIMIT - 1)
    assert sign_in(client, "mira", PASSWORD).status_code == 302
    client.post(reverse("logout"))
    assert fail(client, "mira", settings.AXES_FAILURE_LIMIT - 1).status_code == 200
    assert sign_in(client, "mira", PASSWORD).status_code == 302


def test_the_limit_is_a_setting(settings, member):
    settings.AXES_FAILURE_LIMIT = 2
    assert fail(browser(), "mira", 2).status_code == 429


def test_an_unknown_account_is_throttled_like_a_real_one(settings, db):
    # Otherwise the answer would tell which usernames exist.
    answer = fail(browser(), "nobody-by-this-name", settings.AXES_FAILURE_LIMIT)
    assert answer.status_code == 429


def test_the_admin_sign_in_is_throttled_too(settings, db):
    make_user("root", is_staff=True, is_superuser=True)
    client = browser()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        answer = client.post(
            reverse("admin:login"), {"username": "root", "password": "not-the-password"}
        )
    assert answer.status_code == 429
    right = client.post(reverse("admin:login"), {"username": "root", "password": PASSWORD})
    assert right.status_code == 429


# --- the address behind proxies --------------------------------------------------------


def test_without_trusted_proxies_the_address_is_the_peer_whatever_the_headers_say(settings):
    settings.CLAIMGRAPH_TRUSTED_PROXIES = 0
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.2.3.4")
    assert client_address(request) == "10.0.0.2"


@pytest.mark.parametrize(
    ("proxies", "forwarded", "address"),
    [
        (1, "198.51.100.9", "198.51.100.9"),
        # Whatever the client wrote to the left of what the proxy appended proves nothing.
        (1, "6.6.6.6, 198.51.100.9", "198.51.100.9"),
        (2, "6.6.6.6, 198.51.100.9, 10.0.0.7", "198.51.100.9"),
        # Fewer hops than proxies: it did not come through all of them.
        (2, "198.51.100.9", "10.0.0.2"),
        (1, "", "10.0.0.2"),
    ],
)
def test_behind_trusted_proxies_the_address_is_the_one_the_outermost_proxy_saw(
    settings, proxies, forwarded, address
):
    settings.CLAIMGRAPH_TRUSTED_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == address


def test_behind_a_proxy_one_client_locked_out_leaves_the_others_signing_in(settings, member):
    settings.CLAIMGRAPH_TRUSTED_PROXIES = 1
    guesser = browser("10.0.0.2", **{"X-Forwarded-For": "203.0.113.7"})
    fail(guesser, "mira", settings.AXES_FAILURE_LIMIT)
    assert sign_in(guesser, "mira", PASSWORD).status_code == 429
    owner = browser("10.0.0.2", **{"X-Forwarded-For": "198.51.100.20"})
    assert sign_in(owner, "mira", PASSWORD).status_code == 302


# --- configuration ----------------------------------------------------------------------


def settings_in_a_new_process(**environment: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DJANGO_DEBUG": "1", **environment}
    script = (
        "import django; django.setup(); from django.conf import settings;"
        " print(settings.AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME)"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "claimgraph_site.settings"},
        capture_output=True,
        text=True,
        timeout=PROCESS_DEADLINE,
    )


def test_the_limit_and_the_cool_off_come_from_the_environment():
    result = settings_in_a_new_process(
        CLAIMGRAPH_SIGNIN_FAILURE_LIMIT="8", CLAIMGRAPH_SIGNIN_COOLOFF_MINUTES="45"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["8", "0:45:00"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLAIMGRAPH_SIGNIN_FAILURE_LIMIT", "0"),
        ("CLAIMGRAPH_SIGNIN_FAILURE_LIMIT", "five"),
        ("CLAIMGRAPH_SIGNIN_COOLOFF_MINUTES", "0"),
    ],
)
def test_a_limit_or_cool_off_that_cannot_work_stops_start_up(name, value):
    result = settings_in_a_new_process(**{name: value})
    assert result.returncode != 0
    assert name in result.stderr
