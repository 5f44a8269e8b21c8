"""A review queue over the last 30 days: geometry for the dashboard's small SVG charts.

Pure, as ``console.timeline`` is: no database, no clock, no Django. The view
reads the daily snapshots (``admissions.snapshots``) summed over the viewer's
scopes, one :class:`Day` per day that has one, and passes ``today``;
:func:`queue_chart` returns plain numbers and strings that the template
``console/includes/queue_chart.html`` turns into SVG, so every coordinate can
be tested as data and the markup is escaped where it is written.

What it draws, one slot per day from 30 days ago to today:

- a bar per day for how many items waited (its scale, from 0 to the
  largest, is labelled at the top left); a day when nothing waited is a flat
  mark on the baseline, so it reads as a zero;
- a line for the age of the oldest item waiting (its own scale, from 0 to
  the larger of the oldest age and the queue's target, labelled at the top
  right), broken where nothing waited or no snapshot was taken;
- the queue's target age as a dashed line on the age scale, when given;
- a day without a snapshot is a gap: no bar, no point, a pale band over its
  slot, never a zero (nobody knows what waited then).

The same picture in words (``description``), for the SVG's ``<desc>`` and
the caption under it: "12 waiting today, the oldest 3 days old; 30 days ago 4."
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

# The chart spans today and the DAYS days before it.
DAYS = 30
WIDTH = 300
HEIGHT = 112
PLOT_LEFT = 4
PLOT_RIGHT = WIDTH - 4
PLOT_TOP = 18
PLOT_BOTTOM = HEIGHT - 20
# The share of a day's slot its bar fills, the rest a gap between bars.
BAR_SHARE = 0.7
# A zero day's mark: a bar this high, so it shows as a zero, not as nothing.
ZERO_HEIGHT = 1.5


@dataclass(frozen=True)
class Day:
    """One day's snapshot of one queue (summed over the scopes drawn)."""

    day: date
    size: int
    # None when nothing waited.
    oldest_age_seconds: int | None


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    zero: bool
    title: str


@dataclass(frozen=True)
class Gap:
    """A day without a snapshot: a pale band over its slot."""

    x: float
    width: float
    title: str


@dataclass(frozen=True)
class AgePoint:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class AxisLabel:
    x: float
    label: str
    # "start", "middle" or "end": the label stays inside the picture.
    anchor: str


@dataclass(frozen=True)
class QueueChart:
    width: int
    height: int
    plot_left: float
    plot_right: float
    plot_top: float
    plot_bottom: float
    bars: tuple[Bar, ...]
    gaps: tuple[Gap, ...]
    age_points: tuple[AgePoint, ...]
    # An SVG path through the age points, one stretch per run of consecutive days.
    age_line: str
    target_y: float | None
    target_title: str
    size_top: int
    age_top_label: str
    axis_labels: tuple[AxisLabel, ...]
    axis_label_y: float
    description: str

    @property
    def plot_height(self) -> float:
        return self.plot_bottom - self.plot_top

    @property
    def empty(self) -> bool:
        """Whether no day of the window has a snapshot (there is nothing to draw)."""
        return not self.bars


def queue_chart(
    days: Sequence[Day], *, today: date, target_seconds: float | None = None
) -> QueueChart:
    """Place each day of the last ``DAYS`` (and today) that has a snapshot; the rest are gaps.

    Days outside the window are left out; ``days`` may come in any order.
    """
    first = today - timedelta(days=DAYS)
    shown = {d.day: d for d in days if first <= d.day <= today}
    slot = (PLOT_RIGHT - PLOT_LEFT) / (DAYS + 1)
    height = PLOT_BOTTOM - PLOT_TOP
    size_top = max([d.size for d in shown.values()] + [1])
    ages = [d.oldest_age_seconds for d in shown.values() if d.oldest_age_seconds is not None]
    age_top = max([*ages, target_seconds or 0, 1])

    def left(day: date) -> float:
        return PLOT_LEFT + (day - first).days * slot

    def age_y(seconds: float) -> float:
        return round(PLOT_BOTTOM - seconds / age_top * height, 1)

    bars, gaps, points = [], [], []
    line: list[str] = []
    drawing = False
    for offset in range(DAYS + 1):
        day = first + timedelta(days=offset)
        found = shown.get(day)
        if found is None:
            gaps.append(Gap(round(left(day), 1), round(slot, 1), f"{day}: no snapshot"))
            drawing = False
            continue
        bar_height = max(found.size / size_top * height, ZERO_HEIGHT)
        title = f"{day}: {_in_words(found)}"
        bars.append(
            Bar(
                x=round(left(day) + slot * (1 - BAR_SHARE) / 2, 1),
                y=round(PLOT_BOTTOM - bar_height, 1),
                width=round(slot * BAR_SHARE, 1),
                height=round(bar_height, 1),
                zero=found.size == 0,
                title=title,
            )
        )
        if found.oldest_age_seconds is None:
            drawing = False
            continue
        point = AgePoint(round(left(day) + slot / 2, 1), age_y(found.oldest_age_seconds), title)
        points.append(point)
        line.append(f"{'L' if drawing else 'M'}{point.x},{point.y}")
        drawing = True

    return QueueChart(
        width=WIDTH,
        height=HEIGHT,
        plot_left=PLOT_LEFT,
        plot_right=PLOT_RIGHT,
        plot_top=PLOT_TOP,
        plot_bottom=PLOT_BOTTOM,
        bars=tuple(bars),
        gaps=tuple(gaps),
        age_points=tuple(points),
        age_line=" ".join(line),
        target_y=age_y(target_seconds) if target_seconds else None,
        target_title=f"target: under {age_words(target_seconds)}" if target_seconds else "",
        size_top=size_top,
        age_top_label=age_words(age_top) if ages else "",
        axis_labels=(
            AxisLabel(PLOT_LEFT, f"{DAYS} days ago", "start"),
            AxisLabel(
                round(left(first + timedelta(days=DAYS // 2)) + slot / 2, 1),
                f"{DAYS // 2} days ago",
                "middle",
            ),
            AxisLabel(PLOT_RIGHT, "today", "end"),
        ),
        axis_label_y=HEIGHT - 5,
        description=_describe(shown, today=today),
    )


def age_words(seconds: float) -> str:
    """An age in the largest whole unit that reads well: "40 minutes", "36 hours", "3 days"."""
    if seconds < 60:
        return "under a minute"
    for unit, size, below in (("minute", 60, 3_600), ("hour", 3_600, 2 * 86_400)):
        if seconds < below:
            return _count(int(seconds // size), unit)
    return _count(int(seconds // 86_400), "day")


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


def _in_words(day: Day) -> str:
    if day.size == 0 or day.oldest_age_seconds is None:
        return "none waiting"
    return f"{day.size} waiting, the oldest {age_words(day.oldest_age_seconds)} old"


def _describe(shown: dict[date, Day], *, today: date) -> str:
    """The chart in a sentence or two: the latest day, the first one drawn, the days missing."""
    if not shown:
        return f"No snapshot in the last {DAYS} days yet: the worker records one each day."
    latest = shown[max(shown)]
    when = "today" if latest.day == today else f"on {latest.day} (the latest snapshot)"
    if latest.size == 0 or latest.oldest_age_seconds is None:
        text = f"None waiting {when}"
    else:
        text = (
            f"{latest.size} waiting {when}, the oldest {age_words(latest.oldest_age_seconds)} old"
        )
    earliest = shown[min(shown)]
    if earliest.day != latest.day:
        ago = (today - earliest.day).days
        text += f"; {_count(ago, 'day')} ago {earliest.size}"
    text += f"; at most {max(d.size for d in shown.values())}."
    missing = DAYS + 1 - len(shown)
    if missing:
        text += f" No snapshot on {_count(missing, 'day')} of {DAYS + 1}."
    return text
