"""``import_facts FILE.jsonl [--episode NAME] [--as USERNAME]``: bulk assertions (SPEC §12).

One assertion per line, with the fields of ``POST /api/v1/facts``; the same
decisions as asserting each line on its own (``memories.write.ingest``).
"""

import os

import tqdm
from django.core.management.base import BaseCommand, CommandError

from memories.management.commands._accounts import SHELL_ACCOUNT, acting_account
from memories.write.ingest import (
    BATCH_SIZE,
    ImportReport,
    ImportStopped,
    default_workers,
    import_lines,
    read_raw_lines,
)

STATUSES = ("created", "reinforced", "superseded", "flagged", "rejected")
# How many capped lines the report names; it counts them all.
CLAMPS_LISTED = 20


class Command(BaseCommand):
    help = (
        "Import assertions from a JSONL file (one JSON object per line, the fields of "
        "POST /api/v1/facts). A bad line is reported with its number and skipped; the exit "
        "status is 0 once every line was read, 1 if the import stopped before the end."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="The JSONL file, or - for standard input.")
        parser.add_argument(
            "--episode", help="Episode for lines that name none (withdraw_episode undoes it)."
        )
        parser.add_argument(
            "--as",
            dest="username",
            help=f"The account the facts are written as (default: {SHELL_ACCOUNT}).",
        )
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
        parser.add_argument(
            "--workers",
            type=int,
            default=default_workers(),
            help="Processes deciding the slots in parallel (default: CPUs + 1, at most 4).",
        )

    def handle(
        self, *args, file: str, episode, username, batch_size: int, workers: int, **options
    ) -> None:
        if file != "-" and not os.path.isfile(file):
            raise CommandError(f"No such file: {file}")
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        if workers < 1:
            raise CommandError("--workers must be at least 1")
        actor = acting_account(username)
        total = None if file == "-" else _count_lines(file)
        # No monitor thread: the workers are forked, and forking a process
        # with threads risks a child inheriting a lock another thread held.
        tqdm.tqdm.monitor_interval = 0
        with tqdm.tqdm(
            total=total,
            unit=" lines",
            desc="Importing",
            file=self.stderr._out,
            disable=None,  # off when stderr is not a terminal
        ) as bar:
            try:
                report = import_lines(
                    read_raw_lines(file),
                    actor=actor,
                    episode=episode,
                    batch_size=batch_size,
                    on_progress=bar.update,
                    workers=workers,
                )
            except ImportStopped as stop:
                bar.close()
                self._write_report(stop.report)
                raise CommandError(
                    f"The import stopped: {_printable(stop.reason)}\nThe lines counted above "
                    "as created, reinforced, superseded or flagged were written; no other line was."
                ) from stop
        self._write_report(report)

    def _write_report(self, report: ImportReport) -> None:
        counts = report.counts
        self.stdout.write(
            "Imported: " + ", ".join(f"{counts.get(status, 0)} {status}" for status in STATUSES)
        )
        for outcome in report.rejected:
            where = f" ({_printable(outcome.field)})" if outcome.field else ""
            self.stdout.write(
                f"  line {outcome.line}: rejected{where}: {_printable(outcome.reason or '')}"
            )
        clamped = report.clamped
        if clamped:
            # Counted whole, listed only in part: a file of agent notes at 0.9
            # would otherwise print a line for each.
            self.stdout.write(
                f"Confidence capped by the source type's ceiling on {len(clamped)} line(s):"
            )
            for number, clamp in clamped[:CLAMPS_LISTED]:
                self.stdout.write(
                    f"  line {number}: confidence {clamp.asked:g} capped at {clamp.ceiling:g},"
                    f" the ceiling of {clamp.ceiling_of}"
                )
            if len(clamped) > CLAMPS_LISTED:
                self.stdout.write(f"  … and {len(clamped) - CLAMPS_LISTED} more")


def _printable(text: str) -> str:
    """``text`` as any terminal or file can take it: a lone surrogate (a field's name can
    hold one) is written as its escape instead of failing the report."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _count_lines(path: str) -> int:
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())
