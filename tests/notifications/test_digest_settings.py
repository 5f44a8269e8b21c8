"""The digest's email settings come from the environment and fail loudly."""

import os
import subprocess
import sys

from tests.deadlines import PROCESS_DEADLINE
from tests.test_settings import ROOT, start_settings

PRODUCTION = {"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "a-production-like-secret-" + "x" * 50}


def test_a_mail_user_without_a_password_stops_start_up_outside_debug():
    result = start_settings(**PRODUCTION, EMAIL_HOST_USER="claimgraph")
    assert result.returncode != 0
    assert "EMAIL_HOST_PASSWORD must be set" in result.stderr


def test_a_bad_port_or_daily_hour_stops_start_up():
    for variable, value in [("EMAIL_PORT", "smtp"), ("CLAIMGRAPH_DIGEST_DAILY_HOUR", "24")]:
        result = start_settings(DJANGO_DEBUG="1", **{variable: value})
        assert result.returncode != 0
        assert variable in result.stderr


def test_outside_debug_mail_goes_over_smtp_to_the_named_server():
    environment = {
        **PRODUCTION,
        "EMAIL_HOST": "smtp.example.org",
        "EMAIL_PORT": "587",
        "EMAIL_HOST_USER": "claimgraph",
        "EMAIL_HOST_PASSWORD": "a-mail-password",
        "EMAIL_USE_TLS": "yes",
    }
    code = (
        "import claimgraph_site.settings as s; m = s.MAILERS['default'];"
        "print(m['BACKEND'], sorted(m['OPTIONS'].items()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**start_env(), **environment},
        capture_output=True,
        text=True,
        timeout=PROCESS_DEADLINE,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("django.core.mail.backends.smtp.EmailBackend")
    for option in ("('host', 'smtp.example.org')", "('port', 587)", "('use_tls', True)"):
        assert option in result.stdout


def start_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
