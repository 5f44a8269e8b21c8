"""The slot timeline's geometry, as data: no database, no browser."""

from datetime import timedelta

import pytest

from console.timeline import Span, decay_chart, layout
from tests.conftest import at

NOW = at("2026-06-01T00:00")


def span(fact_id, value, start, end=None, **extra):
    fields = {
        "ended_as": "",
        "superseded_by": None,
        "in_conflict": False,
        "disputed": False,
        "recorded_at": start,
        "confidence": 0.7,
        "last_reinforced_at": start,
        "decays": True,
    }
    return Span(fact_id=fact_id, value=value, start=start, end=end, **{**fields, **extra})


def draw(spans, **extra):
    return layout(spans, now=NOW, half_life_days=90, floor=0.05, **extra)


def test_one_lane_per_value_in_recorded_order_whatever_the_input_order():
    spans = [
        span("b", "2.1", at("2026-03-01")),
        span(
            "a", "2.0", at("2026-01-01"), at("2026-03-01"), ended_as="superseded", superseded_by="b"
        ),
    ]
    assert [lane.label for lane in draw(spans).lanes] == ["2.0", "2.1"]
    assert draw(spans) == draw(list(reversed(spans)))


def test_bars_sit_on_one_time_axis_ending_at_now():
    timeline = draw(
        [
            span("a", "x", at("2026-01-01"), at("2026-03-01")),
            span("b", "y", NOW - timedelta(days=10)),
        ]
    )
    first, second = timeline.bars
    assert timeline.plot_left < first.x < first.x + first.width <= second.x + second.width
    assert second.x + second.width == pytest.approx(timeline.now_x, abs=0.2)


def test_supersession_links_the_old_bar_to_the_new_lane_and_invalidation_is_crossed():
    spans = [
        span(
            "a", "2.0", at("2026-01-01"), at("2026-03-01"), ended_as="superseded", superseded_by="b"
        ),
        span("b", "2.1", at("2026-03-01"), at("2026-04-01"), ended_as="invalidated"),
    ]
    timeline = draw(spans)
    [link] = timeline.links
    assert link.y1 < link.y2
    assert timeline.bars[0].end_mark == "" and timeline.bars[1].end_mark.startswith("M")


def test_decay_curve_falls_for_a_decaying_fact_and_stays_flat_for_a_commitment():
    start = at("2026-01-01")

    def heights(decays):
        [bar] = draw([span("a", "x", start, decays=decays)]).bars
        points = [p for p in bar.curve.split() if p.startswith("L")][:-1]
        return [float(p.split(",")[1]) for p in points]

    falling = heights(True)
    assert falling[0] < falling[-1]  # SVG y grows downwards: the curve sinks
    assert len(set(heights(False))) == 1


def test_open_conflict_is_marked_when_it_opened_and_members_are_flagged():
    opened = at("2026-05-01")
    timeline = draw(
        [span("a", "x", at("2026-01-01"), in_conflict=True, disputed=True)],
        conflict_opened_at=opened,
    )
    assert timeline.plot_left < timeline.conflict_x < timeline.now_x
    assert "in-conflict" in timeline.bars[0].classes and "disputed" in timeline.bars[0].classes
    assert "open conflict began 2026-05-01" in timeline.description


def test_the_fact_a_page_is_about_is_marked_current_and_said_so_in_its_tooltip():
    timeline = draw(
        [span("a", "x", at("2026-01-01")), span("b", "y", at("2026-02-01"), current=True)]
    )
    first, second = timeline.bars
    assert "current" not in first.classes.split() and "current" in second.classes.split()
    assert second.title.endswith(", this fact") and second.value == "y"


def test_compact_small_multiples_share_the_axis_they_are_given():
    axis = (at("2025-01-01"), at("2026-05-01"))
    early = draw([span("a", "x", at("2025-01-01"))], compact=True, axis=axis)
    late = draw([span("b", "y", at("2026-04-01"))], compact=True, axis=axis)
    assert early.compact and early.width < draw([span("a", "x", at("2025-01-01"))]).width
    assert early.now_x == late.now_x
    assert [t.x for t in early.ticks] == [t.x for t in late.ticks] and len(early.ticks) == 3
    assert early.bars[0].x < late.bars[0].x


def chart(now, **extra):
    fields = {
        "base": 0.7,
        "last_reinforced_at": at("2026-01-01"),
        "decays": True,
        "half_life_days": 90,
        "floor": 0.05,
    }
    return decay_chart(now=now, **{**fields, **extra})


@pytest.mark.parametrize(
    ("now", "value"),
    [
        (at("2026-01-01"), 0.7),
        (at("2026-04-01"), 0.35),
        (at("2026-06-30"), 0.175),
        (at("2027-01-01"), 0.05),
    ],
)
def test_the_decay_chart_reads_the_specs_acceptance_values_now(now, value):
    drawn = chart(now)
    assert drawn.now.at == now
    assert drawn.now.value == pytest.approx(value)


def test_the_decay_chart_falls_to_the_floor_and_stays_there():
    drawn = chart(at("2027-06-01"))
    values = [point.value for point in drawn.points + drawn.projection]
    assert values == sorted(values, reverse=True)
    assert values[-1] == pytest.approx(0.05)
    assert drawn.floor_y == max(point.y for point in drawn.points)
    assert drawn.halved_at == at("2026-04-01")


def test_a_fact_that_does_not_decay_is_a_flat_line_without_a_half_life():
    drawn = chart(at("2027-01-01"), base=0.9, decays=False)
    assert {point.value for point in drawn.points + drawn.projection} == {0.9}
    assert drawn.halved_at is None
    assert "does not decay" in drawn.description


def test_the_projection_runs_on_from_now_and_an_ended_fact_has_none():
    drawn = chart(at("2026-03-01"))
    assert drawn.projection[0] == drawn.now
    assert drawn.projection[-1].at > at("2026-03-01")
    assert drawn.projection[-1].x == drawn.plot_right
    assert chart(at("2026-03-01"), projected=False).projection == ()
    assert chart(at("2026-03-01"), projected=False).now.x == drawn.plot_right


def test_a_reinforcement_after_now_draws_a_flat_chart_inside_the_plot():
    drawn = chart(at("2025-12-01"))
    assert {point.value for point in drawn.points} == {0.7}
    assert all(drawn.plot_left <= p.x <= drawn.plot_right for p in drawn.points + drawn.projection)
