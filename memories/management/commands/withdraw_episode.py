"""``withdraw_episode NAME --scope S --reason R (--dry-run | --confirm TOKEN) [--as USERNAME]``.

SPEC §12. The dry run prints its token; the withdrawal confirms it, and is
refused (printing the new dry run and its token) if it would now change
anything else.
"""

from django.core.management.base import BaseCommand, CommandError

from memories.management.commands._accounts import SHELL_ACCOUNT, acting_account
from memories.store.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.write.episodes import PlanChanged, WithdrawalPlan, withdraw_episode


class Command(BaseCommand):
    help = (
        "Withdraw every live fact an episode wrote in a scope and reinstate what those "
        "writes superseded. With --dry-run, only list what would change and print its token; "
        "--confirm TOKEN then withdraws exactly that."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("episode")
        parser.add_argument("--scope", required=True)
        parser.add_argument("--reason", required=True)
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--confirm", metavar="TOKEN", help="The token its dry run printed.")
        parser.add_argument(
            "--as",
            dest="username",
            help=f"The steward acting (default: {SHELL_ACCOUNT}, a steward of every scope).",
        )

    def handle(self, *args, episode, scope, reason, dry_run, confirm, username, **options) -> None:
        actor = acting_account(username)
        try:
            plan = withdraw_episode(
                actor=actor,
                scope=scope,
                episode=episode,
                reason=reason,
                dry_run=dry_run,
                confirm=confirm,
            )
        except PlanChanged as changed:
            self.show(changed.plan)
            raise CommandError(f"Nothing was withdrawn: {changed}.") from None
        except NotFound as error:
            raise CommandError(f"Not found: {error.what}.") from None
        except (Forbidden, StateConflict) as error:
            raise CommandError(str(error)) from None
        except Rejected as error:
            raise CommandError(f"{error.field}: {error.message}") from None
        self.show(plan)

    def show(self, plan: WithdrawalPlan) -> None:
        def describe(fact) -> str:
            return f"{fact.pk}  {fact.subject.name} {fact.predicate.name} {fact.object_display}"

        verb = "Would" if plan.dry_run else "Did"
        self.stdout.write(f"{verb} withdraw {len(plan.withdrawn)} fact(s):")
        for fact in plan.withdrawn:
            self.stdout.write(f"  - {describe(fact)}")
        self.stdout.write(f"{verb} reinstate {len(plan.reinstated)} fact(s):")
        for fact in plan.reinstated:
            self.stdout.write(f"  + {describe(fact)}")
        if plan.kept_closed:
            self.stdout.write(f"Kept closed {len(plan.kept_closed)} superseded fact(s):")
            for kept in plan.kept_closed:
                self.stdout.write(f"  = {describe(kept.fact)}: {kept.why}")
        if plan.left_for_steward:
            self.stdout.write(f"Left {len(plan.left_for_steward)} steward's fact(s) live:")
            for kept in plan.left_for_steward:
                self.stdout.write(f"  ! {describe(kept.fact)}: {kept.why}")
        self.stdout.write(
            f"{verb} close {len(plan.closed_conflicts)} conflict(s) left with one side."
        )
        if plan.dry_run:
            self.stdout.write("Dry run: nothing was changed.")
            self.stdout.write(f"To withdraw exactly this: --confirm {plan.token}")
        else:
            self.stdout.write(self.style.SUCCESS(f"Recorded withdrawal {plan.withdrawal.pk}."))
