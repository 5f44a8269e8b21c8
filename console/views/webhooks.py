"""Webhook endpoints on the account page: add, rotate, remove, enable; each one's delivery log.

Every endpoint is found through ``notifications.webhook.actions.endpoint_of``
with the viewer as the actor, before anything of it is read: another
person's endpoint answers 404 exactly like one that does not exist. The
secret is shown in the response to the POST that made it, never after a
redirect (it is not parked in the session) and never cached.

``receiver`` is the demo's receiving end (``make run``): it checks a
delivery's signature against the demo endpoint's secret, as any receiver
would, so a newcomer watches deliveries land on the endpoint's log page.
"""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from console.forms import WebhookForm
from console.views.common import HtmxHttpRequest, add_rejection, done, refusals
from memories.store.errors import Forbidden, Rejected
from memories.store.models import Scope
from notifications.webhook.actions import (
    DEMO_RECEIVER_PATH,
    create_endpoint,
    enable_endpoint,
    endpoint_of,
    redeliver,
    remove_endpoint,
    rotate_secret,
)
from notifications.webhook.models import Attempt, Delivery, Endpoint

TEMPLATE = "console/webhook.html"
ADD_TEMPLATE = "console/webhook_add.html"
# The deliveries an endpoint's page shows, newest first.
SHOWN_DELIVERIES = 50


def webhook_context(request: HtmxHttpRequest, form: WebhookForm | None = None) -> dict:
    """What the account page's webhook section shows: the viewer's endpoints and the form."""
    latest = Delivery.objects.order_by("-id")
    return {
        "webhook_form": form or _form(request),
        "webhook_endpoints": Endpoint.objects.owned_by(request.user)
        .select_related("scope")
        .prefetch_related(Prefetch("deliveries", queryset=latest[:1], to_attr="latest")),
    }


def _form(request: HtmxHttpRequest, data=None) -> WebhookForm:
    return WebhookForm(data, scopes=Scope.objects.visible_to(request.user).order_by("name"))


def _endpoint_page(
    request: HtmxHttpRequest,
    endpoint: Endpoint,
    *,
    secret: str | None = None,
    status: int = 200,
) -> HttpResponse:
    attempts = Attempt.objects.order_by("number")
    deliveries = (
        endpoint.deliveries.select_related("event")
        .prefetch_related(Prefetch("attempt_log", queryset=attempts))
        .order_by("-id")[:SHOWN_DELIVERIES]
    )
    context = {"endpoint": endpoint, "deliveries": deliveries, "secret": secret}
    # The log refreshes itself (htmx): only its section, never the secret again.
    template = f"{TEMPLATE}#deliveries" if request.htmx and secret is None else TEMPLATE
    return render(request, template, context, status=status)


@login_required
@require_GET
@refusals
def endpoint(request: HtmxHttpRequest, endpoint_id: int) -> HttpResponse:
    """One of the viewer's endpoints: its state and its delivery log."""
    return _endpoint_page(request, endpoint_of(request.user, endpoint_id))


@login_required
@require_POST
@never_cache
def add(request: HtmxHttpRequest) -> HttpResponse:
    """Add an endpoint and show its secret, this once."""
    form = _form(request, request.POST)
    if form.is_valid():
        try:
            created, secret = create_endpoint(
                owner=request.user,
                scope=form.cleaned_data["scope"],
                url=form.cleaned_data["url"],
                kinds=form.cleaned_data["kinds"],
            )
        except Rejected as refused:
            add_rejection(form, refused)
        except Forbidden as refused:
            form.add_error("scope", str(refused))
        else:
            return _endpoint_page(request, created, secret=secret, status=201)
    return render(request, ADD_TEMPLATE, {"webhook_form": form}, status=400)


@login_required
@require_POST
@never_cache
@refusals
def rotate(request: HtmxHttpRequest, endpoint_id: int) -> HttpResponse:
    """A new secret for the endpoint, shown this once; the old one signs on for the overlap."""
    rotated, secret = rotate_secret(actor=request.user, endpoint_id=endpoint_id)
    return _endpoint_page(request, rotated, secret=secret)


@login_required
@require_POST
@refusals
def remove(request: HtmxHttpRequest, endpoint_id: int) -> HttpResponse:
    removed = remove_endpoint(actor=request.user, endpoint_id=endpoint_id)
    return done(request, f"Removed the webhook endpoint {removed.url}.", reverse("account"))


@login_required
@require_POST
@refusals
def enable(request: HtmxHttpRequest, endpoint_id: int) -> HttpResponse:
    enabled = enable_endpoint(actor=request.user, endpoint_id=endpoint_id)
    return done(
        request, "Enabled the endpoint again.", reverse("webhook-endpoint", args=[enabled.pk])
    )


@login_required
@require_POST
@refusals
def resend(request: HtmxHttpRequest, delivery_id: int) -> HttpResponse:
    """Deliver a delivery's event again (a new delivery, the same ``webhook-id``)."""
    delivery = redeliver(actor=request.user, delivery_id=delivery_id)
    return done(
        request,
        f"Redelivery of {delivery.event.public_id} queued.",
        reverse("webhook-endpoint", args=[delivery.endpoint_id]),
    )


@csrf_exempt
@require_POST
def receiver(request: HttpRequest) -> HttpResponse:
    """The demo's receiver: 204 for a delivery signed with a demo endpoint's secret, else 400.

    Only with ``CLAIMGRAPH_WEBHOOK_RECEIVER`` (on in local work): elsewhere a
    404. Exempt from CSRF as every webhook receiver must be: the signature
    is what authenticates the request.
    """
    if not settings.CLAIMGRAPH_WEBHOOK_RECEIVER:
        raise Http404
    secrets = Endpoint.objects.filter(url__endswith=DEMO_RECEIVER_PATH).values_list(
        "secret", "previous_secret"
    )
    headers = {name: request.headers.get(name, "") for name in _SIGNED_HEADERS}
    for secret in {value for pair in secrets for value in pair if value}:
        try:
            Webhook(secret).verify(request.body, headers)
        except WebhookVerificationError:
            continue
        return HttpResponse(status=204)
    return HttpResponse("bad signature\n", status=400, content_type="text/plain")


_SIGNED_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")
