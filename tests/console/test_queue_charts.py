"""The dashboard's queue charts as data: geometry in, numbers out (console.queue_charts)."""

from datetime import date, timedelta

import pytest

from console.queue_charts import (
    DAYS,
    PLOT_BOTTOM,
    PLOT_LEFT,
    PLOT_RIGHT,
    PLOT_TOP,
    ZERO_HEIGHT,
    Day,
    age_words,
    queue_chart,
)

TODAY = date(2026, 12, 5)
HOUR = 3_600
DAY = 86_400


def ago(n: int) -> date:
    return TODAY - timedelta(days=n)


def full_month(size: int = 3, age: int | None = DAY) -> list[Day]:
    return [Day(ago(n), size, age) for n in range(DAYS + 1)]


def test_every_day_of_the_window_is_a_bar_or_a_gap_and_days_outside_it_are_left_out():
    days = [Day(ago(n), 2, HOUR) for n in (0, 1, 5, DAYS, DAYS + 1, -1)]
    chart = queue_chart(days, today=TODAY)
    assert len(chart.bars) == 4
    assert len(chart.gaps) == DAYS + 1 - 4
    assert chart.bars[0].x < chart.bars[-1].x  # oldest on the left


def test_a_day_without_a_snapshot_is_a_gap_and_an_empty_queue_a_zero():
    chart = queue_chart([Day(ago(2), 0, None), Day(ago(0), 4, DAY)], today=TODAY)
    zero, four = chart.bars
    assert zero.zero and zero.height == ZERO_HEIGHT and zero.y == PLOT_BOTTOM - ZERO_HEIGHT
    assert not four.zero and four.y == PLOT_TOP and four.height == PLOT_BOTTOM - PLOT_TOP
    assert [gap.title for gap in chart.gaps][-1] == f"{ago(1)}: no snapshot"
    slot = (PLOT_RIGHT - PLOT_LEFT) / (DAYS + 1)
    yesterday = chart.gaps[-1]
    assert yesterday.width == pytest.approx(slot, abs=0.1)
    assert yesterday.x == pytest.approx(PLOT_RIGHT - 2 * slot, abs=0.1)
    assert four.x > yesterday.x + yesterday.width  # today's bar in the next slot
    assert zero.title == f"{ago(2)}: none waiting"
    assert four.title == f"{TODAY}: 4 waiting, the oldest 24 hours old"


def test_bars_are_scaled_to_the_largest_day():
    chart = queue_chart([Day(ago(1), 10, HOUR), Day(ago(0), 5, HOUR)], today=TODAY)
    ten, five = chart.bars
    assert chart.size_top == 10
    assert ten.height == pytest.approx(2 * five.height, abs=0.1)


@pytest.mark.parametrize(
    ("days", "moves"),
    [
        (full_month(), 1),
        # A gap and an empty day each break the line; a lone day is a point of its own.
        (
            [Day(ago(n), 1, HOUR) for n in (9, 8, 6, 5, 3)]
            + [Day(ago(4), 0, None), Day(ago(7), 0, None)],
            3,
        ),
        ([Day(ago(0), 0, None)], 0),
    ],
)
def test_the_age_line_is_broken_where_nothing_waited_or_nothing_was_recorded(days, moves):
    chart = queue_chart(days, today=TODAY)
    assert chart.age_line.count("M") == moves
    assert len(chart.age_points) == sum(1 for d in days if d.oldest_age_seconds is not None)


def test_the_age_scale_reaches_the_target_and_the_oldest_age_whichever_is_larger():
    under = queue_chart([Day(ago(0), 1, 6 * HOUR)], today=TODAY, target_seconds=24 * HOUR)
    assert under.target_y == PLOT_TOP
    assert under.age_points[0].y == pytest.approx(PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) / 4)
    assert under.target_title == "target: under 24 hours"
    over = queue_chart([Day(ago(0), 1, 4 * DAY)], today=TODAY, target_seconds=DAY)
    assert over.age_points[0].y == PLOT_TOP
    assert over.age_top_label == "4 days"
    assert over.target_y == pytest.approx(PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) / 4, abs=0.1)
    assert queue_chart([Day(ago(0), 1, DAY)], today=TODAY).target_y is None


def test_everything_drawn_stays_inside_the_picture():
    chart = queue_chart(full_month(size=7, age=40 * DAY), today=TODAY, target_seconds=HOUR)
    for bar in chart.bars:
        assert bar.x >= PLOT_LEFT and bar.x + bar.width <= PLOT_RIGHT
        assert bar.y >= PLOT_TOP and bar.y + bar.height <= PLOT_BOTTOM + 0.05
    for point in chart.age_points:
        assert PLOT_LEFT <= point.x <= PLOT_RIGHT and PLOT_TOP <= point.y <= PLOT_BOTTOM
    assert [label.anchor for label in chart.axis_labels] == ["start", "middle", "end"]
    assert chart.axis_labels[0].label == "30 days ago" and chart.axis_labels[-1].label == "today"
    assert 0 < chart.axis_label_y < chart.height


@pytest.mark.parametrize(
    ("days", "said"),
    [
        ([], "No snapshot in the last 30 days yet: the worker records one each day."),
        (
            [Day(ago(30), 4, DAY), *[Day(ago(n), 12, 3 * DAY) for n in range(30)]],
            "12 waiting today, the oldest 3 days old; 30 days ago 4; at most 12.",
        ),
        (
            [Day(ago(10), 2, 5 * HOUR), Day(ago(2), 0, None)],
            f"None waiting on {ago(2)} (the latest snapshot); 10 days ago 2; at most 2."
            " No snapshot on 29 days of 31.",
        ),
        (
            [Day(ago(0), 1, 90)],
            "1 waiting today, the oldest 1 minute old; at most 1. No snapshot on 30 days of 31.",
        ),
    ],
)
def test_the_chart_says_in_words_what_it_draws(days, said):
    chart = queue_chart(days, today=TODAY)
    assert chart.description == said
    assert chart.empty == (not days)


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0, "under a minute"),
        (59, "under a minute"),
        (60, "1 minute"),
        (3_599, "59 minutes"),
        (HOUR, "1 hour"),
        (47 * HOUR, "47 hours"),
        (2 * DAY, "2 days"),
        (400 * DAY + 5, "400 days"),
    ],
)
def test_an_age_reads_in_its_largest_whole_unit(seconds, words):
    assert age_words(seconds) == words
