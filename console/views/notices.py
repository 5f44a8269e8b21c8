"""The email digest's pages: its section of the account page, and the unsubscribe link.

The unsubscribe link works without signing in (a mail client follows it, RFC
8058): its signed token says whose digest it turns off. A GET only shows a
confirmation with one button; the POST turns the digest off. That one view is
exempt from Django's CSRF check, since a mail client's one-click POST carries
no CSRF cookie: the token in the URL, which only the site can sign and only
the account's mailbox receives, plays that part, and the POST can do nothing
but turn the digest off.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from console.forms import DigestForm, TokenForm
from console.views.account import account_page
from console.views.common import HtmxHttpRequest
from memories.store.errors import Forbidden, Rejected
from notifications.email.actions import choose_digest, stop_digest
from notifications.email.unsubscribe import InvalidLink, account_of

SECTION = "console/includes/email_digest.html"
UNSUBSCRIBE = "console/unsubscribe.html"


def _digest_section(request: HtmxHttpRequest, form: DigestForm, status: int) -> HttpResponse:
    """The account page again with ``form``; for htmx, only its digest section."""
    if request.htmx:
        return render(request, SECTION, {"digest_form": form}, status=status)
    return account_page(request, TokenForm(), digest_form=form, status=status)


@login_required
@require_POST
def choose(request: HtmxHttpRequest) -> HttpResponse:
    """Save the viewer's digest: its frequency, and the kinds of the scopes it stewards."""
    form = DigestForm(request.POST, user=request.user)
    if not form.is_valid():
        return _digest_section(request, form, 400)
    try:
        choose_digest(
            actor=request.user,
            frequency=form.cleaned_data["frequency"],
            subscriptions=form.chosen_subscriptions(),
            own_challenges=form.cleaned_data["own_challenges"],
        )
    except Rejected as refused:
        form.add_error(None, refused.message)
        return _digest_section(request, form, 400)
    except Forbidden as refused:
        form.add_error(None, f"Not saved: {refused}.")
        return _digest_section(request, form, 403)
    messages.success(request, "Your email digest is saved.")
    if request.htmx:
        return _digest_section(request, DigestForm(user=request.user), 200)
    return redirect("account")


@csrf_exempt
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HtmxHttpRequest, token: str) -> HttpResponse:
    """GET: confirm turning the digest off. POST (its button, a mail client's one click): do it."""
    try:
        user = account_of(token)
    except InvalidLink:
        return render(request, UNSUBSCRIBE, {"valid": False}, status=400)
    if request.method == "POST":
        stop_digest(user=user)
        return render(request, UNSUBSCRIBE, {"valid": True, "done": True})
    return render(request, UNSUBSCRIBE, {"valid": True, "done": False, "token": token})
