"""Demo data and accounts for `make run`: idempotent, so a second run adds nothing.

The demo fills every queue of the console, through the same actions the
console and the API use (so the audit feed is filled too): open conflicts of
each kind, candidates, admitted and rejected facts, suspended facts with open
challenges, resolved conflicts and refuted challenges for history, receipts
(outcomes), an entity merge and a private fact. Times are spread over the
last five weeks so ages and decay show.

The dashboard's charts draw the daily queue snapshots the worker takes, and a
new site has none before today. So the demo also writes 30 days of made-up
past snapshots for its scopes (:func:`record_demo_history`): invented
numbers, clearly demo data, that end near what each queue holds now, with
two days missing (as if the worker had been down) to show what a gap looks
like. Today's point is the worker's real one, taken soon after it starts.

The account past its flood cap has a scope of its own, ``demo-agents``,
whose facts are all admitted already: the cap is a share of a scope's
admitted facts (SPEC §6), so in the main scope every candidate a steward
admits while trying the console would raise it, and after a few the
challenger would no longer be at its cap. With no candidates in its scope,
nothing the demo invites a steward to do changes that cap.
"""

import random
import secrets
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from admissions.actions import file_challenge, record_verdict, refute_challenge
from admissions.models import QueueSnapshot
from admissions.queues import waiting
from admissions.snapshots import snapshot_day
from memories.store.lookups import find_entity
from memories.store.models import Scope
from memories.store.roles import STEWARDS_GROUP
from memories.write.actions import assert_fact, invalidate_fact, record_outcome, resolve_conflict
from memories.write.merges import merge_entities
from notifications.webhook.actions import DEMO_RECEIVER_PATH, create_endpoint
from notifications.webhook.models import Endpoint

DEMO_SCOPE = "demo"
# How many past days of made-up queue snapshots the demo writes, and the days
# (counted back from today) it leaves out, as if the worker had been down.
HISTORY_DAYS = 30
HISTORY_GAPS = (12, 11)
DAY_SECONDS = 86_400
# Where the challenger stands at its flood cap (see the module's docstring).
FLOOD_SCOPE = "demo-agents"

ACCOUNTS = [
    # username, is a global steward
    ("steward", True),
    ("member", False),
    # An agent account that challenges too much: it shows the flood cap.
    ("challenger", False),
]


class Command(BaseCommand):
    help = "Create the demo scope, its facts and the demo accounts (once)."

    def handle(self, *args, **options) -> None:
        created_passwords = self.ensure_accounts()
        scope, new_scope = Scope.objects.get_or_create(
            name=DEMO_SCOPE, defaults={"description": "Demo data loaded by make run."}
        )
        scope.members.add(*User.objects.filter(username__in=[name for name, _ in ACCOUNTS]))
        if new_scope:
            with transaction.atomic():
                Demo(
                    scope,
                    steward=User.objects.get(username="steward"),
                    member=User.objects.get(username="member"),
                    challenger=User.objects.get(username="challenger"),
                ).load()
                record_demo_history(scope, now=timezone.now())
            self.stdout.write(
                self.style.SUCCESS(f"Loaded the demo data into scope {DEMO_SCOPE!r}.")
            )
        else:
            self.stdout.write(f"Demo scope {DEMO_SCOPE!r} already exists; left as it is.")

        flood_scope, new_flood_scope = Scope.objects.get_or_create(
            name=FLOOD_SCOPE,
            defaults={"description": "Demo: an agent account that challenges more than its cap."},
        )
        flood_scope.members.add(*User.objects.filter(username__in=[name for name, _ in ACCOUNTS]))
        if new_flood_scope:
            with transaction.atomic():
                Flood(
                    flood_scope,
                    steward=User.objects.get(username="steward"),
                    challenger=User.objects.get(username="challenger"),
                ).load()
                record_demo_history(flood_scope, now=timezone.now())
            self.stdout.write(
                self.style.SUCCESS(f"Loaded the flood-cap demo into scope {FLOOD_SCOPE!r}.")
            )

        self.ensure_webhook(scope)

        if created_passwords:
            self.stdout.write("")
            self.stdout.write("Demo accounts (passwords are shown this once; keep them):")
            for username, password in created_passwords:
                self.stdout.write(f"  {username:<10} {password}")
            self.stdout.write("")
        else:
            self.stdout.write(
                "Demo accounts already exist (their passwords were printed when they were "
                "created; `python manage.py changepassword NAME` sets a new one)."
            )

    def ensure_webhook(self, scope: Scope) -> None:
        """One webhook endpoint of the steward's, delivering to the console's demo receiver.

        Only where the receiver answers (CLAIMGRAPH_WEBHOOK_RECEIVER, on in
        local work, whose allow-list lets deliveries reach this machine).
        """
        if not settings.CLAIMGRAPH_WEBHOOK_RECEIVER:
            return
        url = settings.CLAIMGRAPH_SITE_URL + DEMO_RECEIVER_PATH
        endpoint = Endpoint.objects.filter(scope=scope, url=url).first()
        if endpoint is None:
            endpoint, _secret = create_endpoint(
                owner=User.objects.get(username="steward"), scope=scope, url=url
            )
            self.stdout.write(
                f"Added a webhook endpoint delivering the {scope.name!r} scope's events to {url};"
                f" watch its deliveries at /account/webhooks/{endpoint.pk}/ (as steward)."
            )

    def ensure_accounts(self) -> list[tuple[str, str]]:
        created = []
        stewards = Group.objects.get(name=STEWARDS_GROUP)
        for username, is_steward in ACCOUNTS:
            if User.objects.filter(username=username).exists():
                continue
            password = secrets.token_urlsafe(12)
            # example.org is reserved for examples: with DEBUG, mail is printed, never sent.
            user = User.objects.create_user(
                username=username, password=password, email=f"{username}@example.org"
            )
            if is_steward:
                user.groups.add(stewards)
            created.append((username, password))
        return created


class Demo:
    """The demo story, written step by step on a clock that starts five weeks ago."""

    def __init__(self, scope: Scope, *, steward: User, member: User, challenger: User) -> None:
        self.scope = scope
        self.steward = steward
        self.member = member
        self.challenger = challenger
        self.clock = timezone.now() - timedelta(days=35)

    def tick(self, hours: float = 5) -> datetime:
        self.clock += timedelta(hours=hours)
        return self.clock

    def say(self, actor, subject, predicate, obj, source, **extra):
        data = {
            "scope": self.scope.name,
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "source_type": source,
            **extra,
        }
        return assert_fact(actor=actor, data=data, now=self.tick())

    def admit(self, result, ground: str) -> None:
        record_verdict(
            actor=self.steward,
            fact_id=result.fact.pk,
            verdict="admitted",
            ground=ground,
            now=self.tick(1),
        )

    def load(self) -> None:
        steward, member, challenger = self.steward, self.member, self.challenger

        # A commitment threatened by a session: flagged / commitment.
        decided = self.say(
            steward,
            "api-layer",
            "core/decided-against",
            "GraphQL",
            "decision-record",
            epistemic="commitment",
            evidence=[{"ref": "ADR-12", "quote": "We will not adopt GraphQL."}],
        )
        self.admit(decided, "ADR-12 was accepted by the architecture group")
        self.say(
            member,
            "api-layer",
            "core/prefers",
            "GraphQL",
            "session-log",
            statement="the agent liked GraphQL's typed schema",
        )
        # Reinforcement: two spellings, one fact.
        trunk = self.say(
            member,
            "team",
            "core/prefers",
            "trunk-based development",
            "user-assertion",
            confidence=0.8,
        )
        self.say(member, "team", "core/prefers", "Trunk-based  development", "session-log")
        self.admit(trunk, "the team said so at the retro")
        # Outranked: an agent note against code.
        auth = self.say(
            steward,
            "AuthService",
            "core/has-version",
            "2.0.0",
            "code",
            confidence=0.95,
            evidence=[{"ref": "auth/pyproject.toml", "quote": 'version = "2.0.0"'}],
        )
        self.admit(auth, "read from the lockfile")
        self.say(member, "AuthService", "core/has-version", "3.0.0", "agent-note")
        # Backdated: a version said to hold from before the standing one.
        billing = self.say(
            steward,
            "billing",
            "core/has-version",
            "5.2",
            "code",
            t_valid=(self.clock - timedelta(days=10)).isoformat(),
        )
        self.admit(billing, "tagged release")
        self.say(
            member,
            "billing",
            "core/has-version",
            "5.1",
            "session-log",
            t_valid=(self.clock - timedelta(days=40)).isoformat(),
        )
        # Revenant: Heroku retired, Fly live, an agent note brings Heroku back.
        heroku = self.say(steward, "shoply", "core/deployed-via", "Heroku", "user-assertion")
        invalidate_fact(
            actor=steward, fact_id=heroku.fact.pk, reason="migrated to Fly", now=self.tick()
        )
        fly = self.say(steward, "shoply", "core/deployed-via", "Fly", "user-assertion")
        self.admit(fly, "fly.toml in the repository")
        self.say(
            member,
            "shoply",
            "core/deployed-via",
            "Heroku",
            "agent-note",
            episode="agent-session-12",
        )
        # Clean supersession.
        self.say(steward, "search", "core/has-version", "1.4", "code")
        search = self.say(steward, "search", "core/has-version", "1.5", "code")
        self.admit(search, "release notes")

        # Facts with a verdict, and candidates still waiting for one. The
        # member claims only the sources a member may (issue 29 item 8).
        admitted = []
        for subject, predicate, obj, source in [
            ("shoply", "core/uses", "PostgreSQL", "user-assertion"),
            ("shoply", "core/owned-by", "payments-team", "user-assertion"),
            ("AuthService", "core/depends-on", "PostgreSQL", "user-assertion"),
            ("ada", "core/works-at", "Northstar Labs", "user-assertion"),
            ("checkout", "core/uses", "Stripe", "user-assertion"),
        ]:
            result = self.say(member, subject, predicate, obj, source)
            self.admit(result, "checked against the source")
            admitted.append(result.fact)
        rejected = self.say(member, "inventory", "core/uses", "MongoDB", "agent-note")
        record_verdict(
            actor=steward,
            fact_id=rejected.fact.pk,
            verdict="rejected",
            ground="no trace of MongoDB in any repository",
            now=self.tick(1),
        )
        for subject, predicate, obj, source in [
            ("shoply", "core/uses", "Redis", "session-log"),
            ("checkout", "core/depends-on", "payments-api", "agent-note"),
            ("search", "core/uses", "Elasticsearch", "session-log"),
            ("docs-site", "core/deployed-via", "Netlify", "agent-note"),
            ("billing", "core/owned-by", "finance-eng", "session-log"),
        ]:
            self.say(member, subject, predicate, obj, source)

        # A suspended fact: the member's evidenced challenge suspends it (the
        # challenger's flood is in a scope of its own: see ``Flood``).
        shoply_pg, owner, auth_pg, ada, stripe = admitted
        file_challenge(
            actor=member,
            fact_id=owner.pk,
            ground="the payments team handed shoply over in May",
            evidence=[{"ref": "OPS-311", "quote": "ownership moves to storefront-team"}],
            now=self.tick(),
        )
        file_challenge(
            actor=member,
            fact_id=stripe.pk,
            ground="I think checkout moved to Adyen",
            evidence=None,
            now=self.tick(),
        )
        file_challenge(
            actor=challenger,
            fact_id=shoply_pg.pk,
            ground="contradicted by what the agent observed",
            evidence=[{"ref": "agent-run-41", "quote": ""}],
            now=self.tick(1),
        )

        # History: a refuted challenge and a resolved conflict.
        refuted = file_challenge(
            actor=member,
            fact_id=ada.pk,
            ground="Ada's profile says she left",
            evidence=[{"ref": "https://example.org/ada", "quote": "formerly at Northstar"}],
            now=self.tick(),
        )
        refute_challenge(
            actor=steward,
            challenge_id=refuted.pk,
            ground="that profile is of another Ada; HR confirms",
            now=self.tick(),
        )
        self.say(steward, "payments", "core/has-version", "1.0", "code")
        clash = self.say(member, "payments", "core/has-version", "0.9", "agent-note")
        resolve_conflict(
            actor=steward,
            conflict_id=clash.conflict.pk,
            action="keep",
            keep=[clash.candidates[0].pk],
            reason="the lockfile pins 1.0",
            now=self.tick(),
        )

        # Receipts: accepted work that used admitted facts.
        record_outcome(actor=member, fact_ids=[auth.fact.pk, auth_pg.pk], now=self.tick())
        record_outcome(actor=steward, fact_ids=[fly.fact.pk], now=self.tick())

        # Two spellings of one database, merged by a steward.
        self.say(steward, "PostgreSQL", "core/has-version", "17", "code")
        self.say(
            member,
            "Postgres",
            "core/owned-by",
            "data-team",
            "session-log",
            episode="agent-session-12",
        )
        merge_entities(
            actor=steward,
            entity_id=find_entity(self.scope, "Postgres").pk,
            into_id=find_entity(self.scope, "PostgreSQL").pk,
            reason="the same database; one name from now on",
            now=self.tick(),
        )

        # A private note, seen only by its author and stewards.
        self.say(
            member, "member", "core/prefers", "small pull requests", "user-assertion", bucket="user"
        )


class Flood(Demo):
    """An agent account at its flood cap, in a scope where every fact is admitted.

    Four admitted facts make the cap ``ceil(25% of 4) = 1``: the challenger's
    first evidenced challenge suspends its target and the next two are
    queued with no effect. The scope holds no candidate, so admitting what
    the other queues offer never raises this cap.
    """

    def __init__(self, scope: Scope, *, steward: User, challenger: User) -> None:
        super().__init__(scope, steward=steward, member=challenger, challenger=challenger)

    def load(self) -> None:
        admitted = []
        for subject, predicate, obj in [
            ("gateway", "core/uses", "Envoy"),
            ("gateway", "core/owned-by", "platform-team"),
            ("scheduler", "core/uses", "Temporal"),
            ("scheduler", "core/has-version", "1.22"),
        ]:
            result = self.say(self.steward, subject, predicate, obj, "code")
            self.admit(result, "read from the repository")
            admitted.append(result.fact)
        for target, ref in zip(
            admitted, ["agent-run-51", "agent-run-52", "agent-run-53"], strict=False
        ):
            file_challenge(
                actor=self.challenger,
                fact_id=target.pk,
                ground="the agent's run saw something else",
                evidence=[{"ref": ref, "quote": ""}],
                now=self.tick(1),
            )


def record_demo_history(scope: Scope, *, now: datetime) -> int:
    """Made-up queue snapshots of ``scope`` for the ``HISTORY_DAYS`` days before today.

    Demo data only, never a measurement: each queue's size wanders (a seeded
    random walk, so every run draws the same picture) towards what the queue
    holds now, and its oldest age is the current oldest item's, younger by a
    day per day back, or a fresher item's before that one was recorded. How
    many rows it wrote.
    """
    today = snapshot_day(now)
    rng = random.Random(f"claimgraph demo history {scope.name}")
    rows = []
    for queue, figures in waiting(Scope.objects.filter(pk=scope.pk), every=True).items():
        drift = rng.choice([-3, -2, 2, 3])
        oldest_age = (now - figures.oldest).total_seconds() if figures.oldest else 0.0
        running = rng.uniform(0.2, 2) * DAY_SECONDS
        for back in range(HISTORY_DAYS, 0, -1):
            # Before today's oldest item was recorded, an older one waited a
            # day longer each day until a steward took it (a sawtooth).
            running = (
                running + DAY_SECONDS if rng.random() > 0.2 else rng.uniform(0.2, 2) * DAY_SECONDS
            )
            if back in HISTORY_GAPS:
                continue
            day = today - timedelta(days=back)
            size = max(0, round(figures.count + drift * back / HISTORY_DAYS + rng.randint(-1, 1)))
            age = oldest_age - back * DAY_SECONDS
            if age <= 0:
                age = running
            rows.append(
                QueueSnapshot(
                    day=day,
                    scope=scope,
                    queue=queue,
                    size=size,
                    oldest_age_seconds=int(age) if size else None,
                    taken_at=_start_of(day),
                )
            )
    return len(QueueSnapshot.objects.bulk_create(rows, ignore_conflicts=True))


def _start_of(day: date) -> datetime:
    # Where the worker's daily period starts (fixed on the UTC clock).
    return datetime.combine(day, time(0, 0), tzinfo=UTC)
