"""The slot timeline of the conflict page: geometry for a server-rendered SVG.

Pure: no database, no clock, no Django. The view describes each fact of the
slot as a :class:`Span` (its valid interval, how it ended, its decay inputs)
and passes ``now``; :func:`layout` returns plain numbers and strings that the
template turns into SVG elements, so the markup stays in a template (and is
escaped there) while every coordinate can be tested as data.

What it draws, one lane per value (the object; across an exclusion group the
predicate and the object), lanes in the order the values were first recorded
so no candidate is favoured by its position. Each lane's label (the value,
shortened past ``LABEL_CHARS`` with the whole of it in a tooltip) sits above
its bars, so the time axis has the full width and a narrow screen can scale
the picture down without clipping it:

- a bar from ``t_valid`` to ``t_invalid`` (or to now, still valid);
- how a closed interval ended: superseded (a dashed link to the lane of the
  fact that replaced it), invalidated or withdrawn (a cross);
- the open conflict: a vertical line when it opened, and its members' bars
  outlined, every member alike (equal weight: which member is disputed is
  said in its tooltip, not drawn);
- the effective confidence over the visible time as a shaded curve inside the
  bar (its height is the confidence), so decay by disuse can be seen.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memories.core.confidence import effective_confidence

WIDTH = 760
PLOT_LEFT = 10
RIGHT_PAD = 16
TOP = 8
LANE_HEIGHT = 54
# The label's line at the top of each lane, the bar below it.
LABEL_HEIGHT = 26
BAR_HEIGHT = 22
LABEL_CHARS = 60
AXIS_HEIGHT = 36
CURVE_SAMPLES = 24
TICKS = 5

# The ends of Python's calendar. A fact may be valid from its first instant or
# until its last (any time the write path accepts), and the axis' padding
# around such a time must stop there instead of stepping off the calendar.
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Span:
    """One fact of the slot, as the timeline needs it."""

    fact_id: str
    value: str
    start: datetime
    end: datetime | None
    # "", "superseded", "invalidated" or "withdrawn".
    ended_as: str
    superseded_by: str | None
    in_conflict: bool
    disputed: bool
    recorded_at: datetime
    confidence: float
    last_reinforced_at: datetime
    decays: bool
    # The source type's name, for the tooltip.
    source: str = ""


@dataclass(frozen=True)
class Bar:
    fact_id: str
    x: float
    y: float
    width: float
    height: float
    classes: str
    title: str
    curve: str  # an SVG path (closed area) of the effective confidence
    ended_as: str
    # A small cross where an invalidated or withdrawn interval closed ("" otherwise).
    end_mark: str


@dataclass(frozen=True)
class Link:
    """A supersession: from the end of one bar to the lane of its replacement."""

    x: float
    y1: float
    y2: float


@dataclass(frozen=True)
class Lane:
    label: str
    # The label as drawn: shortened past LABEL_CHARS (the whole one is its tooltip).
    short: str
    y: float
    height: float
    text_x: float
    text_y: float


@dataclass(frozen=True)
class Tick:
    x: float
    label: str
    label_y: float
    mark_y2: float


@dataclass(frozen=True)
class Timeline:
    width: int
    height: int
    plot_left: int
    plot_right: int
    axis_y: float
    lanes: tuple[Lane, ...]
    bars: tuple[Bar, ...]
    links: tuple[Link, ...]
    ticks: tuple[Tick, ...]
    now_x: float
    conflict_x: float | None
    description: str


def layout(
    spans: Sequence[Span],
    *,
    now: datetime,
    conflict_opened_at: datetime | None = None,
    half_life_days: float,
    floor: float,
) -> Timeline:
    """Place every span on a shared time axis that ends at ``now``."""
    values: list[str] = []
    for span in sorted(spans, key=lambda s: (s.recorded_at, s.fact_id)):
        if span.value not in values:
            values.append(span.value)

    moments = [span.start for span in spans] + [now]
    moments += [span.end for span in spans if span.end is not None]
    if conflict_opened_at is not None:
        moments.append(conflict_opened_at)
    first, last = min(moments), max(moments)
    # A little room on both sides, and never a zero-length axis (at the
    # calendar's ends the room is on the other side only).
    padding = max((last - first) * 0.04, timedelta(hours=1))
    first, last = _moved(first, -padding), _moved(last, padding)
    plot_left, plot_right = PLOT_LEFT, WIDTH - RIGHT_PAD
    seconds = (last - first).total_seconds()

    def x_of(moment: datetime) -> float:
        share = (moment - first).total_seconds() / seconds
        return round(plot_left + share * (plot_right - plot_left), 1)

    lanes = tuple(
        Lane(
            label=value,
            short=_shortened(value),
            y=TOP + i * LANE_HEIGHT,
            height=LANE_HEIGHT,
            text_x=PLOT_LEFT,
            text_y=TOP + i * LANE_HEIGHT + LABEL_HEIGHT - 5,
        )
        for i, value in enumerate(values)
    )
    bar_top = {lane.label: lane.y + LABEL_HEIGHT for lane in lanes}
    by_id = {span.fact_id: span for span in spans}

    bars = []
    links = []
    for span in sorted(spans, key=lambda s: (s.recorded_at, s.fact_id)):
        end = span.end or now
        x1, x2 = x_of(span.start), x_of(max(end, span.start))
        top = bar_top[span.value]
        classes = ["bar"]
        classes.append("closed" if span.end is not None else "open")
        if span.in_conflict:
            classes.append("in-conflict")
        if span.disputed:
            classes.append("disputed")
        bars.append(
            Bar(
                fact_id=span.fact_id,
                x=x1,
                y=top,
                width=max(x2 - x1, 2.0),
                height=BAR_HEIGHT,
                classes=" ".join(classes),
                title=_title(span),
                curve=_curve(span, end, top, x_of, half_life_days=half_life_days, floor=floor),
                ended_as=span.ended_as,
                end_mark=_cross(x2, top + BAR_HEIGHT / 2)
                if span.ended_as in ("invalidated", "withdrawn")
                else "",
            )
        )
        replacement = by_id.get(span.superseded_by or "")
        if span.ended_as == "superseded" and replacement is not None:
            links.append(
                Link(
                    x=x2,
                    y1=top + BAR_HEIGHT / 2,
                    y2=bar_top[replacement.value] + BAR_HEIGHT / 2,
                )
            )

    axis_y = TOP + len(lanes) * LANE_HEIGHT + 6
    ticks = tuple(
        Tick(
            x=x_of(moment),
            label=_tick_label(moment, last - first),
            label_y=axis_y + 24,
            mark_y2=axis_y + 5,
        )
        for moment in (first + (last - first) * (i + 0.5) / TICKS for i in range(TICKS))
    )
    return Timeline(
        width=WIDTH,
        height=int(axis_y + AXIS_HEIGHT),
        plot_left=plot_left,
        plot_right=plot_right,
        axis_y=axis_y,
        lanes=lanes,
        bars=tuple(bars),
        links=tuple(links),
        ticks=ticks,
        now_x=x_of(now),
        conflict_x=x_of(conflict_opened_at) if conflict_opened_at is not None else None,
        description=_describe(spans, values, conflict_opened_at),
    )


def _moved(moment: datetime, delta: timedelta) -> datetime:
    """``moment + delta``, held to the calendar's ends."""
    try:
        return moment + delta
    except OverflowError:
        end = LATEST if delta > timedelta(0) else EARLIEST
        # The same instant in UTC: any aware time compares and subtracts with it.
        return end if moment.tzinfo is not None else end.replace(tzinfo=None)


def _curve(span: Span, end: datetime, top: float, x_of, *, half_life_days: float, floor: float):
    """A closed path: the effective confidence from the span's start to its end."""
    start = span.start
    points = []
    for i in range(CURVE_SAMPLES + 1):
        moment = start + (end - start) * i / CURVE_SAMPLES
        value = effective_confidence(
            span.confidence,
            last_reinforced_at=span.last_reinforced_at,
            at=moment,
            decays=span.decays,
            half_life_days=half_life_days,
            floor=floor,
        )
        points.append((x_of(moment), round(top + BAR_HEIGHT * (1 - value), 1)))
    bottom = top + BAR_HEIGHT
    path = [f"M{points[0][0]},{bottom}"]
    path += [f"L{x},{y}" for x, y in points]
    path.append(f"L{points[-1][0]},{bottom}Z")
    return " ".join(path)


def _cross(x: float, y: float) -> str:
    return f"M{x - 5},{y - 5} l10,10 m0,-10 l-10,10"


def _minute(moment: datetime) -> str:
    """``YYYY-MM-DD HH:MM``; strftime's ``%Y`` drops the leading zeros of years before 1000."""
    return moment.isoformat(" ", "minutes")[:16]


def _shortened(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1].rstrip() + "…"


def _title(span: Span) -> str:
    period = f"valid from {_minute(span.start)}"
    period += f" to {_minute(span.end)}" if span.end else ", still valid"
    source = f" (from {span.source})" if span.source else ""
    ended = f", {span.ended_as}" if span.ended_as else ""
    member = ", in this conflict" if span.in_conflict else ""
    disputed = ", disputed" if span.disputed else ""
    return f"{span.value}{source}: {period}{ended}{member}{disputed}"


def _tick_label(moment: datetime, extent: timedelta) -> str:
    if extent <= timedelta(days=3):
        return _minute(moment)[5:]
    return _minute(moment)[:10]


def _describe(spans: Sequence[Span], values: Sequence[str], opened: datetime | None) -> str:
    """The same picture in one sentence, for screen readers."""
    live = sum(1 for span in spans if span.end is None)
    text = f"{len(values)} value(s) over time, {len(spans)} fact(s), {live} still valid."
    if opened is not None:
        text += f" The open conflict began {_minute(opened)}."
    return text
