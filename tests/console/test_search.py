"""The console's search: the header's box on every page, and the results page it lands on."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.console.conftest import write

pytestmark = pytest.mark.django_db


def test_every_page_has_a_search_box_in_its_header_but_the_results_page(as_member, world):
    dashboard = as_member.get("/").content.decode()
    results = as_member.get("/search/", {"q": "Redis"}).content.decode()

    assert '<form class="site-search" method="get" action="/search/" role="search"' in dashboard
    assert '<input id="site-search-q" type="search" name="q"' in dashboard
    assert "site-search-q" not in results


def test_the_results_page_lists_matches_by_slot_linking_each_fact(as_member, world):
    response = as_member.get("/search/", {"q": "Redis"})

    assert response.status_code == 200
    page = response.content.decode()
    assert "1 fact matches" in page
    assert f'href="/facts/{world.candidates[0].pk}/"' in page
    assert "shoply" in page and "core/uses" in page


def test_a_disputed_value_is_shown_as_contested_with_its_conflict(as_member, world):
    page = as_member.get("/search/", {"q": "GraphQL"}).content.decode()

    assert "contested" in page
    assert "unknown — disputed" in page
    assert f'href="/conflicts/{world.conflict.pk}/"' in page


def test_a_disputed_value_beside_a_standing_one_is_contested_not_unknown(as_member, member, world):
    write(member, "AuthService", "core/has-version", "9.9.9", "agent-note")

    page = as_member.get("/search/", {"q": "9.9.9"}).content.decode()

    assert '<span class="badge status-disputed">contested</span>' in page
    assert "disputed, contesting the current value" in page
    assert "unknown — disputed" not in page


def test_an_outsider_finds_nothing_of_a_scope_it_cannot_read(as_outsider, world):
    page = as_outsider.get("/search/", {"q": "Redis"}).content.decode()

    assert "No fact matches." in page
    assert "shoply" not in page


def test_nothing_found_offers_the_nearest_subject_names(as_member, world):
    page = as_member.get("/search/", {"q": "shoppy"}).content.decode()

    assert "Did you mean" in page and "?q=shoply" in page


def test_a_bad_filter_is_a_400_with_the_error_next_to_its_field(as_member, world):
    response = as_member.get("/search/", {"q": "Redis", "status": "asleep"})

    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()


def test_the_results_page_costs_the_same_queries_for_one_match_as_for_three(as_member, world):
    as_member.get("/search/", {"q": "Redis"})

    def queries(text: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert as_member.get("/search/", {"q": text}).status_code == 200
        return len(captured)

    assert queries("Redis") == queries("shoply")
