"""The search results page (issue 31 §1): where the header's search box lands.

A thin view over ``admissions.search.search``, the read the API and MCP
answer with: the facts the viewer may read whose words or names match,
grouped by slot, a slot's disputed values apart as recall shows them.
"""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from admissions.search import search
from admissions.selectors import fact_statuses
from console.forms import SearchForm
from console.views.common import HtmxHttpRequest, add_rejection
from memories.store.errors import Rejected

# The results page shows this many facts, best first.
SHOWN = 50


@login_required
@require_GET
def search_page(request: HtmxHttpRequest) -> HttpResponse:
    form = SearchForm(request.GET or None, user=request.user)
    found = None
    if form.is_valid():
        data = form.cleaned_data
        try:
            found = search(
                viewer=request.user,
                text=data["q"],
                scope=data["scope"],
                predicate=data["predicate"].name if data["predicate"] else None,
                status=data["status"] or "live",
                as_of=data["as_of"] or timezone.now(),
                limit=SHOWN,
            )
        except Rejected as refusal:
            add_rejection(form, refusal)
    if found is not None:
        facts = [hit.fact for slot in found.slots for hit in slot.values] + [
            contested.hit.fact for slot in found.slots for contested in slot.contested
        ]
        statuses = fact_statuses(facts)
        for fact in facts:
            # What console/status_badges.html reads (disputed is annotated already).
            fact.admission_status = statuses[fact.pk].status if fact.pk in statuses else None
    status = 400 if form.is_bound and found is None else 200
    return render(
        request,
        "console/search.html",
        {"form": form, "found": found, "shown": SHOWN},
        status=status,
    )
