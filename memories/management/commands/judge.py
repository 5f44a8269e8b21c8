"""``judge``: the adjudicator's verdicts on the open conflicts (SPEC §7), one line each."""

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.maintenance.judge import run_judge


class Command(BaseCommand):
    help = (
        "Ask the configured adjudicator about every open conflict and record its verdicts as "
        "advice. With --resolve, resolve the conflicts a confident corroborate or supersede "
        "verdict allows (never commitment, outranked, revenant or reverted conflicts)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--resolve",
            action="store_true",
            help="act on the verdicts that may be acted on, instead of only recording them",
        )
        parser.add_argument(
            "--min-confidence",
            type=float,
            default=None,
            help="the confidence a verdict needs to be acted on "
            "(default: CLAIMGRAPH_JUDGE_MIN_CONFIDENCE)",
        )

    def handle(self, *args, **options) -> None:
        try:
            judgements = run_judge(
                resolve=options["resolve"], min_confidence=options["min_confidence"]
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        for judgement in judgements:
            self.stdout.write(judgement.line())
        self.stdout.write(f"{len(judgements)} open conflicts judged.")
