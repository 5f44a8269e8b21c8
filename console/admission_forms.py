"""Forms of the admissions pages: they turn a browser's strings into action arguments.

Each failure names its field in words a steward can act on; the actions check
again whatever they rely on.
"""

from django import forms

from console.forms import (
    EPISTEMIC_CHOICES,
    PagedForm,
    StorableTextForm,
    VocabularyChoiceField,
    predicate_field,
    scope_field,
    source_field,
)
from memories.core.text import MAX_REASON_LENGTH
from memories.store.models import Bucket, Epistemic, SourceType

GROUND_ERROR = "Say why: a ground is required."


def ground_field(label: str = "Ground") -> forms.CharField:
    return forms.CharField(
        label=label,
        max_length=MAX_REASON_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": GROUND_ERROR},
    )


class VerdictForm(StorableTextForm):
    """Admit or Reject: the button pressed names the verdict."""

    verdict = forms.ChoiceField(choices=[("admitted", "Admit"), ("rejected", "Reject")])
    ground = ground_field()


EVIDENCE_HELP = "One reference per line (a URL, a file, a ticket); add a quote after ' | '."


def evidence_field(help_text: str) -> forms.CharField:
    return forms.CharField(
        label="Evidence",
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=f"{EVIDENCE_HELP} {help_text}",
    )


def evidence_items(text: str) -> list[dict[str, str]] | None:
    """Evidence lines → ``[{ref, quote}]``; no line at all → None (absent, not ``[]``)."""
    items = []
    for line in text.splitlines():
        if not line.strip():
            continue
        ref, _, quote = line.partition("|")
        if not ref.strip():
            raise forms.ValidationError("Each line needs a reference before any '|'.")
        items.append({"ref": ref.strip(), "quote": quote.strip()})
    return items or None


def evidence_text(items: list[dict[str, str]] | None) -> str:
    """The lines ``evidence_items`` reads back as ``items``: a form's initial value."""
    return "\n".join(
        f"{item['ref']} | {item['quote']}" if item.get("quote") else item["ref"]
        for item in items or []
    )


class ChallengeForm(StorableTextForm):
    ground = ground_field("Why is it wrong?")
    evidence = evidence_field("Without evidence the challenge is recorded but suspends nothing.")

    def clean_evidence(self) -> list[dict[str, str]] | None:
        return evidence_items(self.cleaned_data["evidence"])


class RefuteForm(StorableTextForm):
    ground = ground_field("Why does the fact stand?")


class CorrectForm(StorableTextForm):
    """The replacement's fields; blank or unchanged ones are taken from the fact."""

    object = forms.CharField(max_length=2_000, label="Object")
    source_type = VocabularyChoiceField(
        queryset=SourceType.objects.all(), to_field_name="name", label="Source"
    )
    confidence = forms.FloatField(min_value=0, max_value=1, label="Confidence")
    epistemic = forms.ChoiceField(choices=Epistemic.choices, label="Class")
    evidence = evidence_field("Left empty, the fact's own evidence is kept.")
    ground = ground_field("Why the correction?")

    FIELDS = ("object", "source_type", "confidence", "epistemic", "evidence")

    def clean_evidence(self) -> list[dict[str, str]] | None:
        return evidence_items(self.cleaned_data["evidence"])

    def changes(self, fact) -> dict:
        """Only what differs from ``fact``: the rest is carried over by ``correct_fact``."""
        current = {
            "object": fact.object_display,
            "source_type": fact.source_type.name,
            "confidence": fact.confidence,
            "epistemic": fact.epistemic,
            "evidence": fact.evidence,
        }
        given = dict(self.cleaned_data)
        given["source_type"] = given["source_type"].name
        return {
            name: given[name]
            for name in self.FIELDS
            if given[name] not in (None, "") and given[name] != current[name]
        }


class BatchReviewForm(StorableTextForm):
    """Several candidates, one verdict, one ground (SPEC §12)."""

    facts = forms.TypedMultipleChoiceField(
        coerce=str,
        error_messages={"required": "Select at least one candidate."},
        label="Candidates",
    )
    verdict = forms.ChoiceField(
        choices=[("admitted", "Admit"), ("rejected", "Reject")], label="Verdict"
    )
    ground = ground_field("Ground for all selected")

    def __init__(self, *args, choices: list[tuple[str, str]] | None = None, **kwargs) -> None:
        # Its own ids: the queue's filter form sits on the same page.
        kwargs.setdefault("auto_id", "id_batch_%s")
        super().__init__(*args, **kwargs)
        # Any submitted id is a choice: whether it may be reviewed is the
        # action's to say, item by item, in the result.
        submitted = self.data.getlist("facts") if hasattr(self.data, "getlist") else []
        self.fields["facts"].choices = choices or [(value, value) for value in submitted]


class CandidateFilterForm(PagedForm):
    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"] = scope_field(user)
        self.fields["source"] = source_field()
        self.fields["predicate"] = predicate_field()
        self.order_fields(["scope", "source", "predicate", "per_page"])


class FactFilterForm(PagedForm):
    STATUSES = [
        ("", "Any status"),
        ("candidate", "Candidate"),
        ("admitted", "Admitted"),
        ("suspended", "Suspended"),
        ("rejected", "Rejected"),
        ("disputed", "Disputed"),
        ("live", "Still valid"),
        ("invalidated", "Invalidated"),
        ("superseded", "Superseded"),
        ("withdrawn", "Withdrawn"),
    ]

    q = forms.CharField(required=False, max_length=500, label="Search")
    subject = forms.CharField(required=False, max_length=500, label="Subject")
    status = forms.ChoiceField(choices=STATUSES, required=False, label="Status")
    epistemic = forms.ChoiceField(choices=EPISTEMIC_CHOICES, required=False, label="Class")
    bucket = forms.ChoiceField(
        choices=[("", "Any bucket"), *Bucket.choices], required=False, label="Bucket"
    )

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["q"].widget = forms.TextInput(
            attrs={"type": "search", "placeholder": "Subject name"}
        )
        self.fields["scope"] = scope_field(user)
        self.fields["predicate"] = predicate_field()
        self.fields["source"] = source_field()
        self.order_fields(
            [
                "q",
                "scope",
                "subject",
                "predicate",
                "status",
                "source",
                "epistemic",
                "bucket",
                "per_page",
            ]
        )


class ChallengeFilterForm(PagedForm):
    STATES = [("open", "Open"), ("resolved", "Resolved"), ("all", "All")]

    state = forms.ChoiceField(choices=STATES, required=False, label="Status")
    author = forms.CharField(required=False, max_length=150, label="Account")

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"] = scope_field(user)
        self.order_fields(["scope", "state", "author", "per_page"])
