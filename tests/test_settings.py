"""Settings come from the environment and fail loudly on values they cannot read."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from claimgraph_site.lib.env import env_bool, env_float, env_int, env_list
from tests.deadlines import PROCESS_DEADLINE

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("helper", "value"),
    [
        (lambda: env_bool("CG_TEST_VALUE", False), "perhaps"),
        (lambda: env_int("CG_TEST_VALUE", 1), "ten"),
        (lambda: env_int("CG_TEST_VALUE", 1, minimum=0), "-5"),
        (lambda: env_float("CG_TEST_VALUE", 1.0, minimum=0, maximum=1), "1.5"),
        (lambda: env_float("CG_TEST_VALUE", 1.0, minimum=0, maximum=1), "nan-ish"),
    ],
)
def test_unreadable_values_name_the_variable(monkeypatch, helper, value):
    monkeypatch.setenv("CG_TEST_VALUE", value)
    with pytest.raises(ImproperlyConfigured, match="CG_TEST_VALUE"):
        helper()


def test_readable_values_and_defaults(monkeypatch):
    monkeypatch.setenv("CG_TEST_VALUE", " yes ")
    assert env_bool("CG_TEST_VALUE", False) is True
    monkeypatch.setenv("CG_TEST_VALUE", "a, b,,c")
    assert env_list("CG_TEST_VALUE", []) == ["a", "b", "c"]
    monkeypatch.delenv("CG_TEST_VALUE")
    assert env_int("CG_TEST_VALUE", 7) == 7


def start_settings(**environment: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-c", "import claimgraph_site.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_DEADLINE,
    )


def test_without_debug_there_is_no_fallback_secret():
    result = start_settings(DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_a_typo_in_a_setting_stops_start_up():
    result = start_settings(DJANGO_DEBUG="1", CLAIMGRAPH_TRUSTED_RANK="high")
    assert result.returncode != 0
    assert "CLAIMGRAPH_TRUSTED_RANK" in result.stderr


def test_database_url_must_name_postgresql():
    result = start_settings(DJANGO_DEBUG="1", DATABASE_URL="sqlite:///db.sqlite3")
    assert result.returncode != 0
    assert "PostgreSQL" in result.stderr


def deployment_checks(**settings: str) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "CLAIMGRAPH_"))
    }
    env.update(
        DJANGO_SECRET_KEY="a-production-like-secret-" + "x" * 50,
        DJANGO_ALLOWED_HOSTS="claimgraph.example.org",
        **settings,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_DEADLINE,
    )


def test_production_settings_pass_the_deployment_checks():
    result = deployment_checks(CLAIMGRAPH_SITE_URL="https://claimgraph.example.org")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_without_the_site_url_is_told_links_would_lack_it():
    result = deployment_checks()
    assert result.returncode != 0
    assert "notifications.W001" in result.stderr + result.stdout
    assert "CLAIMGRAPH_SITE_URL" in result.stderr + result.stdout


@pytest.mark.parametrize(
    "url", ["claimgraph.example.org", "ftp://claimgraph.example.org", "https://x.org/console"]
)
def test_a_site_url_that_is_not_an_origin_is_refused(url):
    result = deployment_checks(CLAIMGRAPH_SITE_URL=url)
    assert result.returncode != 0
    assert "notifications.E001" in result.stderr + result.stdout


def test_a_warning_of_django_reaches_one_handler():
    """Django's default handlers are dropped: its records go to the root's handler alone."""
    logger = logging.getLogger("django.request")
    reached = []
    while logger is not None:
        reached += [h for h in logger.handlers if type(h) is logging.StreamHandler]
        logger = logger.parent if logger.propagate else None
    assert len(reached) == 1
