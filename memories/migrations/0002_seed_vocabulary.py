"""The seeded vocabulary and source types of SPEC §1.

Written with update_or_create on the name, so the migration is safe to run
over rows an admin created by hand; reversing it removes only rows nothing
refers to.
"""

from django.db import migrations

PREDICATES = [
    # name, cardinality, exclusion group, default class, policy, event-like
    ("core/prefers", "many", "stance", "preference", "parallel", False),
    ("core/decided-against", "many", "stance", "commitment", "parallel", False),
    ("core/avoids", "many", "stance", "preference", "parallel", False),
    ("core/has-version", "one", "", "observation", "supersede", False),
    ("core/deployed-via", "many", "", "observation", "parallel", False),
    ("core/uses", "many", "", "observation", "parallel", False),
    ("core/depends-on", "many", "", "observation", "parallel", False),
    ("core/owned-by", "one", "", "observation", "supersede", False),
    ("core/works-at", "one", "", "observation", "supersede", False),
]

SOURCE_TYPES = [
    # name, trust rank, confidence ceiling, decays
    ("decision-record", 3, 1.0, False),
    ("code", 3, 0.95, True),
    ("user-assertion", 3, 0.9, True),
    ("session-log", 2, 0.7, True),
    ("failure-report", 2, 0.7, True),
    ("agent-note", 1, 0.65, True),
    ("inferred", 1, 0.6, True),
]


def seed(apps, schema_editor):
    Predicate = apps.get_model("memories", "Predicate")
    SourceType = apps.get_model("memories", "SourceType")
    for name, cardinality, group, epistemic, policy, event_like in PREDICATES:
        Predicate.objects.update_or_create(
            name=name,
            defaults={
                "cardinality": cardinality,
                "exclusion_group": group,
                "default_epistemic": epistemic,
                "policy": policy,
                "event_like": event_like,
            },
        )
    for name, rank, ceiling, decays in SOURCE_TYPES:
        SourceType.objects.update_or_create(
            name=name,
            defaults={"trust_rank": rank, "confidence_ceiling": ceiling, "decays": decays},
        )


def unseed(apps, schema_editor):
    Predicate = apps.get_model("memories", "Predicate")
    SourceType = apps.get_model("memories", "SourceType")
    Predicate.objects.filter(
        name__in=[row[0] for row in PREDICATES], facts__isnull=True
    ).delete()
    SourceType.objects.filter(
        name__in=[row[0] for row in SOURCE_TYPES], facts__isnull=True
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("memories", "0001_initial")]

    operations = [migrations.RunPython(seed, unseed)]
