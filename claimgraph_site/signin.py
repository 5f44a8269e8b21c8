"""Sign-in throttling: the two hooks django-axes calls (settings: ``AXES_*``).

django-axes counts failed sign-ins per username and address and refuses the
pair once they reach ``AXES_FAILURE_LIMIT`` within ``AXES_COOLOFF_TIME``; it
logs each failure and the lockout itself (logger ``axes``, at WARNING). What
is ours: the page a locked-out visitor sees, and where the address comes from.
"""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

# 429 Too Many Requests, as django-axes answers by default: the client is
# being throttled, not forbidden for good.
LOCKED_OUT_STATUS = 429


def locked_out(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None
) -> HttpResponse:
    """The sign-in page again, saying plainly why the sign-in was refused and for how long."""
    cool_off = settings.AXES_COOLOFF_TIME
    context = {
        "username": (credentials or {}).get("username") or request.POST.get("username", ""),
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "cooloff_minutes": round(cool_off.total_seconds() / 60),
        "next": request.POST.get("next", ""),
    }
    response = render(request, "registration/locked_out.html", context, status=LOCKED_OUT_STATUS)
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response


def client_address(request: HttpRequest) -> str | None:
    """The address a sign-in comes from, as far as this deployment can know it.

    With no proxy in front (``CLAIMGRAPH_TRUSTED_PROXIES=0``, the default) it is
    the peer's address. Behind N proxies that each append the address they
    received the request from to ``X-Forwarded-For``, it is the N-th entry from
    the right: whatever stands to the left of it was written by the client and
    proves nothing, so trusting it would let anyone pick a fresh address for
    every guess.
    """
    proxies = settings.CLAIMGRAPH_TRUSTED_PROXIES
    peer = request.META.get("REMOTE_ADDR")
    if proxies == 0:
        return peer
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    hops = [hop for hop in hops if hop]
    if len(hops) < proxies:
        # Fewer hops than proxies: the request did not come through all of
        # them; the peer is the most that can be said.
        return peer
    return hops[-proxies]
