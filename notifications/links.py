"""What an event says of its scope and its facts, and the console links that act on them.

Links are absolute, from ``CLAIMGRAPH_SITE_URL``: an event is read away from
any request (a webhook receiver, a mail client). URL names are the console's
own (``console/urls.py``); reversing them imports nothing of the console.
"""

from typing import Any

from django.conf import settings
from django.urls import reverse

from memories.store.models import Fact, Scope


def absolute(path: str) -> str:
    """A console path as a link that works away from the site (a receiver, a mail client)."""
    return settings.CLAIMGRAPH_SITE_URL + path


# The console page that lists each review queue (admissions.queues), and its filter.
QUEUE_PAGES = {
    "conflicts": ("conflicts", ""),
    "candidates": ("candidates", ""),
    "challenges": ("challenges", ""),
    "suspended": ("facts", "?status=suspended"),
}


def queue_url(queue: str) -> str:
    """The absolute address of the console page that lists ``queue``'s items."""
    page, query = QUEUE_PAGES[queue]
    return absolute(reverse(page) + query)


def console_url(name: str, **kwargs: Any) -> str:
    """The absolute address of the console page ``name``."""
    return absolute(reverse(name, kwargs=kwargs or None))


def item(kind: str, item_id: str, title: str, url: str) -> dict[str, str]:
    """What an event is about (``data.item``): its kind, id, a title, the page that acts on it."""
    return {"type": kind, "id": item_id, "title": title, "url": url}


def scope_of(scope: Scope) -> dict[str, Any]:
    return {"id": scope.pk, "name": scope.name}


def fact_side(fact: Fact, *, role: str) -> dict[str, Any]:
    """One side of an event: a fact with what a steward weighs it by, and its page.

    ``fact`` comes with its subject, predicate, object and source type loaded.
    The confidence is the one stored at the write (decay is the reader's to
    compute, at the time it reads).
    """
    return {
        "fact_id": str(fact.pk),
        "role": role,
        "statement": str(fact),
        "value": fact.object_display,
        "source_type": fact.source_type.name,
        "epistemic": fact.epistemic,
        "confidence": fact.confidence,
        "live": fact.t_invalid is None,
        "url": console_url("fact", fact_id=fact.pk),
    }
