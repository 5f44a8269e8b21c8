"""The console's forms render their widgets exactly as Django's own templates would."""

import pytest
from django import forms
from django.forms.renderers import DjangoTemplates
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
from console.forms import (
    QUICK_WIDGETS,
    ConflictFilterForm,
    QuickForm,
    ResolveForm,
)

pytestmark = pytest.mark.django_db

DJANGO = DjangoTemplates()


def both_ways(form: forms.Form) -> list[tuple[str, str, str]]:
    """Each field's markup with the quick renderer and with Django's templates."""
    assert form.renderer is QUICK_WIDGETS
    rendered = []
    for name in form.fields:
        quick = str(form[name])
        form.renderer = DJANGO
        plain = str(form[name])
        form.renderer = QUICK_WIDGETS
        rendered.append((name, quick, plain))
    # Error lists, empty or not: the form's, its non-field ones and each field's.
    lists = {"errors": form.errors, "non_field_errors": form.non_field_errors()}
    lists |= {f"{name}.errors": form[name].errors for name in form.fields}
    for name, errors in lists.items():
        quick = errors.render(renderer=QUICK_WIDGETS)
        rendered.append((name, quick, errors.render(renderer=DJANGO)))
    return rendered


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


def test_every_console_widget_renders_as_djangos_own_templates_do(steward, scope):
    compared = 0
    for form in console_forms(steward):
        form.is_bound and form.is_valid()  # bound forms show their errors' state too
        for name, quick, plain in both_ways(form):
            assert quick == plain, (type(form).__name__, name)
            compared += 1
    assert compared > 40


def test_text_is_escaped_in_values_labels_and_attributes():
    class Sample(QuickForm):
        choice = forms.ChoiceField(choices=[("<a>", 'say "hi" & <b>bye</b>')])
        text = forms.CharField(widget=forms.TextInput(attrs={"data-x": '"><script>'}))
        area = forms.CharField(widget=forms.Textarea)

    form = Sample(initial={"choice": "<a>", "text": "</input>", "area": "</textarea><b>"})
    html = "".join(str(form[name]) for name in form.fields)
    assert "<script>" not in html and "<b>" not in html and "</input>" not in html
    assert "</textarea><b>" not in html
    assert '<option value="&lt;a&gt;" selected>say &quot;hi&quot; &amp; &lt;b&gt;bye' in html


def test_grouped_and_custom_option_widgets_still_match_djangos_output():
    class Fancy(forms.Select):
        option_template_name = "django/forms/widgets/input_option.html"

    class Sample(QuickForm):
        grouped = forms.ChoiceField(choices=[("Fruit", [("a", "Apple"), ("p", "Pear")])])
        fancy = forms.ChoiceField(choices=[("x", "X")], widget=Fancy)
        checks = forms.MultipleChoiceField(
            choices=[("1", "One")], widget=forms.CheckboxSelectMultiple
        )

    for name, quick, plain in both_ways(Sample(initial={"grouped": "p"})):
        assert quick == plain, name


def test_predicate_and_source_filters_list_the_whole_vocabulary_in_the_models_order(steward):
    from memories.models import Predicate, SourceType

    form = CandidateFilterForm(user=steward)
    listed = {
        name: [str(value) for value, _ in form.fields[name].choices]
        for name in ("predicate", "source")
    }
    assert listed["predicate"] == ["", *Predicate.objects.values_list("name", flat=True)]
    assert listed["source"] == ["", *SourceType.objects.values_list("name", flat=True)]
    assert len(listed["predicate"]) > 5 and len(listed["source"]) > 3
