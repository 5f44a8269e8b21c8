"""``restore_export FILE.jsonl``: put an export back, ids and history intact."""

from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from memories.portability.exports import restore_lines
from memories.store.errors import Rejected, StateConflict
from memories.write.ingest import read_lines


class Command(BaseCommand):
    help = (
        "Restore an export_facts file into this database, all or nothing. Scopes in the file "
        "must not exist yet; accounts it names that do not exist are created without a password."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="The export, or - for standard input.")

    def handle(self, *args, file: str, **options) -> None:
        try:
            restored = restore_lines(read_lines(file))
        except FileNotFoundError:
            raise CommandError(f"No such file: {file}") from None
        except Rejected as refused:
            raise CommandError(f"{refused.message}; nothing was restored.") from None
        except StateConflict as error:
            raise CommandError(f"{error}; nothing was restored.") from None
        except IntegrityError as error:
            first = str(error).splitlines()[0]
            raise CommandError(
                f"The database refused the restore ({first}); nothing was restored."
            ) from None
        summary = ", ".join(f"{count} {kind}" for kind, count in restored.counts.items())
        self.stdout.write(f"Restored: {summary or 'nothing'}.")
        if restored.created_accounts:
            self.stdout.write(
                "Created accounts (no password; set one or issue a token): "
                + ", ".join(restored.created_accounts)
            )
        for note in restored.notes:
            self.stdout.write(f"Note: {note}")
