"""Every text field of every console form refuses what PostgreSQL cannot store.

A NUL or a lone surrogate is a form error on that very field, in the words of
the one rule (``memories.core.decisions.unstorable``), and nothing is written.
Django's CharField refuses a NUL by itself, but not a surrogate.
"""

import pytest
from django import forms
from django.test import Client

from admissions.models import Record
from console import admission_forms
from console import forms as memory_forms
from console.forms import TokenForm
from memories.store.models import Scope
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db

# The forms that take the viewer (their scope choices are the viewer's scopes).
FOR_A_VIEWER = {
    memory_forms.ConflictFilterForm,
    memory_forms.AuditFilterForm,
    memory_forms.MergeForm,
    memory_forms.EntityFilterForm,
    admission_forms.CandidateFilterForm,
    admission_forms.FactFilterForm,
    admission_forms.ChallengeFilterForm,
    memory_forms.ChangesFilterForm,
    memory_forms.SearchForm,
}
# The forms that take the scopes to choose from (those the viewer stewards).
FOR_SCOPES = {
    memory_forms.WithdrawalForm,
    memory_forms.ConfirmWithdrawalForm,
    memory_forms.WebhookForm,
}
FORMS = [
    *FOR_A_VIEWER,
    *FOR_SCOPES,
    memory_forms.ResolveForm,
    memory_forms.UndoMergeForm,
    admission_forms.VerdictForm,
    admission_forms.ChallengeForm,
    admission_forms.RefuteForm,
    admission_forms.CorrectForm,
    admission_forms.BatchReviewForm,
    memory_forms.RevertForm,
    # Its fields are choices and a box: no text to hold to the rule.
    memory_forms.DigestForm,
    TokenForm,
]
TEXT_FIELDS = [
    (form_class, name)
    for form_class in FORMS
    for name, field in form_class.base_fields.items()
    # A UUID field is a CharField too, but refuses any such text as no UUID.
    if isinstance(field, forms.CharField) and not isinstance(field, forms.UUIDField)
]


def test_the_table_holds_every_form_of_the_console():
    every_form = {
        value
        for module in (memory_forms, admission_forms)
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, forms.Form)
        and value.__module__ == module.__name__
        and value.base_fields
    }
    assert every_form - {memory_forms.PagedForm} <= set(FORMS)
    assert len(TEXT_FIELDS) >= 20


def bound(form_class, member, data):
    if form_class in FOR_A_VIEWER:
        return form_class(data, user=member)
    if form_class in FOR_SCOPES:
        return form_class(data, scopes=Scope.objects.all())
    return form_class(data)


@pytest.mark.parametrize(
    ("form_class", "name"), TEXT_FIELDS, ids=[f"{f.__name__}.{n}" for f, n in TEXT_FIELDS]
)
@pytest.mark.parametrize(
    ("text", "words"),
    [("x\ud800y", "lone surrogate"), ("\udfff", "lone surrogate"), ("x\x00y", "NUL")],
    ids=["surrogate", "low-surrogate", "nul"],
)
def test_unstorable_text_is_an_error_on_its_field(member, form_class, name, text, words):
    form = bound(form_class, member, {name: text})
    assert not form.is_valid()
    # One error, the rule's: Django's own NUL check gives way to it.
    [error] = form.errors[name]
    assert words in error


@pytest.mark.parametrize(
    ("form_class", "name"), TEXT_FIELDS, ids=[f"{f.__name__}.{n}" for f, n in TEXT_FIELDS]
)
def test_ordinary_text_is_no_error_of_the_rule(member, form_class, name):
    form = bound(form_class, member, {name: "Grüße, 東京 🚀"})
    form.is_valid()
    assert not any("NUL" in error or "surrogate" in error for error in form.errors.get(name, []))


def test_a_nul_in_a_challenge_from_the_console_writes_nothing(member):
    fact = assert_fact(actor=member, data=fact_body()).fact
    browser = Client()
    browser.force_login(member)
    response = browser.post(
        f"/facts/{fact.pk}/challenge", {"ground": "wrong\x00", "evidence": "log-1 | a\x00b"}
    )
    assert response.status_code == 400
    assert b"NUL" in response.content
    assert Record.objects.count() == 0
