"""Forms of the console's memory-store and account pages: input checking only (a 400 each).

The actions check again whatever they rely on; a form's job is to turn a
browser's strings into the values an action takes, and to name the field at
fault in words a steward can act on.
"""

from django import forms
from django.core.validators import ProhibitNullCharactersValidator
from django.forms.renderers import Jinja2

from accounts.actions import MAX_NAME_LENGTH
from console.audit_words import ACTION_CHOICES
from memories.core.decisions import MAX_EPISODE_LENGTH, unstorable
from memories.core.text import MAX_REASON_LENGTH
from memories.store.models import ConflictKind, Epistemic, Predicate, Scope, SourceType
from memories.store.vocabulary import load_vocabulary
from notifications.email.contents import DIGEST_KINDS, stewarded_scope_ids, subscribed
from notifications.email.models import DigestPreference, Frequency
from notifications.email.sending import frequency_of
from notifications.models import EventKind
from notifications.webhook.addresses import MAX_URL_LENGTH

PAGE_SIZES = (5, 10, 25, 50, 100)
DEFAULT_PAGE_SIZE = 25
_PAGE_SIZE_NAMES = frozenset(str(size) for size in PAGE_SIZES)


def storable_text(value: object) -> None:
    """A field validator: the write path's rule of text PostgreSQL cannot store."""
    # Some CharFields clean to another type: a UUIDField to a UUID, parsed
    # from text that could hold neither a NUL nor a surrogate.
    if not isinstance(value, str):
        return
    problem = unstorable(value)
    if problem is not None:
        raise forms.ValidationError(f"This text {problem}.", code="unstorable")


# Django's own widget templates, in the Jinja2 versions Django ships beside the
# template-language ones: the same markup (but for blank lines, and a quote
# escaped as &#34;), rendered faster, which a scope filter listing every scope
# needs (docs/bench-log/2026-12-02-console-pages.md). One instance, so each
# template is compiled once per process. The admin keeps the site's default
# renderer: its widgets have template-language templates only.
CONSOLE_RENDERER = Jinja2()


class StorableTextForm(forms.Form):
    """A form whose every text field refuses what the database cannot store.

    Django's CharField refuses a NUL but not a lone surrogate, which no
    browser sends but a Python caller can; either would fail at the insert.
    Django's NUL check gives way to the one rule, so a NUL reads one error.

    Every console form derives from it, and renders with ``CONSOLE_RENDERER``.
    """

    default_renderer = CONSOLE_RENDERER

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            if isinstance(field, forms.CharField):
                field.validators = [
                    validator
                    for validator in field.validators
                    if not isinstance(validator, ProhibitNullCharactersValidator)
                ]
                field.validators.append(storable_text)


class PageNumberField(forms.Field):
    """A page number as Django's ``Paginator.get_page`` reads one: never an error.

    Anything but a whole number (or nothing) cleans to None, the first page. A
    whole number comes back as it is, however large or below 1: the paginator
    (``console.views.common.paginate``) shows the last page for those, as
    ``get_page`` does. A page number is part of a link, not something a
    person typed; refusing it would make the whole filter form invalid and
    silently drop the filters beside it.
    """

    widget = forms.HiddenInput

    # Longer than this is past the end of any list (and int() refuses
    # numbers of more than 4,300 digits): it reads as this many digits.
    MAX_DIGITS = 30

    def __init__(self, **kwargs) -> None:
        super().__init__(required=False, **kwargs)

    def to_python(self, value) -> int | None:
        text = str(value if value is not None else "").strip()
        sign, digits = (text[0], text[1:]) if text[:1] in ("+", "-") else ("", text)
        if not (digits.isascii() and digits.isdigit()):
            return None
        if len(digits) > self.MAX_DIGITS:
            digits = "9" * self.MAX_DIGITS
        return int(sign + digits)


class PagedForm(StorableTextForm):
    """Page number and page size, shared by every list page.

    Neither ever makes the form invalid: an unknown page size is the default
    one, a page number that is not one is the first page (see
    ``PageNumberField``), and the filters beside them still apply.
    """

    page = PageNumberField()
    per_page = forms.TypedChoiceField(
        required=False,
        initial=DEFAULT_PAGE_SIZE,
        coerce=int,
        empty_value=DEFAULT_PAGE_SIZE,
        choices=[(size, str(size)) for size in PAGE_SIZES],
        label="Per page",
    )

    def __init__(self, data=None, *args, **kwargs) -> None:
        # A filter form submitted without a page size, or with one it does not
        # offer, keeps the default one (selected in the form, not only
        # applied), like an unbound form.
        if data is not None and data.get("per_page") not in _PAGE_SIZE_NAMES:
            data = data.copy()
            data["per_page"] = str(DEFAULT_PAGE_SIZE)
        super().__init__(data, *args, **kwargs)

    def _paging(self, name: str):
        """The cleaned ``page`` or ``per_page``, whether or not the other fields are valid."""
        if not self.is_bound or self.errors.get(name):
            return None
        return self.cleaned_data.get(name)

    def page_size(self) -> int:
        return self._paging("per_page") or DEFAULT_PAGE_SIZE

    def page_number(self) -> int:
        """The page asked for: 1 when none (or no number) was; possibly past the end or below 1."""
        number = self._paging("page")
        return 1 if number is None else number

    def visible_scopes(self) -> dict[int, Scope]:
        """For a form with a ``scope_field``: the viewer's scopes by id, read once.

        The scope filter lists its choices from this very queryset object, so
        once a page has read it here the rendered select costs no second query.
        """
        return {scope.pk: scope for scope in self.fields["scope"].queryset}


class _ListedChoices(forms.models.ModelChoiceIterator):
    """Choices from one plain query.

    Django iterates a choice queryset through ``.iterator()``, which on
    PostgreSQL is a server-side cursor: DECLARE, FETCH and CLOSE, three round
    trips for a list of a dozen rows, on every filter form of every page.
    """

    def __iter__(self):
        if self.field.empty_label is not None:
            yield ("", self.field.empty_label)
        for row in self.queryset:
            yield self.choice(row)


class ListedChoiceField(forms.ModelChoiceField):
    iterator = _ListedChoices


class _VocabularyChoices(_ListedChoices):
    """Predicates or source types from the process's cached vocabulary, in the models' order.

    The vocabulary is read on every write and kept by each process for a few
    seconds (``memories.store.vocabulary``); a filter's list can be that old too.
    What a form accepts is still checked against the table itself.
    """

    def __iter__(self):
        if self.field.empty_label is not None:
            yield ("", self.field.empty_label)
        vocabulary = load_vocabulary()
        rows = vocabulary.predicates if self.queryset.model is Predicate else vocabulary.sources
        for row in rows.values():
            yield self.choice(row)


class VocabularyChoiceField(ListedChoiceField):
    iterator = _VocabularyChoices


def scope_field(user, *, label: str = "Scope") -> forms.ModelChoiceField:
    return ListedChoiceField(
        queryset=Scope.objects.visible_to(user),
        required=False,
        to_field_name="name",
        empty_label="All scopes",
        label=label,
    )


def predicate_field() -> forms.ModelChoiceField:
    return VocabularyChoiceField(
        queryset=Predicate.objects.all(),
        required=False,
        to_field_name="name",
        empty_label="Any predicate",
    )


def source_field() -> forms.ModelChoiceField:
    return VocabularyChoiceField(
        queryset=SourceType.objects.all(),
        required=False,
        to_field_name="name",
        empty_label="Any source",
        label="Source",
    )


class ConflictFilterForm(PagedForm):
    STATES = [("open", "Open"), ("resolved", "Resolved"), ("all", "All")]

    state = forms.ChoiceField(choices=STATES, required=False, label="Status")
    kind = forms.ChoiceField(
        choices=[("", "Any kind"), *ConflictKind.choices], required=False, label="Kind"
    )

    def __init__(self, data=None, *args, user, **kwargs) -> None:
        # The JSON API and MCP name this filter ``status``: the queue reads that
        # name too, rather than ignoring it and listing the open conflicts.
        if data is not None and "status" in data and "state" not in data:
            data = data.copy()
            data["state"] = data["status"]
        super().__init__(data, *args, **kwargs)
        self.fields["scope"] = scope_field(user)
        self.order_fields(["scope", "state", "kind", "per_page"])


class ResolveForm(StorableTextForm):
    """One steward ruling on a conflict; each button posts its own copy of this form."""

    ACTIONS = [("keep", "Keep this"), ("coexist", "Both stand"), ("dismiss", "Dismiss")]

    action = forms.ChoiceField(choices=ACTIONS, widget=forms.HiddenInput)
    keep = forms.UUIDField(required=False, widget=forms.HiddenInput)
    reason = forms.CharField(
        max_length=MAX_REASON_LENGTH,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Say why: a ruling needs a reason."},
    )
    # The filters of the queue the steward came from, so the ruling lands on
    # that queue's next item (console.views.conflicts).
    queue = forms.CharField(required=False, max_length=2000, widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        if data.get("action") == "keep" and not data.get("keep"):
            self.add_error("keep", "Choose the fact to keep.")
        return data


class AuditFilterForm(PagedForm):
    KINDS = [("", "Everything"), ("human", "Human actions"), ("automatic", "Automatic changes")]

    who = forms.ChoiceField(choices=KINDS, required=False, label="Made by")
    actor = forms.CharField(required=False, max_length=150, label="Account")
    action = forms.ChoiceField(choices=ACTION_CHOICES, required=False, label="Action")
    target = forms.CharField(required=False, max_length=64, label="Target id")
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, label="Until", widget=forms.DateInput(attrs={"type": "date"})
    )

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"] = scope_field(user)
        self.order_fields(["scope", "who", "actor", "action", "target", "since", "until"])


class ChangesFilterForm(PagedForm):
    rule = forms.CharField(
        required=False, max_length=100, label="Rule", help_text="Rules starting with this text"
    )

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"] = scope_field(user)
        self.order_fields(["scope", "rule"])


class RevertForm(StorableTextForm):
    reason = forms.CharField(max_length=MAX_REASON_LENGTH, label="Reason")


class MergeForm(StorableTextForm):
    entity = forms.CharField(max_length=500, label="Merge entity", help_text="Its name or alias")
    into = forms.CharField(max_length=500, label="Into entity", help_text="The name to keep")
    reason = forms.CharField(max_length=MAX_REASON_LENGTH, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        field = scope_field(user)
        field.required = True
        field.empty_label = None
        self.fields["scope"] = field
        self.order_fields(["scope", "entity", "into", "reason"])


class UndoMergeForm(StorableTextForm):
    reason = forms.CharField(max_length=MAX_REASON_LENGTH, label="Reason to undo")


class EntityFilterForm(PagedForm):
    q = forms.CharField(required=False, max_length=500, label="Search")

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"] = scope_field(user)
        self.order_fields(["q", "scope", "per_page"])


EPISTEMIC_CHOICES = [("", "Any class"), *Epistemic.choices]


# --- account -----------------------------------------------------------------------


class TokenForm(StorableTextForm):
    name = forms.CharField(
        label="Token name",
        max_length=MAX_NAME_LENGTH,
        help_text="What the token is for, e.g. the agent that will use it.",
    )


class SubscriptionsField(forms.MultipleChoiceField):
    """The digest grid's checked boxes (``<scope id>:<kind>``), in scopes the account stewards."""

    def __init__(self, *, stewarded: set[int], **kwargs) -> None:
        super().__init__(**kwargs)
        self.stewarded = stewarded

    def validate(self, value: list[str]) -> None:
        # Said per value rather than as Django's "not one of the available
        # choices": which part is wrong, and nothing of a scope not the viewer's.
        for chosen in value:
            scope_id, _, kind = chosen.partition(":")
            if not scope_id.isdigit() or not kind:
                raise forms.ValidationError(
                    f"“{chosen[:60]}” is not a scope and a kind of event.", code="malformed"
                )
            if kind not in DIGEST_KINDS:
                raise forms.ValidationError(
                    f"“{kind[:40]}” is not a kind of event a digest tells of.", code="kind"
                )
            if int(scope_id) not in self.stewarded:
                raise forms.ValidationError(
                    "You can only subscribe to scopes you steward.", code="not_steward"
                )


class DigestForm(StorableTextForm):
    """The account page's email digest: how often, and which kinds of which stewarded scopes."""

    frequency = forms.ChoiceField(
        label="Send me a digest", choices=Frequency.choices, widget=forms.RadioSelect
    )
    own_challenges = forms.BooleanField(
        label="Tell me how my own challenges end", required=False, initial=True
    )

    def __init__(self, *args, user, **kwargs) -> None:
        preference = DigestPreference.objects.filter(user=user).first()
        chosen = subscribed(user, preference)
        kwargs.setdefault(
            "initial",
            {
                "frequency": frequency_of(user, preference),
                "own_challenges": preference.own_challenges if preference else True,
                "subscriptions": [
                    f"{scope_id}:{kind}" for scope_id, kinds in chosen.items() for kind in kinds
                ],
            },
        )
        super().__init__(*args, **kwargs)
        stewarded = stewarded_scope_ids(user)
        self.scopes = list(Scope.objects.filter(pk__in=stewarded).order_by("name"))
        self.fields["subscriptions"] = SubscriptionsField(
            label="Scopes and kinds of event",
            required=False,
            stewarded=stewarded,
            choices=[
                (f"{scope.pk}:{kind}", f"{scope.name}: {EventKind(kind).label}")
                for scope in self.scopes
                for kind in DIGEST_KINDS
            ],
        )

    def grid(self) -> list[tuple[Scope, list[tuple[str, str, bool]]]]:
        """Each stewarded scope with a box per kind: (value, kind's label, checked)."""
        checked = set(self["subscriptions"].value() or ())
        return [
            (
                scope,
                [
                    (f"{scope.pk}:{kind}", EventKind(kind).label, f"{scope.pk}:{kind}" in checked)
                    for kind in DIGEST_KINDS
                ],
            )
            for scope in self.scopes
        ]

    @staticmethod
    def kind_labels() -> list[str]:
        return [EventKind(kind).label for kind in DIGEST_KINDS]

    def chosen_subscriptions(self) -> dict[int, list[str]]:
        """The checked boxes as the kinds chosen in each scope."""
        chosen: dict[int, list[str]] = {}
        for value in self.cleaned_data["subscriptions"]:
            scope_id, _, kind = value.partition(":")
            chosen.setdefault(int(scope_id), []).append(kind)
        return chosen


class WebhookForm(StorableTextForm):
    """A new webhook endpoint: its URL, one of the viewer's scopes, the event kinds it hears."""

    url = forms.CharField(
        label="Endpoint URL",
        max_length=MAX_URL_LENGTH,
        help_text="Where deliveries are POSTed (http or https).",
    )
    kinds = forms.MultipleChoiceField(
        label="Events",
        required=False,
        choices=EventKind.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every kind. A member hears only its own challenges' outcomes.",
    )

    def __init__(self, *args, scopes, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"] = ListedChoiceField(
            queryset=scopes,
            to_field_name="name",
            empty_label=None,
            label="Scope",
            help_text="A scope you steward, or one you are a member of (challenge outcomes).",
        )
        self.order_fields(["url", "scope", "kinds"])


class WithdrawalForm(StorableTextForm):
    """The episode to withdraw and its scope (one of the steward's): the dry run is for these."""

    episode = forms.CharField(
        max_length=MAX_EPISODE_LENGTH,
        label="Episode",
        help_text="The name its writes carry: a session, an import, an agent run.",
        error_messages={"required": "Name the episode to withdraw."},
    )

    def __init__(self, *args, scopes, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"] = ListedChoiceField(
            queryset=scopes,
            to_field_name="name",
            empty_label=None,
            label="Scope",
            error_messages={"invalid_choice": "Choose a scope you are a steward of."},
        )
        self.order_fields(["scope", "episode"])


class ConfirmWithdrawalForm(WithdrawalForm):
    """The one confirmation after the dry run: the same episode and scope, and why."""

    reason = forms.CharField(
        max_length=MAX_REASON_LENGTH,
        label="Reason to withdraw",
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Say why: a withdrawal needs a reason."},
    )
    # The dry run's token: the withdrawal does what that dry run showed, or nothing.
    token = forms.CharField(max_length=100, required=False, widget=forms.HiddenInput())

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["scope"].widget = forms.HiddenInput()
        self.fields["episode"].widget = forms.HiddenInput()


# --- search ------------------------------------------------------------------------


class SearchForm(StorableTextForm):
    """The search box of every page's header, and the filters of the results page."""

    STATUSES = [
        ("live", "Valid now"),
        ("disputed", "Disputed"),
        ("admitted", "Admitted"),
        ("candidate", "Candidate"),
    ]

    # Not labelled "Search": the Facts browser's own box is, and a page holds both.
    q = forms.CharField(max_length=500, label="Find facts")
    status = forms.ChoiceField(choices=STATUSES, required=False, label="Status")
    as_of = forms.DateTimeField(
        required=False,
        label="Valid at",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Default now.",
    )

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["q"].widget = forms.TextInput(attrs={"type": "search"})
        self.fields["scope"] = scope_field(user)
        self.fields["predicate"] = predicate_field()
        self.order_fields(["q", "scope", "predicate", "status", "as_of"])
