"""Demo data and accounts for `make run`: idempotent, so a second run adds nothing."""

import secrets
from datetime import timedelta

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from memories.actions import assert_fact, invalidate_fact
from memories.models import Scope
from memories.roles import STEWARDS_GROUP

DEMO_SCOPE = "demo"

ACCOUNTS = [
    # username, is a global steward
    ("steward", True),
    ("member", False),
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
                self.load_facts(
                    User.objects.get(username="member"), User.objects.get(username="steward")
                )
            self.stdout.write(
                self.style.SUCCESS(f"Loaded the demo data into scope {DEMO_SCOPE!r}.")
            )
        else:
            self.stdout.write(f"Demo scope {DEMO_SCOPE!r} already exists; left as it is.")

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

    def ensure_accounts(self) -> list[tuple[str, str]]:
        created = []
        stewards = Group.objects.get(name=STEWARDS_GROUP)
        for username, is_steward in ACCOUNTS:
            if User.objects.filter(username=username).exists():
                continue
            password = secrets.token_urlsafe(12)
            user = User.objects.create_user(username=username, password=password)
            if is_steward:
                user.groups.add(stewards)
            created.append((username, password))
        return created

    def load_facts(self, member: User, steward: User) -> None:
        now = timezone.now()

        def say(actor, subject, predicate, obj, source, **extra):
            return assert_fact(
                actor=actor,
                data={
                    "scope": DEMO_SCOPE,
                    "subject": subject,
                    "predicate": predicate,
                    "object": obj,
                    "source_type": source,
                    **extra,
                },
            )

        # A commitment threatened by a session: flagged / commitment.
        say(
            steward,
            "api-layer",
            "core/decided-against",
            "GraphQL",
            "decision-record",
            epistemic="commitment",
            evidence=[{"ref": "ADR-12", "quote": "We will not adopt GraphQL."}],
        )
        say(
            member,
            "api-layer",
            "core/prefers",
            "GraphQL",
            "session-log",
            statement="the agent liked GraphQL's typed schema",
        )
        # Reinforcement.
        say(
            member,
            "team",
            "core/prefers",
            "trunk-based development",
            "user-assertion",
            confidence=0.8,
        )
        say(member, "team", "core/prefers", "Trunk-based  development", "session-log")
        # Outranked: an agent note against code.
        say(
            steward,
            "AuthService",
            "core/has-version",
            "2.0.0",
            "code",
            confidence=0.95,
            evidence=[{"ref": "auth/pyproject.toml", "quote": 'version = "2.0.0"'}],
        )
        say(member, "AuthService", "core/has-version", "3.0.0", "agent-note")
        # Backdated: a version said to hold from before the standing one.
        say(
            steward,
            "billing",
            "core/has-version",
            "5.2",
            "code",
            t_valid=(now - timedelta(days=10)).isoformat(),
        )
        say(
            member,
            "billing",
            "core/has-version",
            "5.1",
            "session-log",
            t_valid=(now - timedelta(days=40)).isoformat(),
        )
        # Revenant: Heroku retired, Fly live, an agent note brings Heroku back.
        heroku = say(steward, "shoply", "core/deployed-via", "Heroku", "user-assertion")
        invalidate_fact(actor=steward, fact_id=heroku.fact.pk, reason="migrated to Fly")
        say(steward, "shoply", "core/deployed-via", "Fly", "user-assertion")
        say(member, "shoply", "core/deployed-via", "Heroku", "agent-note")
        # Clean supersession.
        say(steward, "search", "core/has-version", "1.4", "code")
        say(steward, "search", "core/has-version", "1.5", "code")
        # Plain facts for the browser.
        for subject, predicate, obj, source in [
            ("shoply", "core/uses", "PostgreSQL", "code"),
            ("shoply", "core/uses", "Redis", "session-log"),
            ("shoply", "core/owned-by", "payments-team", "user-assertion"),
            ("AuthService", "core/depends-on", "PostgreSQL", "code"),
            ("ada", "core/works-at", "Northstar Labs", "user-assertion"),
        ]:
            say(member, subject, predicate, obj, source)
