"""Who may call the API: bearer tokens only, stored hashed, each with a write allowance."""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from accounts.actions import issue_token, revoke_token
from accounts.models import ApiToken, WriteAllowance
from accounts.tokens import RateLimited, spend_write, token_for_secret
from memories.store.errors import StateConflict
from memories.store.models import Fact, Scope
from memories.store.roles import is_global_steward, is_steward_of
from tests.api.conftest import Agent, fact_body
from tests.racing import race

pytestmark = pytest.mark.django_db


# --- 401 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/facts"),
        ("get", "/facts/00000000-0000-0000-0000-000000000000"),
        ("post", "/facts/00000000-0000-0000-0000-000000000000/invalidate"),
        ("get", "/truth"),
        ("post", "/outcomes"),
        ("get", "/conflicts"),
        ("post", "/conflicts/00000000-0000-0000-0000-000000000000/resolve"),
        ("post", "/facts/00000000-0000-0000-0000-000000000000/admissions"),
        ("post", "/facts/00000000-0000-0000-0000-000000000000/challenges"),
        ("post", "/challenges/00000000-0000-0000-0000-000000000000/refutations"),
        ("post", "/facts/00000000-0000-0000-0000-000000000000/corrections"),
        ("get", "/facts/00000000-0000-0000-0000-000000000000/records"),
        ("post", "/episodes/run-1/withdraw"),
    ],
)
def test_every_operation_answers_401_without_a_token(anonymous, method, path):
    response = getattr(anonymous, method)(path)
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_wrong_revoked_or_deactivated_token_is_401(member):
    token, secret = issue_token(actor=member, name="agent")
    assert Agent(secret).get("/truth", scope="project").status_code == 200
    assert Agent(secret + "x").get("/truth", scope="project").status_code == 401
    assert Agent("cg_" + "A" * 43).post("/facts", fact_body()).status_code == 401

    revoke_token(actor=member, token_id=token.pk)
    assert Agent(secret).get("/truth", scope="project").status_code == 401

    _, other = issue_token(actor=member, name="second")
    member.is_active = False
    member.save()
    assert Agent(other).get("/truth", scope="project").status_code == 401


def test_a_signed_in_browser_session_is_not_api_authentication(member):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(member)
    response = browser.post("/api/v1/facts", fact_body(), content_type="application/json")
    assert response.status_code == 401
    assert browser.get("/api/v1/truth", {"scope": "project"}).status_code == 401
    assert Fact.objects.count() == 0


def test_a_bearer_token_needs_no_csrf_token(member):
    _, secret = issue_token(actor=member, name="agent")
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        "/api/v1/facts",
        fact_body(),
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 201


def test_an_api_answer_keeps_every_guarding_header_and_sets_no_cookie(member):
    # The console's middleware (sessions, user, messages, htmx) passes the API
    # over; what guards every response still runs.
    _, secret = issue_token(actor=member, name="agent")
    browser = Client()
    browser.force_login(member)
    response = browser.post(
        "/api/v1/facts",
        fact_body(),
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 201
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")
    assert not hasattr(response.wsgi_request, "session")
    assert not hasattr(response.wsgi_request, "user")
    # The console, on the same client, still has its session and user.
    page = browser.get("/account/")
    assert page.status_code == 200
    assert page.wsgi_request.user == member


def test_an_api_request_for_an_unknown_host_is_refused(member, settings):
    settings.ALLOWED_HOSTS = ["claimgraph.example"]
    _, secret = issue_token(actor=member, name="agent")
    response = Agent(secret).post("/facts", fact_body())
    assert response.status_code == 400
    assert Fact.objects.count() == 0


def test_tokens_are_stored_only_as_a_digest(member):
    token, secret = issue_token(actor=member, name="agent")
    assert secret.startswith("cg_") and len(secret) > 40
    assert secret not in {token.digest, token.prefix}
    assert token.prefix == secret[:10]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM accounts_apitoken WHERE digest LIKE %s", [f"%{secret}%"]
        )
        assert cursor.fetchone()[0] == 0


# --- the write allowance -------------------------------------------------------------


def test_a_burst_of_writes_beyond_the_rate_is_429_with_retry_after(member, author, settings):
    settings.CLAIMGRAPH_API_WRITE_RATE = 3
    _, secret = issue_token(actor=member, name="agent")
    agent = Agent(secret)
    statuses = [agent.post("/facts", fact_body(object=f"1.{n}")).status_code for n in range(5)]
    assert statuses == [201, 201, 201, 429, 429]
    refused = agent.post("/facts", fact_body(object="9.9"))
    assert refused.json()["code"] == "rate_limited"
    # A minute shared by three writes: the next one is about 20 s away.
    assert 1 <= int(refused["Retry-After"]) <= 20
    assert Fact.objects.count() == 3
    # Reads are not writes, and another account has its own allowance.
    assert agent.get("/truth", scope="project").status_code == 200
    _, other = issue_token(actor=author, name="their agent")
    assert Agent(other).post("/facts", fact_body(object="2.0")).status_code == 201


def test_the_write_limit_is_the_accounts_whichever_token_writes(member, settings):
    settings.CLAIMGRAPH_API_WRITE_RATE = 3
    agents = [Agent(issue_token(actor=member, name=f"agent {n}")[1]) for n in range(5)]
    statuses = [
        a.post("/facts", fact_body(object=f"1.{n}")).status_code for n, a in enumerate(agents)
    ]
    assert statuses == [201, 201, 201, 429, 429]
    assert WriteAllowance.objects.filter(user=member).count() == 1


def test_live_tokens_per_account_are_capped(member, settings):
    settings.CLAIMGRAPH_MAX_TOKENS_PER_ACCOUNT = 3
    tokens = [issue_token(actor=member, name=f"agent {n}")[0] for n in range(3)]
    with pytest.raises(StateConflict, match="CLAIMGRAPH_MAX_TOKENS_PER_ACCOUNT"):
        issue_token(actor=member, name="one too many")
    # the command and the account page refuse it too, saying why
    with pytest.raises(CommandError, match="revoke one to issue another"):
        call_command("issue_token", member.username, stdout=StringIO())
    browser = Client()
    browser.force_login(member)
    refused = browser.post("/account/tokens/", {"name": "one too many"})
    assert refused.status_code == 409
    assert b"revoke one to issue another" in refused.content
    assert ApiToken.objects.filter(user=member).count() == 3
    # a revoked token no longer counts
    revoke_token(actor=member, token_id=tokens[0].pk)
    issue_token(actor=member, name="a replacement")


def test_the_default_cap_is_twenty_live_tokens(member):
    for n in range(20):
        issue_token(actor=member, name=f"agent {n}")
    with pytest.raises(StateConflict):
        issue_token(actor=member, name="the twenty-first")


def test_a_rate_of_zero_turns_the_limit_off(member, settings):
    settings.CLAIMGRAPH_API_WRITE_RATE = 0
    _, secret = issue_token(actor=member, name="agent")
    agent = Agent(secret)
    statuses = {agent.post("/facts", fact_body(object=f"1.{n}")).status_code for n in range(12)}
    assert statuses == {201}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_allowance_holds_across_concurrent_workers(member):
    # Each thread has its own PostgreSQL session, as gunicorn workers would.
    token, _ = issue_token(actor=member, name="agent")
    assert charged_across_workers(lambda: spend_write(token, per_minute=10)) == (10, 30)


def test_a_write_with_a_revoked_or_deactivated_token_spends_no_allowance(member, author, settings):
    settings.CLAIMGRAPH_API_WRITE_RATE = 1
    token, secret = issue_token(actor=member, name="agent")
    revoke_token(actor=member, token_id=token.pk)
    _, other_secret = issue_token(actor=author, name="agent")
    author.is_active = False
    author.save()
    for refused in (secret, other_secret, secret + "x"):
        assert Agent(refused).post("/facts", fact_body()).status_code == 401
    assert not WriteAllowance.objects.filter(user__in=[member, author]).exists()


def test_a_refused_write_is_charged_and_the_token_still_recognised(member):
    token, secret = issue_token(actor=member, name="agent")
    assert token_for_secret(secret, writes_per_minute=2) == token
    assert token_for_secret(secret, writes_per_minute=2) == token
    with pytest.raises(RateLimited) as refused:
        token_for_secret(secret, writes_per_minute=2)
    assert 1 <= refused.value.retry_after <= 30
    # A read is never charged, whatever the allowance.
    assert token_for_secret(secret) == token


def test_the_token_check_is_prepared_once_per_connection(member):
    # Django switches psycopg's preparation off unless the settings name a
    # threshold, and prepare=True is then silently ignored: every request
    # would parse and plan these statements again.
    _, secret = issue_token(actor=member, name="agent")
    for _ in range(3):
        token_for_secret(secret)
        token_for_secret(secret, writes_per_minute=600)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements"
            " WHERE statement LIKE '%%accounts_apitoken%%' AND NOT from_sql"
        )
        assert cursor.fetchone()[0] == 2


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_recognising_and_charging_together_holds_across_concurrent_workers(member):
    _, secret = issue_token(actor=member, name="agent")
    assert charged_across_workers(
        lambda: token_for_secret(secret, writes_per_minute=10) is not None
    ) == (10, 30)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_charge_of_its_own_commits_quickly_and_leaves_the_session_as_it_was(member):
    token, secret = issue_token(actor=member, name="agent")
    assert token_for_secret(secret, writes_per_minute=600) == token
    spend_write(token, per_minute=600)
    # Both charges committed, and the asynchronous
    # commit did not outlive the charge's own transaction.
    assert WriteAllowance.objects.filter(user=member).exists()
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


# --- the commands ----------------------------------------------------------------------


def test_issue_token_creates_the_account_and_prints_a_working_token(scope):
    out = StringIO()
    call_command("issue_token", "robot-7", stdout=out)
    secret = out.getvalue().split()[-1]
    robot = User.objects.get(username="robot-7")
    assert not robot.has_usable_password()
    assert ApiToken.objects.get(user=robot).prefix == secret[:10]

    call_command("grant_scope", "robot-7", "project", stdout=StringIO())
    response = Agent(secret).post("/facts", fact_body())
    assert response.status_code == 201
    assert response.json()["fact"]["author"] == "robot-7"


def test_grant_scope_creates_a_missing_scope(member):
    call_command("grant_scope", "mira", "fresh-scope", stdout=StringIO())
    assert Scope.objects.get(name="fresh-scope").members.filter(pk=member.pk).exists()


def test_make_steward_grants_everywhere_or_on_one_scope(member, scope, other_scope):
    call_command("make_steward", "mira", "--scope", "project", stdout=StringIO())
    member = User.objects.get(pk=member.pk)
    assert is_steward_of(member, scope) and not is_steward_of(member, other_scope)
    call_command("make_steward", "mira", stdout=StringIO())
    member = User.objects.get(pk=member.pk)
    assert is_global_steward(member)


# --- the account page ------------------------------------------------------------------


def test_the_account_page_issues_a_token_once_and_revokes_it(member):
    browser = Client()
    browser.force_login(member)
    page = browser.get("/account/")
    assert page.status_code == 200
    assert b"API tokens" in page.content

    issued = browser.post("/account/tokens/", {"name": "my laptop agent"})
    assert issued.status_code == 201
    token = ApiToken.objects.get(user=member)
    secret = issued.context["secret"]
    assert secret.encode() in issued.content
    assert "no-store" in issued["Cache-Control"]
    assert Agent(secret).get("/truth", scope="project").status_code == 200
    # Shown once: the page never shows it again.
    assert secret.encode() not in browser.get("/account/").content

    revoked = browser.post(f"/account/tokens/{token.pk}/revoke/")
    assert revoked.status_code == 302
    assert Agent(secret).get("/truth", scope="project").status_code == 401


def test_nobody_revokes_someone_elses_token(member, author):
    token, secret = issue_token(actor=author, name="theirs")
    browser = Client()
    browser.force_login(member)
    assert browser.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    assert Agent(secret).get("/truth", scope="project").status_code == 200


def test_the_account_page_needs_a_signed_in_account():
    response = Client().get("/account/")
    assert response.status_code == 302
    assert "/signin/" in response["Location"]


def test_with_htmx_the_account_page_swaps_only_its_tokens_section(member):
    browser = Client()
    browser.force_login(member)
    issued = browser.post("/account/tokens/", {"name": "agent"}, headers={"HX-Request": "true"})
    assert issued.status_code == 201
    assert issued.content.lstrip().startswith(b'<section id="tokens"')
    assert b"<html" not in issued.content
    refused = browser.post("/account/tokens/", {"name": ""}, headers={"HX-Request": "true"})
    assert refused.status_code == 400
    assert ApiToken.objects.filter(user=member).count() == 1


def charged_across_workers(attempt) -> tuple[int, int]:
    """Eight workers on their own connections try five writes each: (allowed, refused)."""

    def five(_):
        outcomes = []
        for _ in range(5):
            try:
                outcomes.append(attempt() is not False)
            except RateLimited:
                outcomes.append(False)
        return outcomes

    allowed = [ok for outcomes in race(five, range(8)) for ok in outcomes]
    return allowed.count(True), allowed.count(False)
