"""Row links built once per page are the very paths ``reverse`` gives."""

import uuid

import pytest
from django.urls import NoReverseMatch, reverse

from console.views.common import row_link

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["conflict", "fact", "conflict-resolve", "challenge-refute"])
def test_a_row_link_is_the_reversed_path_for_every_id(name):
    link = row_link(name)
    for pk in [uuid.uuid4() for _ in range(20)] + [uuid.UUID(int=0), uuid.UUID(int=2**128 - 1)]:
        assert link(pk) == reverse(name, args=[pk])


def test_a_route_without_one_uuid_is_refused():
    with pytest.raises((ValueError, NoReverseMatch)):
        row_link("subject")


def test_queue_rows_link_to_their_own_pages(as_steward, world):
    conflicts = as_steward.get(reverse("conflicts")).content.decode()
    assert f'href="{reverse("conflict", args=[world.conflict.pk])}"' in conflicts
    candidates = as_steward.get(reverse("candidates"), {"per_page": 100})
    page = candidates.content.decode()
    for fact in candidates.context["page"]:
        assert f'class="row-link" href="{reverse("fact", args=[fact.pk])}"' in page
