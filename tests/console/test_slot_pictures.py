"""The fact page and the subject page draw their slots (issue 30 item 12): the slot's
timeline and history on the fact page, with the fact itself marked, its confidence
over time drawn from the core's decay rule, and the subject page's small multiples."""

import re

import pytest
from django.conf import settings
from django.urls import reverse

from memories.core.confidence import effective_confidence
from memories.store.models import Entity
from memories.write.actions import invalidate_fact
from tests.conftest import at
from tests.console.conftest import signed_in, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def versions(steward):
    """Three versions of ledger core/has-version: 1.0 superseded by 2.0, then 3.0 after it."""
    first = write(steward, "ledger", "core/has-version", "1.0", "code", now=at("2026-01-05T09:00"))
    second = write(steward, "ledger", "core/has-version", "2.0", "code", now=at("2026-02-05T09:00"))
    third = write(steward, "ledger", "core/has-version", "3.0", "code", now=at("2026-03-05T09:00"))
    return [first.fact, second.fact, third.fact]


def test_the_fact_page_draws_its_slots_timeline_with_this_fact_outlined(as_member, versions):
    second = versions[1]
    response = as_member.get(reverse("fact", args=[second.pk]))
    drawn = response.context["timeline"]
    assert [bar.fact_id for bar in drawn.bars] == [str(f.pk) for f in versions]
    current = [bar for bar in drawn.bars if "current" in bar.classes.split()]
    assert [bar.fact_id for bar in current] == [str(second.pk)]
    page = response.content.decode()
    assert '<svg class="timeline"' in page
    assert page.count('class="bar closed current"') == 1
    assert "console/includes/slot_timeline.html" in [t.name for t in response.templates]


def test_the_fact_page_lists_the_slots_history_with_who_when_why_and_this_fact_marked(
    as_member, steward, versions
):
    first, second, third = versions
    invalidate_fact(actor=steward, fact_id=third.pk, reason="rolled back after the outage")
    response = as_member.get(reverse("fact", args=[first.pk]))
    assert [fact.pk for fact in response.context["history"]] == [f.pk for f in versions]
    page = response.content.decode()
    history = page.split('id="history-heading"')[1].split("</table>")[0]
    rows = re.findall(r"<tr[^>]*>.*?</tr>", history, flags=re.S)[1:]
    assert len(rows) == 3
    assert rows[0].startswith('<tr class="current" aria-current="true">')
    assert "this fact" in rows[0] and f'href="/facts/{first.pk}/"' not in rows[0]
    assert f'href="/facts/{second.pk}/"' in rows[1] and "superseded" in rows[1]
    assert "rolled back after the outage" in rows[2] and "by stella" in rows[2]
    assert "by stella" in rows[1]  # who recorded it


def test_the_conflict_page_draws_its_timeline_through_the_same_include(as_steward, world):
    response = as_steward.get(reverse("conflict", args=[world.conflict.pk]))
    assert "console/includes/slot_timeline.html" in [t.name for t in response.templates]
    assert "console/includes/timeline_svg.html" in [t.name for t in response.templates]
    page = response.content.decode()
    assert page.count('<svg class="timeline"') == 1
    assert "in this conflict" in page and 'aria-current="true"' not in page


def test_the_decay_curve_is_the_cores_effective_confidence_at_every_point(as_member, member):
    fact = write(member, "shoply", "core/uses", "Redis", "session-log", now=at("2026-01-01")).fact
    response = as_member.get(reverse("fact", args=[fact.pk]))
    chart = response.context["decay"]
    now = response.context["now"]

    def core(moment):
        return effective_confidence(
            fact.confidence,
            last_reinforced_at=fact.last_reinforced_at,
            at=moment,
            decays=True,
            half_life_days=settings.CLAIMGRAPH_HALF_LIFE_DAYS,
            floor=settings.CLAIMGRAPH_CONFIDENCE_FLOOR,
        )

    drawn = chart.points + chart.projection
    assert len(drawn) > 40
    assert all(point.value == core(point.at) for point in drawn)
    assert chart.points[0].at == fact.last_reinforced_at
    assert chart.now.at == now and chart.now.value == core(now)
    assert chart.projection[0].at == now < chart.projection[-1].at
    # Lower on the picture as it decays (SVG's y grows downwards).
    assert chart.points[0].y < chart.now.y


def test_the_decay_chart_says_its_numbers_in_text(as_member, member):
    fact = write(member, "shoply", "core/uses", "Redis", "session-log", now=at("2026-01-01")).fact
    response = as_member.get(reverse("fact", args=[fact.pk]))
    effective = f"{response.context['decay'].now.value:.2f}"
    page = response.content.decode()
    figure = page.split('<figure class="decay-figure">')[1].split("</figure>")[0]
    caption = figure.split("<figcaption")[1]
    assert f"effective now <strong>{effective}</strong>" in caption
    assert "halves every 90 days" in caption and "never reads below 0.05" in caption
    assert 'role="img" aria-labelledby="decay-title decay-desc"' in figure
    desc = figure.split('<desc id="decay-desc">')[1].split("</desc>")[0]
    assert f"{effective} now" in desc and "0.70" in desc
    assert f"Now: {effective}" in figure  # the point's own title


def test_a_commitment_is_drawn_flat_and_said_not_to_decay(as_steward, world):
    response = as_steward.get(reverse("fact", args=[world.decided.pk]))
    chart = response.context["decay"]
    assert len({point.value for point in chart.points + chart.projection}) == 1
    page = response.content.decode()
    assert "a commitment does not decay with disuse" in page
    assert "halves every" not in page


def test_an_ended_fact_is_drawn_to_now_without_a_projection(as_member, steward, versions):
    response = as_member.get(reverse("fact", args=[versions[0].pk]))
    assert response.context["decay"].projection == ()
    assert "dashed part" not in response.content.decode()


def test_the_subject_page_draws_a_compact_timeline_per_slot_linking_its_fact(
    as_member, steward, member, versions
):
    uses = write(member, "ledger", "core/uses", "Postgres", "session-log").fact
    private = write(member, "ledger", "core/prefers", "tabs", "session-log", bucket="user").fact
    entity = Entity.objects.get(pk=uses.subject_id)
    response = as_member.get(reverse("subject", args=[entity.pk]))
    pictures = response.context["pictures"]
    assert [(p.name, p.private_to) for p in pictures] == [
        ("core/has-version", None),
        ("core/prefers", "mira"),
        ("core/uses", None),
    ]
    by_name = {p.name: p for p in pictures}
    assert by_name["core/has-version"].lead == versions[-1]
    assert [b.fact_id for b in by_name["core/has-version"].timeline.bars] == [
        str(f.pk) for f in versions
    ]
    assert by_name["core/prefers"].lead == private
    # One time axis for every card: the same instant sits at the same x in each.
    assert len({p.timeline.now_x for p in pictures}) == 1
    page = response.content.decode()
    assert page.count('<svg class="timeline compact"') == 3
    cards = page.split('<ul class="small-multiples">')[1].split("</ul>")[0]
    for lead in (versions[-1], uses, private):
        assert f'href="/facts/{lead.pk}/"' in cards
    ids = re.findall(r'<title id="([^"]+)"', cards)
    assert len(ids) == len(set(ids)) == 3


def test_the_subject_page_shows_no_one_elses_private_slot(steward, member, author):
    write(member, "ledger", "core/prefers", "tabs", "session-log", bucket="user")
    shared = write(steward, "ledger", "core/uses", "Postgres", "code").fact
    other = write(steward, "ledger", "core/has-version", "1.0", "code").fact
    page = signed_in(author).get(reverse("subject", args=[shared.subject_id]))
    seen = page.context["pictures"]
    assert [p.name for p in seen] == ["core/has-version", "core/uses"]
    assert other.pk in {f.pk for p in seen for f in p.facts}
    assert "tabs" not in page.content.decode()


def test_a_value_disputed_by_an_open_conflict_is_marked_on_the_subject_and_fact_pages(
    as_member, world
):
    subject = as_member.get(reverse("subject", args=[world.newcomer.subject_id]))
    [picture] = subject.context["pictures"]
    marked = {bar.fact_id for bar in picture.timeline.bars if "disputed" in bar.classes.split()}
    assert marked == {str(world.newcomer.pk)}
    fact = as_member.get(reverse("fact", args=[world.decided.pk])).context["timeline"]
    marked = {bar.fact_id for bar in fact.bars if "disputed" in bar.classes.split()}
    assert marked == {str(world.newcomer.pk)}


def test_an_ended_facts_caption_says_it_stopped_being_valid_and_promises_no_future(
    as_member, steward, member
):
    fact = write(member, "shoply", "core/uses", "Redis", "session-log").fact
    invalidate_fact(actor=steward, fact_id=fact.pk, reason="gone")
    page = as_member.get(reverse("fact", args=[fact.pk])).content.decode()
    caption = page.split("<figcaption")[1].split("</figcaption>")[0]
    assert "It stopped being valid on" in caption
    assert "it will read" not in caption and "resets the clock" not in caption


def test_an_htmx_swap_of_the_status_panel_neither_reads_nor_draws_the_slot(as_member, world):
    response = as_member.post(
        reverse("fact-challenge", args=[world.admitted.pk]),
        {"ground": "the lock file says 2.1", "evidence": "ticket-9"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert 'id="fact-status"' in response.content.decode()
    assert "timeline" not in response.context and "decay" not in response.context
    page = as_member.get(reverse("fact", args=[world.admitted.pk]))
    assert "timeline" in page.context and "decay" in page.context
