"""``manage.py webhook``: add (the secret printed once), list, remove, rotate, and its refusals."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from notifications.webhook.models import Endpoint


def webhook(*args: str) -> str:
    out = StringIO()
    call_command("webhook", *args, stdout=out)
    return out.getvalue()


def test_add_prints_the_secret_once_and_list_shows_the_endpoint(scope, scope_steward):
    said = webhook(
        "add", "--scope", scope.name, "--owner", scope_steward.username,
        "https://hooks.example/in", "--events", "conflict.opened,candidate.waiting",
    )  # fmt: skip
    endpoint = Endpoint.objects.get()
    assert endpoint.secret.startswith("whsec_")
    assert endpoint.secret in said
    assert endpoint.kinds == ["conflict.opened", "candidate.waiting"]
    listed = webhook("list")
    assert "https://hooks.example/in" in listed and "conflict.opened,candidate.waiting" in listed
    assert endpoint.secret not in listed


def test_list_by_scope(scope, other_scope, scope_steward, steward):
    webhook("add", "--scope", scope.name, "--owner", steward.username, "https://a.example/")
    webhook("add", "--scope", other_scope.name, "--owner", steward.username, "https://b.example/")
    listed = webhook("list", "--scope", other_scope.name)
    assert "https://b.example/" in listed and "https://a.example/" not in listed


def test_rotate_prints_the_new_secret_and_remove_removes(scope, scope_steward):
    webhook("add", "--scope", scope.name, "--owner", scope_steward.username, "https://h.example/")
    endpoint = Endpoint.objects.get()
    said = webhook("rotate", str(endpoint.pk))
    rotated = Endpoint.objects.get()
    assert rotated.secret in said and rotated.previous_secret == endpoint.secret
    assert rotated.previous_secret not in said
    assert "Removed webhook endpoint" in webhook("remove", str(endpoint.pk))
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ftp://h.example/"], "url: must start with http:// or https://"),
        (["not a url"], "url: must start with http:// or https://"),
        (
            ["https://h.example/", "--events", "conflict.opend"],
            "unknown event kind 'conflict.opend'",
        ),
    ],
)
def test_add_refuses_bad_input_naming_it_and_writes_nothing(scope, scope_steward, args, message):
    with pytest.raises(CommandError, match=message):
        webhook("add", "--scope", scope.name, "--owner", scope_steward.username, *args)
    assert not Endpoint.objects.exists()


def test_add_refuses_an_unknown_scope_and_an_owner_who_is_not_a_steward(
    scope, scope_steward, outsider
):
    with pytest.raises(CommandError, match="There is no scope named 'nowhere'"):
        webhook(
            "add", "--scope", "nowhere", "--owner", scope_steward.username, "https://h.example/"
        )
    with pytest.raises(CommandError, match="otto is not a steward of the scope project"):
        webhook("add", "--scope", scope.name, "--owner", outsider.username, "https://h.example/")
    with pytest.raises(CommandError, match="There is no account named 'ghost'"):
        webhook("add", "--scope", scope.name, "--owner", "ghost", "https://h.example/")
    assert not Endpoint.objects.exists()


def test_remove_and_rotate_refuse_an_unknown_endpoint(db):
    for verb in ("remove", "rotate"):
        with pytest.raises(CommandError, match="There is no webhook endpoint '41'"):
            webhook(verb, "41")
