"""The slot timeline and the decay chart: geometry for server-rendered SVG.

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
  bar (its height is the confidence), so decay by disuse can be seen;
- the fact a page is about (the fact page's own), outlined darker.

The same picture is drawn full size on the conflict and fact pages and
*compact* (narrower, thinner lanes, three ticks) as the subject page's small
multiples, which share one time axis (``axis``) so their bars line up.

:func:`decay_chart` draws one fact's confidence over time: stored confidence
decaying with disuse from its last reinforcement to now, and on to a little
past now as a projection. Every point is the core's
``effective_confidence`` at that moment; nothing here restates the rule.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memories.core.confidence import effective_confidence

PLOT_LEFT = 10
RIGHT_PAD = 16
TOP = 8
LABEL_CHARS = 60
CURVE_SAMPLES = 24


@dataclass(frozen=True)
class Size:
    """One size of the picture, in SVG units (the picture scales to its box)."""

    width: int
    lane_height: int
    # The label's line at the top of each lane, the bar below it.
    label_height: int
    bar_height: int
    axis_height: int
    ticks: int
    label_chars: int


FULL = Size(
    width=760,
    lane_height=54,
    label_height=26,
    bar_height=22,
    axis_height=36,
    ticks=5,
    label_chars=LABEL_CHARS,
)
# The subject page's small multiples: about as wide as a card, so their text
# reads near its nominal size in a grid of two or three.
COMPACT = Size(
    width=340,
    lane_height=36,
    label_height=18,
    bar_height=13,
    axis_height=30,
    ticks=3,
    label_chars=40,
)

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
    # The fact the page is about (the fact page): drawn outlined darker.
    current: bool = False


@dataclass(frozen=True)
class Bar:
    fact_id: str
    x: float
    y: float
    width: float
    height: float
    classes: str
    # The tooltip: the value (someone else's text, isolated by the template) and the rest.
    value: str
    detail: str
    curve: str  # an SVG path (closed area) of the effective confidence
    ended_as: str
    # A small cross where an invalidated or withdrawn interval closed ("" otherwise).
    end_mark: str

    @property
    def title(self) -> str:
        return f"{self.value}{self.detail}"


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
    compact: bool = False
    # Some bars are a conflict's members (drawn alike, the slot's other values grey).
    has_members: bool = False
    has_disputed: bool = False


def layout(
    spans: Sequence[Span],
    *,
    now: datetime,
    conflict_opened_at: datetime | None = None,
    half_life_days: float,
    floor: float,
    compact: bool = False,
    axis: tuple[datetime, datetime] | None = None,
) -> Timeline:
    """Place every span on a shared time axis that ends at ``now``.

    ``axis``, when given, is a time span the axis covers at least (the
    subject page passes every slot's, so its small multiples share one axis).
    """
    size = COMPACT if compact else FULL
    values: list[str] = []
    for span in sorted(spans, key=lambda s: (s.recorded_at, s.fact_id)):
        if span.value not in values:
            values.append(span.value)

    moments = [span.start for span in spans] + [now]
    moments += [span.end for span in spans if span.end is not None]
    if conflict_opened_at is not None:
        moments.append(conflict_opened_at)
    if axis is not None:
        moments += list(axis)
    first, last = min(moments), max(moments)
    # A little room on both sides, and never a zero-length axis (at the
    # calendar's ends the room is on the other side only).
    padding = max((last - first) * 0.04, timedelta(hours=1))
    first, last = _moved(first, -padding), _moved(last, padding)
    plot_left, plot_right = PLOT_LEFT, size.width - RIGHT_PAD
    seconds = (last - first).total_seconds()

    def x_of(moment: datetime) -> float:
        share = (moment - first).total_seconds() / seconds
        return round(plot_left + share * (plot_right - plot_left), 1)

    lanes = tuple(
        Lane(
            label=value,
            short=_shortened(value, size.label_chars),
            y=TOP + i * size.lane_height,
            height=size.lane_height,
            text_x=PLOT_LEFT,
            text_y=TOP + i * size.lane_height + size.label_height - 5,
        )
        for i, value in enumerate(values)
    )
    bar_top = {lane.label: lane.y + size.label_height for lane in lanes}
    bar_height = size.bar_height
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
        if span.current:
            classes.append("current")
        bars.append(
            Bar(
                fact_id=span.fact_id,
                x=x1,
                y=top,
                width=max(x2 - x1, 2.0),
                height=bar_height,
                classes=" ".join(classes),
                value=span.value,
                detail=_detail(span),
                curve=_curve(
                    span,
                    end,
                    top,
                    x_of,
                    bar_height=bar_height,
                    half_life_days=half_life_days,
                    floor=floor,
                ),
                ended_as=span.ended_as,
                end_mark=_cross(x2, top + bar_height / 2, 5 if not compact else 3.5)
                if span.ended_as in ("invalidated", "withdrawn")
                else "",
            )
        )
        replacement = by_id.get(span.superseded_by or "")
        if span.ended_as == "superseded" and replacement is not None:
            links.append(
                Link(
                    x=x2,
                    y1=top + bar_height / 2,
                    y2=bar_top[replacement.value] + bar_height / 2,
                )
            )

    axis_y = TOP + len(lanes) * size.lane_height + 6
    ticks = tuple(
        Tick(
            x=x_of(moment),
            label=_tick_label(moment, last - first),
            label_y=axis_y + size.axis_height - 12,
            mark_y2=axis_y + 5,
        )
        for moment in (first + (last - first) * (i + 0.5) / size.ticks for i in range(size.ticks))
    )
    return Timeline(
        width=size.width,
        height=int(axis_y + size.axis_height),
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
        compact=compact,
        has_members=any(span.in_conflict for span in spans),
        has_disputed=any(span.disputed for span in spans),
    )


def _moved(moment: datetime, delta: timedelta) -> datetime:
    """``moment + delta``, held to the calendar's ends."""
    try:
        return moment + delta
    except OverflowError:
        end = LATEST if delta > timedelta(0) else EARLIEST
        # The same instant in UTC: any aware time compares and subtracts with it.
        return end if moment.tzinfo is not None else end.replace(tzinfo=None)


def _curve(
    span: Span,
    end: datetime,
    top: float,
    x_of,
    *,
    bar_height: float,
    half_life_days: float,
    floor: float,
) -> str:
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
        points.append((x_of(moment), round(top + bar_height * (1 - value), 1)))
    bottom = top + bar_height
    path = [f"M{points[0][0]},{bottom}"]
    path += [f"L{x},{y}" for x, y in points]
    path.append(f"L{points[-1][0]},{bottom}Z")
    return " ".join(path)


def _cross(x: float, y: float, arm: float = 5) -> str:
    return f"M{x - arm},{y - arm} l{2 * arm},{2 * arm} m0,{-2 * arm} l{-2 * arm},{2 * arm}"


def _minute(moment: datetime) -> str:
    """``YYYY-MM-DD HH:MM``; strftime's ``%Y`` drops the leading zeros of years before 1000."""
    return moment.isoformat(" ", "minutes")[:16]


def _shortened(label: str, chars: int = LABEL_CHARS) -> str:
    return label if len(label) <= chars else label[: chars - 1].rstrip() + "…"


def _detail(span: Span) -> str:
    """The tooltip after the value: source, interval, how it ended, its part in a conflict."""
    period = f"valid from {_minute(span.start)}"
    period += f" to {_minute(span.end)}" if span.end else ", still valid"
    source = f" (from {span.source})" if span.source else ""
    ended = f", {span.ended_as}" if span.ended_as else ""
    member = ", in this conflict" if span.in_conflict else ""
    disputed = ", disputed" if span.disputed else ""
    current = ", this fact" if span.current else ""
    return f"{source}: {period}{ended}{member}{disputed}{current}"


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


# --- one fact's confidence over time ----------------------------------------------------

DECAY_WIDTH = 640
DECAY_HEIGHT = 220
DECAY_LEFT = 56
DECAY_RIGHT = 16
DECAY_TOP = 12
DECAY_BOTTOM = 34
DECAY_SAMPLES = 48
# How far past now the projection runs: a third of the time drawn so far, at least this.
PROJECTION_AT_LEAST = timedelta(days=30)


@dataclass(frozen=True)
class Point:
    """One sample of the curve: the moment, the core's value then, and where it is drawn."""

    at: datetime
    value: float
    x: float
    y: float


@dataclass(frozen=True)
class Gridline:
    value: float
    y: float
    label: str


@dataclass(frozen=True)
class DecayChart:
    width: int
    height: int
    plot_left: int
    plot_right: int
    plot_top: int
    plot_bottom: int
    # The past (last reinforcement to now) and the projection (now on, if unused).
    points: tuple[Point, ...]
    projection: tuple[Point, ...]
    line: str
    area: str
    projection_line: str
    now: Point
    floor_y: float
    floor: float
    base: float
    decays: bool
    half_life_days: float
    # The "now" label's side of its point, so it stays inside the plot.
    now_anchor: str
    # When the value reaches half its base, if it ever does (above the floor).
    halved_at: datetime | None
    half_value: float
    gridlines: tuple[Gridline, ...]
    ticks: tuple[Tick, ...]
    description: str


def decay_chart(
    *,
    base: float,
    last_reinforced_at: datetime,
    decays: bool,
    now: datetime,
    half_life_days: float,
    floor: float,
    projected: bool = True,
) -> DecayChart:
    """The effective confidence from the last reinforcement to now (and, ``projected``, beyond).

    Each point's value is :func:`effective_confidence` at its moment, so the
    picture is the rule's own answer; the value at ``now`` is one of the points.
    """
    start = min(last_reinforced_at, now)
    drawn = max(now - start, timedelta(hours=1))
    end = now + max(drawn / 3, PROJECTION_AT_LEAST) if projected else now
    plot_left, plot_right = DECAY_LEFT, DECAY_WIDTH - DECAY_RIGHT
    plot_top, plot_bottom = DECAY_TOP, DECAY_HEIGHT - DECAY_BOTTOM
    seconds = max((end - start).total_seconds(), 1.0)

    def x_of(moment: datetime) -> float:
        share = (moment - start).total_seconds() / seconds
        return round(plot_left + share * (plot_right - plot_left), 1)

    def y_of(value: float) -> float:
        return round(plot_bottom - value * (plot_bottom - plot_top), 1)

    def point(moment: datetime) -> Point:
        value = effective_confidence(
            base,
            last_reinforced_at=last_reinforced_at,
            at=moment,
            decays=decays,
            half_life_days=half_life_days,
            floor=floor,
        )
        return Point(at=moment, value=value, x=x_of(moment), y=y_of(value))

    # Samples spread over the whole width, split at now so that now is a point of both parts.
    past_share = (now - start) / (end - start) if end > start else 1.0
    past_samples = max(2, round(DECAY_SAMPLES * past_share))
    # The last sample is ``now`` itself, not a sum that could round a microsecond off it.
    moments = [start + (now - start) * i / past_samples for i in range(past_samples)] + [now]
    past = tuple(point(moment) for moment in moments)
    future_samples = DECAY_SAMPLES - past_samples
    projection = (
        tuple(point(now + (end - now) * i / future_samples) for i in range(future_samples + 1))
        if projected and future_samples > 0
        else ()
    )
    at_now = past[-1]
    halved_at = None
    if decays and base / 2 >= floor and base > 0:
        halved_at = _moved(last_reinforced_at, timedelta(days=half_life_days))
    ticks = tuple(
        Tick(
            x=x_of(moment),
            label=_tick_label(moment, end - start),
            label_y=plot_bottom + 22,
            mark_y2=plot_bottom + 5,
        )
        for moment in (start + (end - start) * (i + 0.5) / 4 for i in range(4))
    )
    return DecayChart(
        width=DECAY_WIDTH,
        height=DECAY_HEIGHT,
        plot_left=plot_left,
        plot_right=plot_right,
        plot_top=plot_top,
        plot_bottom=plot_bottom,
        points=past,
        projection=projection,
        line=_polyline(past),
        area=f"{_polyline(past)} L{past[-1].x},{plot_bottom} L{past[0].x},{plot_bottom}Z",
        projection_line=_polyline(projection) if projection else "",
        now=at_now,
        floor_y=y_of(floor),
        floor=floor,
        base=base,
        decays=decays,
        half_life_days=half_life_days,
        now_anchor="end" if at_now.x > (plot_left + plot_right) / 2 else "start",
        halved_at=halved_at,
        half_value=base / 2,
        gridlines=tuple(Gridline(v, y_of(v), f"{v:.2f}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)),
        ticks=ticks,
        description=_describe_decay(base, at_now.value, decays, half_life_days, floor),
    )


def _polyline(points: Sequence[Point]) -> str:
    return " ".join(f"{'M' if i == 0 else 'L'}{p.x},{p.y}" for i, p in enumerate(points))


def _describe_decay(base: float, now: float, decays: bool, half_life_days: float, floor: float):
    """The chart in one sentence, numbers included, for screen readers."""
    if not decays:
        return f"Confidence {base:.2f}, constant: this fact does not decay."
    return (
        f"Confidence {base:.2f} at the last reinforcement, {now:.2f} now; without use it"
        f" halves every {half_life_days:g} days and never reads below {min(base, floor):.2f}."
    )
