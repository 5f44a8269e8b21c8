"""The account page: a signed-in person issues and revokes their own API tokens, and
chooses its email digest (console.views.notices)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from accounts.actions import issue_token, revoke_token
from accounts.models import ApiToken
from console.forms import DigestForm, TokenForm
from console.views.common import HtmxHttpRequest
from console.views.webhooks import webhook_context
from memories.store.errors import NotFound, Rejected, StateConflict

TEMPLATE = "console/account.html"


def account_page(
    request: HtmxHttpRequest,
    form: TokenForm,
    *,
    secret: str | None = None,
    digest_form: DigestForm | None = None,
    status: int = 200,
) -> HttpResponse:
    """The account page (or, for htmx, its token section) with the viewer's own tokens
    and its digest's form."""
    context = {
        "form": form,
        "tokens": ApiToken.objects.filter(user=request.user),
        "secret": secret,
        **webhook_context(request),
    }
    if not request.htmx:  # an htmx answer is the token section alone
        context["digest_form"] = digest_form or DigestForm(user=request.user)
    template = f"{TEMPLATE}#tokens" if request.htmx else TEMPLATE
    return render(request, template, context, status=status)


@login_required
@require_GET
def account(request: HtmxHttpRequest) -> HttpResponse:
    """The viewer's tokens and the form to issue one."""
    return account_page(request, TokenForm())


@login_required
@require_POST
@never_cache
def issue(request: HtmxHttpRequest) -> HttpResponse:
    """Issue a token and show its secret, this once."""
    form = TokenForm(request.POST)
    if not form.is_valid():
        return account_page(request, form, status=400)
    try:
        _token, secret = issue_token(actor=request.user, name=form.cleaned_data["name"])
    except Rejected as refused:
        form.add_error(refused.field, refused.message)
        return account_page(request, form, status=400)
    except StateConflict as refused:
        form.add_error(None, f"No token issued: {refused}.")
        return account_page(request, form, status=409)
    # Rendered in the POST's own response rather than after a redirect: the
    # secret is shown exactly once and never parked in the session to
    # survive a redirect. never_cache keeps it out of any cache.
    return account_page(request, TokenForm(), secret=secret, status=201)


@login_required
@require_POST
def revoke(request: HtmxHttpRequest, token_id: int) -> HttpResponse:
    """Revoke one of the viewer's own tokens (another's is a 404)."""
    try:
        token = revoke_token(actor=request.user, token_id=token_id)
    except NotFound:
        raise Http404 from None
    except StateConflict:
        message = "That token was already revoked."
    else:
        message = f"Revoked the token “{token.name}”."
    if request.htmx:
        # The swapped table shows the token as revoked; a flash message would
        # only surface on some later page.
        return account_page(request, TokenForm())
    messages.success(request, message)
    return redirect("account")
