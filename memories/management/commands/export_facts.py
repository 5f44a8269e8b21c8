"""``export_facts [--scope S ...] > out.jsonl``: the store as JSONL.

See ``memories.portability.exports``.
"""

from django.core.management.base import BaseCommand, CommandError

from memories.portability.exports import export_lines
from memories.store.errors import Rejected


class Command(BaseCommand):
    help = (
        "Write scopes, vocabulary, entities, facts, conflicts, admission records and their "
        "history as JSON lines to standard output (or --output). restore_export reads it back."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--scope", action="append", dest="scopes", help="Only this scope (repeatable)."
        )
        parser.add_argument("--output", help="Write to this file instead of standard output.")

    def handle(self, *args, scopes, output, **options) -> None:
        try:
            lines = export_lines(scopes)
            if output:
                with open(output, "w", encoding="utf-8") as handle:
                    for line in lines:
                        handle.write(line + "\n")
            else:
                for line in lines:
                    self.stdout.write(line)
        except Rejected as refused:
            raise CommandError(f"{refused.field}: {refused.message}") from None
