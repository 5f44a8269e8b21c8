"""The console's forms render through Django's own widget templates, escaping what they show."""

import pytest
from django import forms
from django.forms.renderers import Jinja2
from django.http import QueryDict

from console.admission_forms import (
    BatchReviewForm,
    CandidateFilterForm,
    ChallengeForm,
    CorrectForm,
    FactFilterForm,
    RefuteForm,
    VerdictForm,
)
from console.forms import CONSOLE_RENDERER, ConflictFilterForm, ResolveForm, StorableTextForm

pytestmark = pytest.mark.django_db


def console_forms(user) -> list[forms.Form]:
    answers = QueryDict(mutable=True)
    answers.update({"scope": "project", "state": "resolved", "per_page": "50", "page": "2"})
    odd = {"object": 'a "quoted" <b>value</b> & more', "confidence": 0.75, "ground": "x\ny"}
    return [
        ConflictFilterForm(user=user),
        ConflictFilterForm(answers, user=user),
        CandidateFilterForm(user=user),
        FactFilterForm(QueryDict("q=%3Cscript%3E&status=live&epistemic=observation"), user=user),
        ResolveForm(initial={"action": "keep", "keep": "7d5b7f1e-0e5c-4c55-9c43-3c1b8f0f4d11"}),
        ResolveForm({"action": "dismiss", "reason": "<i>because</i>"}),
        VerdictForm(auto_id="id_verdict_%s"),
        ChallengeForm({"ground": "", "evidence": "a\nb"}),
        RefuteForm(auto_id="id_refute_12345678_%s"),
        CorrectForm(initial={**odd, "source_type": "code", "epistemic": "observation"}),
        CorrectForm({**odd, "source_type": "nope"}),
        BatchReviewForm(choices=[("1", "one <fact>"), ("2", "two")]),
    ]


def test_every_console_form_renders_with_djangos_own_widget_templates(steward, scope):
    rendered = 0
    for form in console_forms(steward):
        form.is_bound and form.is_valid()  # bound forms show their errors' state too
        # Django's own renderer with Django's own Jinja2 widget templates, one
        # instance for every console form (console.forms.CONSOLE_RENDERER).
        assert form.renderer is CONSOLE_RENDERER
        assert isinstance(form.renderer, Jinja2)
        for name in form.fields:
            assert f'name="{name}"' in str(form[name]), (type(form).__name__, name)
            rendered += 1
    assert rendered > 20


def test_text_is_escaped_in_values_labels_and_attributes():
    class Sample(StorableTextForm):
        choice = forms.ChoiceField(choices=[("<a>", 'say "hi" & <b>bye</b>')])
        text = forms.CharField(widget=forms.TextInput(attrs={"data-x": '"><script>'}))
        area = forms.CharField(widget=forms.Textarea)

    form = Sample(initial={"choice": "<a>", "text": "</input>", "area": "</textarea><b>"})
    html = "".join(str(form[name]) for name in form.fields)
    assert "<script>" not in html and "<b>" not in html and "</input>" not in html
    assert "</textarea><b>" not in html
    # MarkupSafe (the Jinja2 templates' escaping) writes a quote as &#34;, Django as &quot;.
    assert '<option value="&lt;a&gt;" selected>say &#34;hi&#34; &amp; &lt;b&gt;bye' in html


def test_predicate_and_source_filters_list_the_whole_vocabulary_in_the_models_order(steward):
    from memories.store.models import Predicate, SourceType

    form = CandidateFilterForm(user=steward)
    listed = {
        name: [str(value) for value, _ in form.fields[name].choices]
        for name in ("predicate", "source")
    }
    assert listed["predicate"] == ["", *Predicate.objects.values_list("name", flat=True)]
    assert listed["source"] == ["", *SourceType.objects.values_list("name", flat=True)]
    assert len(listed["predicate"]) > 5 and len(listed["source"]) > 3
