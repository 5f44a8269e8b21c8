"""The health page: is a background worker alive, and what work waits or failed (SPEC §10, §12)."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from console.views.common import HtmxHttpRequest, steward_scopes
from memories.maintenance.health import background_health
from notifications.worker import PERIODIC_JOBS


@require_GET
@login_required
def health(request: HtmxHttpRequest) -> HttpResponse:
    """``memories.maintenance.health.background_health()`` as a page for stewards (else 404)."""
    if not steward_scopes(request.user).exists():
        raise Http404
    found = background_health(jobs=PERIODIC_JOBS)
    oldest_queued_at = (
        None
        if found.oldest_queued_age_seconds is None
        else found.checked_at - timedelta(seconds=found.oldest_queued_age_seconds)
    )
    context = {
        "health": found,
        "oldest_queued_at": oldest_queued_at,
        "doctor_every": settings.CLAIMGRAPH_DOCTOR_SECONDS,
    }
    return render(request, "console/health.html", context)
