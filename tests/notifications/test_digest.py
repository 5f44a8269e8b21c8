"""The email digest: what it lists, where its links lead, and unsubscribing from it."""

import re
from email import message_from_string
from urllib.parse import urlsplit

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from admissions.actions import file_challenge
from notifications.email.actions import choose_digest
from notifications.email.models import DigestPreference
from notifications.email.sending import send_digest, send_due_digests
from notifications.email.unsubscribe import unsubscribe_token
from tests.conftest import at
from tests.console.conftest import signed_in, world, write  # noqa: F401 (world: a fixture)

pytestmark = pytest.mark.django_db

SITE = "http://testserver"
NOW = at("2026-06-02T09:30")


@pytest.fixture(autouse=True)
def site_url(settings) -> None:
    settings.CLAIMGRAPH_SITE_URL = SITE


@pytest.fixture
def challenged(world, member):  # noqa: F811
    """The world, with an evidenced challenge of its admitted fact."""
    return file_challenge(
        actor=member,
        fact_id=world.admitted.pk,
        ground="the release notes say 2.1.0",
        evidence=[{"ref": "CHANGELOG.md"}],
    )


def with_email(user):
    user.email = f"{user.username}@example.org"
    user.save(update_fields=["email"])
    return user


def html_of(message) -> str:
    ((html, kind),) = message.alternatives
    assert kind == "text/html"
    return html


def links_in(html: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', html)


def test_the_digest_lists_each_waiting_item_with_its_sides_in_text_and_html(
    world,  # noqa: F811
    challenged,
    steward,
):
    assert send_digest(with_email(steward), now=NOW)

    (message,) = mail.outbox
    assert message.to == ["stella@example.org"]
    assert message.subject == (
        "claimgraph: open conflicts: 1, candidates awaiting a verdict: 5, open challenges: 1"
    )
    html = html_of(message)
    for body in (message.body, re.sub(r"<[^>]+>", "", html)):
        # The conflict and both its sides, each with its source and confidence.
        assert "api-layer core/prefers in project" in body
        assert "core/decided-against GraphQL (decision-record, confidence 0.80)" in body
        assert "core/prefers GraphQL (session-log, confidence 0.70)" in body
        # Each candidate, with its value: not a count.
        for value in ("Redis", "Kafka", "Celery"):
            assert f"{value} (session-log, confidence 0.70)" in body
        # The challenge: the fact as it stands against the challenge's ground.
        assert "2.0.0 (the fact as it stands)" in body
        assert "the release notes say 2.1.0 (challenge by mira, evidence: CHANGELOG.md)" in body
    assert f"Rule on it: {SITE}/conflicts/{world.conflict.pk}/" in message.body
    assert f'<a href="{SITE}/conflicts/{world.conflict.pk}/">Rule on it</a>' in html
    assert "<script" not in html and "style" not in html


def test_every_link_of_the_digest_lands_on_the_page_that_shows_its_item(
    world,  # noqa: F811
    challenged,
    steward,
):
    send_digest(with_email(steward), now=NOW)
    (message,) = mail.outbox
    html = html_of(message)
    links = [link for link in links_in(html) if "/digest/unsubscribe/" not in link]
    # Every link is absolute, and the text version's are among them.
    assert links and all(link.startswith(SITE + "/") for link in links)
    in_text = set(re.findall(rf"{SITE}/\S+", message.body))
    assert len(in_text) == 1 + 5 + 1 + 2  # each item's, the account's, the unsubscribe link
    assert in_text <= set(links_in(html))

    browser = signed_in(steward)
    expected = {
        f"/conflicts/{world.conflict.pk}/": "GraphQL",
        f"/facts/{world.candidates[0].pk}/": "Redis",
        f"/facts/{world.admitted.pk}/": "the release notes say 2.1.0",
        "/candidates/": "Celery",
        "/account/": "Email digest",
    }
    followed = set()
    for link in links:
        path = urlsplit(link).path
        page = browser.get(path)
        assert page.status_code == 200, link
        if path in expected:
            assert expected[path] in page.text, link
            followed.add(path)
    assert followed >= set(expected) - {"/candidates/"}


def test_the_unsubscribe_link_confirms_then_turns_the_digest_off_with_one_click(world, steward):  # noqa: F811
    send_digest(with_email(steward), now=NOW)
    (message,) = mail.outbox
    (link,) = [link for link in links_in(html_of(message)) if "/digest/unsubscribe/" in link]
    assert message.extra_headers["List-Unsubscribe"] == f"<{link}>"
    assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    headers = message_from_string(message.message().as_string())
    assert headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    path = urlsplit(link).path

    # A mail client is not signed in and holds no CSRF cookie.
    client = Client(enforce_csrf_checks=True)
    confirm = client.get(path)
    assert confirm.status_code == 200
    assert f'<form method="post" action="{path}">' in confirm.text
    assert DigestPreference.objects.get(user=steward).frequency == "daily"  # a GET changes nothing

    done = client.post(path, {"List-Unsubscribe": "One-Click"})
    assert done.status_code == 200
    assert "Your email digest is off" in done.text
    assert DigestPreference.objects.get(user=steward).frequency == "off"

    mail.outbox.clear()
    assert send_due_digests(now=at("2026-06-03T09:30")) == 0
    assert mail.outbox == []


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_tampered_unsubscribe_link_is_refused_and_changes_nothing(steward, method):
    token = unsubscribe_token(steward)
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    page = getattr(Client(), method)(reverse("digest-unsubscribe", args=[forged]))
    assert page.status_code == 400
    assert "This unsubscribe link is not valid" in page.text
    assert not DigestPreference.objects.exists()


def test_nothing_is_sent_when_nothing_waits(steward, scope):
    assert not send_digest(with_email(steward), now=NOW)
    assert send_due_digests(now=NOW) == 0
    assert mail.outbox == []


def test_another_scopes_items_never_appear(scope, other_scope, scope_steward, outsider, member):
    write(member, "shoply", "core/uses", "Redis", "session-log", scope="project")
    write(outsider, "secret-app", "core/uses", "Vault", "session-log", scope="elsewhere")
    send_digest(with_email(scope_steward), now=NOW)
    (message,) = mail.outbox
    for body in (message.body, html_of(message)):
        assert "Redis" in body
        assert "Vault" not in body and "secret-app" not in body and "elsewhere" not in body


def test_a_scope_left_out_of_the_subscription_is_left_out_of_the_digest(
    world,  # noqa: F811
    steward,
    scope,
):
    choose_digest(
        actor=with_email(steward),
        frequency="daily",
        subscriptions={scope.pk: ["conflict.opened"]},
        own_challenges=True,
    )
    send_digest(steward, now=NOW)
    (message,) = mail.outbox
    assert "api-layer core/prefers" in message.body
    assert "Redis" not in message.body and "Candidates" not in message.body


def test_values_are_escaped_in_the_html_and_left_as_they_are_in_the_text(scope, steward, member):
    write(member, "shoply", "core/uses", "<b>Redis</b> & co", "session-log")
    send_digest(with_email(steward), now=NOW)
    (message,) = mail.outbox
    assert "<b>Redis</b> & co (session-log" in message.body
    html = html_of(message)
    assert "&lt;b&gt;Redis&lt;/b&gt; &amp; co" in html and "<b>Redis" not in html
