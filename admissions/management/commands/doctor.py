"""``doctor``: check every invariant the database does not enforce by itself.

Prints each violation with its ids and what to do, records the run (the
Health page shows the latest), and exits 1 when any exists, 0 otherwise.
The checks are defined in docs/background.md ("The doctor").
"""

from itertools import groupby

from django.core.management.base import BaseCommand, CommandError

from admissions.doctor import CHECKS, run_doctor
from memories.maintenance.doctor import LIST_AT_MOST


class Command(BaseCommand):
    help = (
        "Check the invariants the database does not enforce (competing values left unlinked, "
        "moot conflicts, derived admission state, unused entities, stuck tasks, silent "
        "workers); print each violation with what to do; exit 1 if any."
    )

    def handle(self, *args, **options) -> None:
        examination = run_doctor()
        found = {
            check: list(group)
            for check, group in groupby(examination.violations, key=lambda v: v.check)
        }
        for check in CHECKS:
            violations = found.get(check.name, [])
            mark = "ok" if not violations else f"{len(violations)} found"
            if check.name in examination.capped:
                mark = f"more than {LIST_AT_MOST} found, the first {LIST_AT_MOST} listed"
            self.stdout.write(f"{check.name}: {check.invariant} — {mark}")
            for violation in violations:
                self.stdout.write(f"  - {violation.what}")
                self.stdout.write(f"    ids: {', '.join(violation.ids)}")
                self.stdout.write(f"    to do: {violation.todo}")
        if examination.violations:
            raise CommandError(f"{len(examination.violations)} violation(s) found", returncode=1)
        self.stdout.write("No violations.")
