"""The console under hostile or unlucky input: no page answers 5xx.

Stored times at the calendar's ends (SPEC §1 lets a member write any valid
time), page numbers past what PostgreSQL can count to, more query parameters
than Django will parse, and arbitrary query strings on every GET page.
"""

from datetime import UTC, datetime

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from console.timeline import Span, layout
from memories.store.models import Entity
from tests.console.conftest import write

pytestmark = pytest.mark.django_db

LAST_INSTANT = "9999-12-31T23:59:59.999999Z"
LAST_SECOND = "9999-12-31T23:59:59Z"
FIRST_INSTANT = "0001-01-01T00:00:00Z"
HUGE = "922337203685477580"

LIST_PAGES = ["facts", "conflicts", "challenges", "candidates", "audit", "entities"]


# --- times at the ends of the calendar -------------------------------------------------------


def _span(fact_id: str, value: str, start: datetime, end: datetime | None = None) -> Span:
    return Span(
        fact_id=fact_id,
        value=value,
        start=start,
        end=end,
        ended_as="invalidated" if end else "",
        superseded_by=None,
        in_conflict=True,
        disputed=False,
        recorded_at=datetime(2026, 6, 1, tzinfo=UTC),
        confidence=0.7,
        last_reinforced_at=datetime(2026, 6, 1, tzinfo=UTC),
        decays=True,
    )


@pytest.mark.parametrize(
    "start, end",
    [
        (datetime.max.replace(tzinfo=UTC), None),
        (datetime.min.replace(tzinfo=UTC), None),
        (datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)),
        (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), datetime.max.replace(tzinfo=UTC)),
    ],
)
def test_the_timeline_draws_spans_at_the_ends_of_the_calendar_inside_the_plot(start, end):
    now = datetime(2026, 6, 1, tzinfo=UTC)
    drawn = layout(
        [_span("a", "old", now), _span("b", "edge", start, end)],
        now=now,
        conflict_opened_at=now,
        half_life_days=90,
        floor=0.05,
    )
    xs = [bar.x for bar in drawn.bars] + [bar.x + bar.width for bar in drawn.bars]
    xs += [tick.x for tick in drawn.ticks] + [drawn.now_x]
    assert all(drawn.plot_left <= x <= drawn.plot_right + 2 for x in xs)
    assert all(bar.curve.startswith("M") for bar in drawn.bars)


def test_the_timeline_writes_the_first_year_with_four_digits():
    first = datetime.min.replace(tzinfo=UTC)
    drawn = layout(
        [_span("a", "x", first)],
        now=datetime(2026, 6, 1, tzinfo=UTC),
        half_life_days=90,
        floor=0.05,
    )
    assert drawn.bars[0].title.startswith("x: valid from 0001-01-01 00:00, still valid")


def _flagged_at_the_edge(member, steward, *, standing_from=None, flagged_from=None):
    """A standing fact from a trusted source, then a member's outranked rival: a conflict."""
    standing = write(
        steward,
        "AuthService",
        "core/has-version",
        "2.0.0",
        "code",
        **({"t_valid": standing_from} if standing_from else {}),
    )
    flagged = write(
        member,
        "AuthService",
        "core/has-version",
        "2.1.0",
        "session-log",
        **({"t_valid": flagged_from} if flagged_from else {}),
    )
    assert flagged.status == "flagged", flagged
    return standing.fact, flagged


@pytest.mark.parametrize(
    "standing_from, flagged_from",
    [(None, LAST_SECOND), (None, LAST_INSTANT), (FIRST_INSTANT, None)],
)
def test_a_conflict_page_with_a_fact_at_the_ends_of_the_calendar_draws_its_timeline(
    as_member, member, steward, standing_from, flagged_from
):
    _, flagged = _flagged_at_the_edge(
        member, steward, standing_from=standing_from, flagged_from=flagged_from
    )
    response = as_member.get(reverse("conflict", args=[flagged.conflict.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert '<svg class="timeline"' in page
    assert len(response.context["timeline"].bars) == 2
    edge = "9999-12-31" if flagged_from else "0001-01-01"
    assert edge in page


@pytest.mark.parametrize(
    "standing_from, flagged_from", [(None, LAST_INSTANT), (FIRST_INSTANT, None)]
)
def test_every_page_showing_a_fact_at_the_ends_of_the_calendar_renders(
    as_member, as_steward, member, steward, standing_from, flagged_from
):
    standing, flagged = _flagged_at_the_edge(
        member, steward, standing_from=standing_from, flagged_from=flagged_from
    )
    subject = Entity.objects.get(name="AuthService")
    for path in [
        reverse("fact", args=[standing.pk]),
        reverse("fact", args=[flagged.fact.pk]),
        reverse("subject", args=[subject.pk]),
        reverse("facts"),
        reverse("conflicts"),
        reverse("dashboard"),
        reverse("audit"),
    ]:
        assert as_member.get(path).status_code == 200, path
    for path in [reverse("candidates"), reverse("conflicts") + "?state=all"]:
        assert as_steward.get(path).status_code == 200, path


# --- paging past what PostgreSQL can count ----------------------------------------------------


@pytest.mark.parametrize("name", LIST_PAGES)
@pytest.mark.parametrize(
    "query",
    [
        {"page": HUGE},
        {"page": "9" * 40},
        {"page": "9" * 5000},
        {"page": "-" + HUGE},
        {"page": "0"},
        {"page": "1e400"},
        {"per_page": HUGE},
        {"per_page": "-1"},
        {"page": HUGE, "per_page": "100"},
    ],
    ids=lambda query: ",".join(f"{k}={v[:24]}" for k, v in query.items()),
)
def test_every_list_page_answers_silly_paging_with_a_page(as_steward, world, name, query):
    response = as_steward.get(reverse(name), query)
    assert response.status_code == 200


@pytest.mark.parametrize("name", LIST_PAGES)
def test_a_page_past_the_end_however_far_is_the_last_page(as_steward, world, name):
    response = as_steward.get(reverse(name), {"page": HUGE, "per_page": "5"})
    page = response.context["page"]
    assert page.number == page.paginator.num_pages
    assert not page.paginator.more


def test_a_page_number_that_is_not_a_number_keeps_the_filters(as_steward, world):
    response = as_steward.get(reverse("facts"), {"page": "abc", "q": "shoply"})
    listed = list(response.context["page"])
    assert response.context["page"].number == 1
    assert listed and {fact.subject.name for fact in listed} == {"shoply"}


def test_an_unknown_page_size_is_the_default_and_keeps_the_filters(as_steward, world):
    response = as_steward.get(reverse("facts"), {"per_page": HUGE, "q": "shoply"})
    page = response.context["page"]
    assert page.paginator.per_page == 25
    assert {fact.subject.name for fact in page} == {"shoply"}
    assert '<option value="25" selected>' in response.content.decode()


def test_a_page_number_below_one_is_the_last_page_as_djangos_get_page_reads_it(
    as_steward, member, world
):
    for n in range(7):
        write(member, "queue", "core/uses", f"tool-{n}", "session-log")
    for number in ("0", "-3"):
        response = as_steward.get(reverse("candidates"), {"per_page": 5, "page": number})
        assert response.context["page"].number == 3  # 12 candidates, 5 a page


def test_a_subject_id_past_bigint_is_a_404(as_steward, world):
    response = as_steward.get("/subjects/" + "9" * 30 + "/")
    assert response.status_code == 404


# --- more query parameters than Django parses -------------------------------------------------


CONSOLE_GET_PAGES = [
    "/",
    "/conflicts/",
    "/candidates/",
    "/challenges/",
    "/facts/",
    "/audit/",
    "/audit/export.csv",
    "/entities/",
    "/account/",
    "/signin/",
]


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
@pytest.mark.parametrize("path", CONSOLE_GET_PAGES)
def test_more_than_a_thousand_query_parameters_is_a_plain_400_page(steward, settings, debug, path):
    settings.DEBUG = debug
    client = Client(raise_request_exception=False)
    client.force_login(steward)
    query = "&".join(f"k{n}=1" for n in range(1_001))
    response = client.get(path, QUERY_STRING=query)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "too many parameters" in page.lower()
    assert "Traceback" not in page


def test_a_thousand_query_parameters_are_still_read(as_steward, world):
    query = "&".join(f"k{n}=1" for n in range(999)) + "&q=shoply"
    assert as_steward.get("/facts/", QUERY_STRING=query).status_code == 200


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
def test_a_form_post_with_more_than_a_thousand_fields_is_a_400_page(
    steward, settings, world, debug
):
    settings.DEBUG = debug
    client = Client(raise_request_exception=False)
    client.force_login(steward)
    body = "&".join(f"facts={n}" for n in range(1_001)) + "&verdict=admitted&ground=x"
    response = client.post("/candidates/", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert "too many parameters" in response.content.decode().lower()


# --- arbitrary query strings on every GET page ------------------------------------------------

# Keys every page reads, so the generated strings reach the forms' fields.
KNOWN_KEYS = [
    "page",
    "per_page",
    "scope",
    "state",
    "kind",
    "q",
    "subject",
    "predicate",
    "status",
    "source",
    "epistemic",
    "bucket",
    "author",
    "who",
    "actor",
    "action",
    "target",
    "since",
    "until",
    "next",
]

# Raw fragments of a query string, already percent-encoded (or deliberately not).
HOSTILE = [
    HUGE,
    "9" * 30,
    "-" + HUGE,
    "-1",
    "0",
    "1e400",
    "nan",
    "%00",
    "%ED%A0%80",  # a lone surrogate, as UTF-8 would spell it
    "%FF",
    "%FF%FE",
    "%C0%80",
    "%",
    "%%",
    "&&",
    "==",
    "9999-12-31",
    "0001-01-01",
    "10000-01-01",
    "2026-02-30",
    "open",
    "project",
    "core/uses",
    "candidate",
    "commitment",
    "system",
]


def _percent_encoded(raw: bytes) -> str:
    return "".join(f"%{byte:02X}" for byte in raw)


# A key or a value: a hostile sample, a number of any size, any text (lone
# surrogates included) percent-encoded as UTF-8 would spell it, any bytes
# percent-encoded, or raw Latin-1 characters no browser would send unencoded.
fragment = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.text(max_size=12).map(lambda text: _percent_encoded(text.encode("utf-8", "surrogatepass"))),
    st.binary(max_size=8).map(_percent_encoded),
    st.text(st.characters(max_codepoint=255, exclude_characters="&#"), max_size=8),
)
query_string = st.lists(
    st.tuples(st.one_of(st.sampled_from(KNOWN_KEYS), fragment), fragment), max_size=8
).map(lambda pairs: "&".join(f"{key}={value}" for key, value in pairs))

# Always tried, on every page: the reported defects and their neighbours.
KNOWN_BAD_QUERIES = [
    f"page={HUGE}",
    f"page={HUGE}&per_page=100",
    f"per_page={HUGE}",
    "page=-1&per_page=-5",
    "q=%00&subject=%00&scope=%00&predicate=%00&source=%00&author=%00&actor=%00&target=%00",
    "q=%ED%A0%80&scope=%ED%A0%80&predicate=%FF&source=%FF%FE&since=%00",
    "since=10000-01-01&until=0000-12-31",
    "since=9999-12-31&until=0001-01-01",
    "next=%00&next=%FF",
]


GET_PAGES = {
    "dashboard": "/",
    "conflicts": "/conflicts/",
    "candidates": "/candidates/",
    "challenges": "/challenges/",
    "facts": "/facts/",
    "audit": "/audit/",
    "audit export (CSV)": "/audit/export.csv",
    "audit export (JSON Lines)": "/audit/export.jsonl",
    "entities": "/entities/",
    "account": "/account/",
    "sign-in": "/signin/",
    "withdraw an episode": "/withdrawals/",
}


@pytest.fixture
def get_pages(world) -> dict[str, str]:
    """Every console page a GET may ask for, with a row of the world where it needs one."""
    subject = Entity.objects.get(name="shoply")
    return {
        **GET_PAGES,
        "conflict page": reverse("conflict", args=[world.conflict.pk]),
        "fact page (admitted)": reverse("fact", args=[world.admitted.pk]),
        "fact page (disputed)": reverse("fact", args=[world.newcomer.pk]),
        "subject page": reverse("subject", args=[subject.pk]),
    }


@pytest.mark.parametrize(
    "page",
    [*GET_PAGES, "conflict page", "fact page (admitted)", "fact page (disputed)", "subject page"],
)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(query=query_string)
@example(query=KNOWN_BAD_QUERIES[0])
@example(query=KNOWN_BAD_QUERIES[1])
@example(query=KNOWN_BAD_QUERIES[2])
@example(query=KNOWN_BAD_QUERIES[3])
@example(query=KNOWN_BAD_QUERIES[4])
@example(query=KNOWN_BAD_QUERIES[5])
@example(query=KNOWN_BAD_QUERIES[6])
@example(query=KNOWN_BAD_QUERIES[7])
@example(query=KNOWN_BAD_QUERIES[8])
def test_no_console_get_page_answers_5xx_to_any_query_string(as_steward, get_pages, page, query):
    # Each example in a savepoint of its own: a failing query must not leave the
    # test's transaction aborted for the examples after it.
    with transaction.atomic():
        response = as_steward.get(get_pages[page], QUERY_STRING=query)
        if response.streaming:
            b"".join(response.streaming_content)
    assert response.status_code < 500, query
