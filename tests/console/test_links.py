"""Queue rows link to their own pages."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_queue_rows_link_to_their_own_pages(as_steward, world):
    conflicts = as_steward.get(reverse("conflicts")).content.decode()
    assert f'href="{reverse("conflict", args=[world.conflict.pk])}"' in conflicts
    candidates = as_steward.get(reverse("candidates"), {"per_page": 100})
    page = candidates.content.decode()
    for fact in candidates.context["page"]:
        # Carrying the queue's filters on, for the next candidate after a verdict.
        link = f'class="row-link" href="{reverse("fact", args=[fact.pk])}?queue=per_page%3D100"'
        assert link in page
