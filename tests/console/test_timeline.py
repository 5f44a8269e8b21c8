"""The slot timeline's geometry, as data: no database, no browser."""

from datetime import timedelta

import pytest

from console.timeline import Span, layout
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
