"""Claim and Release (SPEC §9): a steward notes that they are reviewing an item.

Each is a plain form POST that redirects back to the item (303) with the
result in a status message; with htmx the claim's own panel is swapped in
place and says the result itself. A claim is a note, not a lock: the pages
show it to everyone, and every steward may still rule.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from console.views.common import HtmxHttpRequest, refusals
from memories.store.errors import StateConflict
from memories.store.lookups import readable_fact, visible_conflict
from memories.store.models import Conflict, Fact
from memories.write.claims import claim_item, release_claim

KINDS = ("conflict", "fact")


@require_POST
@login_required
@refusals
def claim(request: HtmxHttpRequest, kind: str, item_id: str) -> HttpResponse:
    """Claim the item for the signed-in steward (or renew their claim)."""
    try:
        made = claim_item(actor=request.user, **{f"{kind}_id": item_id})
    except StateConflict as refused:
        return _answer(request, kind, item_id, f"Not claimed: {refused}.", ok=False)
    until = timezone.localtime(made.expires_at).strftime("%H:%M")
    said = f"Claimed until {until}: other stewards see that you are reviewing it."
    return _answer(request, kind, item_id, said)


@require_POST
@login_required
@refusals
def release(request: HtmxHttpRequest, kind: str, item_id: str) -> HttpResponse:
    """End the signed-in steward's own claim on the item."""
    try:
        released = release_claim(actor=request.user, **{f"{kind}_id": item_id})
    except StateConflict as refused:
        return _answer(request, kind, item_id, f"Not released: {refused}.", ok=False)
    said = "Released: no longer being reviewed." if released else "You held no claim on it."
    return _answer(request, kind, item_id, said)


def _answer(
    request: HtmxHttpRequest, kind: str, item_id: str, said: str, *, ok: bool = True
) -> HttpResponse:
    item: Conflict | Fact = (
        visible_conflict(request.user, item_id)
        if kind == "conflict"
        else readable_fact(request.user, item_id)
    )
    if request.htmx:
        context = {"item": item, "kind": kind, "steward": True, "said": said, "ok": ok}
        return render(request, "console/includes/claim.html", context)
    (messages.success if ok else messages.warning)(request, said)
    to = reverse(kind, args=[item.pk])
    if queue := request.POST.get("queue"):
        to += "?" + urlencode({"queue": queue})
    # 303: the browser follows with a GET, whatever the form's method.
    response = redirect(to)
    response.status_code = 303
    return response
