"""``make bench``: every target of issue 14 at 100,000 and at 1,000,000 facts, in one table.

Not a test. For each size it creates a database of its own, fills it with
``bench/generate.py`` (the same seed, so the two stores differ only in size),
then asks each measuring module for its figures on both stores, one module at
a time, the two sizes back to back, so a burst of load elsewhere on the
machine falls on both sizes of a figure alike. Every figure is a ratio to a
baseline measured in the same run (or a query count); the table prints each
beside its target with PASS or FAIL, and then the growth of every read's p95
from the small store to the large one (target ≤ 1.3).

The modules, in the order they run (the crawler and the import change the
store, so they come last; the import last of all, since the facts it adds
would be walked by a crawler pass after it):

- ``write_path``: ``assert_fact`` and ``POST /api/v1/facts`` against the raw
  write transaction;
- ``reads``: one fact, a recall over REST and over MCP, the conflicts list,
  against one ``POST /api/v1/facts``;
- ``pages`` (``bench/pages.py``): every console page against its plain SQL, and one fact's status;
- ``search`` (``bench/search.py``): ``GET /api/v1/search`` for one word against one
  ``POST /api/v1/facts`` (it writes a dozen facts holding the word first);
- ``events`` (``bench/events.py``): what notifications add to a write that opens a
  conflict (INSERTs into their tables: none), and the feed's passes after it;
- ``crawler``: a pass against a sequential read of the same facts, and the
  second pass against the first;
- ``ingest``: the bulk import against a COPY into a bare table.

    .venv/bin/python bench/scale.py [--sizes 100000,1000000] [--only reads,pages] [--keep]
"""

import argparse
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable

import crawler
import events
import ingest
import pages
import reads
import search
import write_path
from _figures import Figure, Store
from _setup import create_database, drop_database, start_django, use_database
from generate import generate

MEASURES = {
    "write_path": write_path.measure,
    "reads": reads.measure,
    "pages": pages.measure,
    "search": search.measure,
    "events": events.measure,
    "crawler": crawler.measure,
    "ingest": ingest.measure,
}
SIZES = (100_000, 1_000_000)
GROWTH_TARGET = 1.3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(size) for size in SIZES),
        help="facts in each store, comma-separated, smallest first",
    )
    parser.add_argument(
        "--only", default="", help=f"some of the measures, comma-separated: {', '.join(MEASURES)}"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds within each measure")
    parser.add_argument("--keep", action="store_true", help="leave the databases in place")
    options = parser.parse_args()
    sizes = [int(size) for size in options.sizes.split(",")]
    names = [name for name in options.only.split(",") if name] or list(MEASURES)
    unknown = sorted(set(names) - set(MEASURES))
    if unknown:
        parser.error(f"unknown measures: {', '.join(unknown)}")

    # The in-process requests run whitenoise without a collectstatic; it says
    # so once per handler, which says nothing about the figures.
    warnings.filterwarnings("ignore", message="No directory at")
    started = time.perf_counter()
    databases = {size: f"bench_scale_{size}" for size in sizes}
    start_django(databases[sizes[0]])
    try:
        stores = _generate(sizes, databases)
        figures: dict[int, list[Figure]] = {size: [] for size in sizes}
        for name in names:
            for size in sizes:
                use_database(databases[size])
                step = time.perf_counter()
                figures[size].extend(MEASURES[name](stores[size], rounds=options.rounds))
                _say(f"{name} at {size:,} facts: {time.perf_counter() - step:.0f} s")
        print()
        print(_machine())
        print()
        print(table(figures, sizes))
        print()
        print(details(figures, sizes))
        _say(f"make bench took {(time.perf_counter() - started) / 60:.1f} minutes")
    finally:
        if not options.keep:
            for database in databases.values():
                drop_database(database)


def _generate(sizes: list[int], databases: dict[int, str]) -> dict[int, Store]:
    stores = {}
    for size in sizes:
        if size != sizes[0]:
            create_database(databases[size])
        use_database(databases[size])
        step = time.perf_counter()
        stores[size] = generate(size)
        _say(f"generated {size:,} facts in {time.perf_counter() - step:.0f} s")
    return stores


def table(figures: dict[int, list[Figure]], sizes: list[int]) -> str:
    """The measures beside their targets at each size, then the growth of each p95."""
    header = ["measure", "target", *(f"{size:,} facts" for size in sizes), "result"]
    rows = []
    by_size = {size: {figure.measure: figure for figure in figures[size]} for size in sizes}
    for measure in dict.fromkeys(figure.measure for size in sizes for figure in figures[size]):
        found = [by_size[size].get(measure) for size in sizes]
        present = [figure for figure in found if figure is not None]
        cells = [_value(figure) for figure in found]
        passed = all(figure.passed() for figure in present) and len(present) == len(sizes)
        target = present[0].target
        counts = {figure.queries for figure in present if figure.queries is not None}
        if len(counts) > 1:
            passed = False
            target += "; queries constant"
        rows.append([measure, target, *cells, _verdict(passed)])
    small, large = sizes[0], sizes[-1]
    for key, (at_small, at_large) in growth(figures, small, large).items():
        ratio = at_large / at_small
        rows.append(
            [
                f"p95 of {key}, {large:,} / {small:,} facts",
                f"<= {GROWTH_TARGET}",
                *([f"{at_small:.2f} ms"] + [""] * (len(sizes) - 2) + [f"{at_large:.2f} ms"]),
                f"{ratio:.2f} {_verdict(ratio <= GROWTH_TARGET)}",
            ]
        )
    return _markdown(header, rows)


def growth(
    figures: dict[int, list[Figure]], small: int, large: int
) -> dict[str, tuple[float, float]]:
    """Each read's p95 at the smallest and at the largest size."""

    def p95s(size: int) -> dict[str, float]:
        return {key: value for figure in figures[size] for key, value in figure.p95_ms.items()}

    at_small, at_large = p95s(small), p95s(large)
    return {key: (at_small[key], at_large[key]) for key in at_small if key in at_large}


def details(figures: dict[int, list[Figure]], sizes: list[int]) -> str:
    """What each figure compared, size by size: the two sides and their counts."""
    lines = ["What each figure compared:"]
    for size in sizes:
        lines.append(f"  at {size:,} facts")
        lines.extend(f"    {figure.measure}: {figure.detail}" for figure in figures[size])
    return "\n".join(lines)


def _value(figure: Figure | None) -> str:
    if figure is None:
        return "-"
    value = f"{figure.value:.3f}" if figure.value < 10 else f"{figure.value:,.1f}"
    if figure.queries is not None:
        value += f" ({figure.queries} queries)"
    return f"{value} {_verdict(figure.passed())}"


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def _machine() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        (server,) = cursor.fetchone()
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()},"
        f" PostgreSQL {server} ({connection.settings_dict['HOST'] or 'socket'}),"
        f" load average {load}"
    )


def _say(message: str, out: Callable[[str], object] = print) -> None:
    out(f"[{time.strftime('%H:%M:%S')}] {message}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
