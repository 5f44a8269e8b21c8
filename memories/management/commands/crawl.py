"""``crawl``: one pass of the maintenance crawler (SPEC §8), with its report."""

import sys

from django.core.management.base import BaseCommand
from tqdm import tqdm

from memories.maintenance.crawler import count_slots, run_crawl


class Command(BaseCommand):
    help = (
        "Walk the active facts once: mark competing values as conflicts, apply explicit "
        "updates, mark decayed facts. Prints the counts per action."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--full",
            action="store_true",
            help="walk every active slot, not only those changed since the last finished pass",
        )

    def handle(self, *args, **options) -> None:
        # A progress bar only for a person watching: not in a log or a pipe.
        # Its total only for a full pass: an incremental one walks what changed.
        on_terminal = self.stdout.isatty()
        with tqdm(
            total=count_slots() if on_terminal and options["full"] else None,
            unit="slot",
            disable=not on_terminal,
            file=sys.stderr,
        ) as bar:
            run = run_crawl(progress=bar.update, full=options["full"])
        self.stdout.write(f"Crawler run {run.pk} finished.")
        for action, count in run.counts.items():
            self.stdout.write(f"  {action}: {count}")
        for key, value in run.report.items():
            self.stdout.write(f"  ({key}: {value})")
