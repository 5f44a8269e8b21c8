"""The memory store's pages."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memories.models import Conflict, Fact, Scope


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    scopes = Scope.objects.visible_to(request.user)
    open_conflicts = Conflict.objects.open().filter(scope__in=scopes)
    context = {
        "scopes": scopes,
        "open_conflicts": open_conflicts.count(),
        "oldest_conflict": open_conflicts.order_by("opened_at").first(),
        "live_facts": Fact.objects.readable_by(request.user).live().count(),
    }
    return render(request, "memories/dashboard.html", context)
