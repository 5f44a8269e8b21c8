"""Withdrawing an episode from the console (SPEC §12): the dry run first, then one confirmation.

A steward names the episode and its scope; the page shows what the
withdrawal would change (``withdraw_episode(dry_run=True)``: the facts
withdrawn, the facts reinstated, those kept closed and why, the conflicts
that would close) and, below it, the one form that does it, **Withdraw**,
with a required reason and the dry run's token, so it withdraws exactly what
the page showed: if the episode changed since, nothing is withdrawn and the
page shows the new dry run to confirm. The result page reads the
``Withdrawal`` record.
Only stewards reach these pages; everyone else is refused.
"""

from typing import Any
from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from console.forms import ConfirmWithdrawalForm, WithdrawalForm
from console.views.common import HtmxHttpRequest, add_rejection, done, refusals, steward_scopes
from memories.store.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.store.models import Fact, Scope, Withdrawal
from memories.write.episodes import (
    PlanChanged,
    WithdrawalPlan,
    recent_episodes,
    withdraw_episode,
)

# withdraw_episode asks every caller for a reason; a dry run records nothing.
DRY_RUN_REASON = "dry run"


@require_http_methods(["GET", "POST"])
@login_required
@refusals
def withdraw(request: HtmxHttpRequest) -> HttpResponse:
    """GET with an episode: its dry run and the confirmation; POST: the withdrawal."""
    scopes = steward_scopes(request.user).order_by("name")
    if not scopes.exists():
        raise Forbidden("only a steward may withdraw an episode")
    status = 200
    changed = None
    if request.method == "POST":
        confirm = ConfirmWithdrawalForm(request.POST, scopes=scopes)
        if confirm.is_valid():
            data = confirm.cleaned_data
            try:
                plan = withdraw_episode(
                    actor=request.user,
                    scope=data["scope"].name,
                    episode=data["episode"],
                    reason=data["reason"],
                    confirm=data["token"] or None,
                )
            except PlanChanged as error:
                changed = f"Nothing was withdrawn: {error}. This is the new dry run."
            except Rejected as error:
                add_rejection(confirm, error)
            except NotFound:
                confirm.add_error("episode", "This episode wrote nothing in this scope.")
            except StateConflict as error:
                confirm.add_error(None, f"Nothing was withdrawn: {error}.")
            else:
                assert plan.withdrawal is not None
                return done(request, _said(plan), reverse("withdrawal", args=[plan.withdrawal.pk]))
        status = 409 if changed else 400
        form = WithdrawalForm(request.POST, scopes=scopes)
    else:
        form = WithdrawalForm(request.GET or None, scopes=scopes)
        confirm = None
    plan = _dry_run(request, form)
    if changed is not None:
        confirm = None
    if confirm is None and plan is not None and plan.withdrawn:
        initial = {"scope": plan.scope.name, "episode": plan.episode, "token": plan.token}
        if changed is not None:
            initial["reason"] = request.POST.get("reason", "")
        confirm = ConfirmWithdrawalForm(initial=initial, scopes=scopes)
    context = {
        "form": form,
        "plan": plan,
        "confirm": confirm,
        "changed": changed,
        "episodes": recent_episodes(scopes),
    }
    template = "console/withdraw.html"
    if request.htmx and not request.htmx.boosted:
        template += "#withdrawal-plan"
    return render(request, template, context, status=status)


def _dry_run(request: HtmxHttpRequest, form: WithdrawalForm) -> WithdrawalPlan | None:
    """What withdrawing the form's episode would change; None until one is named."""
    if not form.is_valid():
        return None
    try:
        return withdraw_episode(
            actor=request.user,
            scope=form.cleaned_data["scope"].name,
            episode=form.cleaned_data["episode"],
            reason=DRY_RUN_REASON,
            dry_run=True,
        )
    except NotFound:
        form.add_error("episode", "This episode wrote nothing in this scope.")
    except Rejected as error:
        add_rejection(form, error)
    return None


def _said(plan: WithdrawalPlan) -> str:
    def count(n: int, noun: str) -> str:
        return f"{n} {noun}{'' if n == 1 else 's'}"

    said = (
        f"Withdrew episode {plan.episode} in {plan.scope.name}: "
        f"{count(len(plan.withdrawn), 'fact')} withdrawn, "
        f"{count(len(plan.reinstated), 'fact')} reinstated"
    )
    if plan.closed_conflicts:
        said += f", {count(len(plan.closed_conflicts), 'conflict')} closed"
    return said + "."


@require_GET
@login_required
def withdrawal(request: HtmxHttpRequest, withdrawal_id: UUID) -> HttpResponse:
    """One withdrawal as recorded: who, when, why, what was withdrawn and reinstated."""
    try:
        record = (
            Withdrawal.objects.filter(scope__in=Scope.objects.visible_to(request.user))
            .select_related("scope", "actor")
            .get(pk=withdrawal_id)
        )
    except Withdrawal.DoesNotExist:
        raise Http404 from None
    facts = (
        Fact.objects.readable_by(request.user)
        .for_display()
        .in_bulk([entry["fact"] for entry in [*record.withdrawn, *record.reinstated]])
    )
    context: dict[str, Any] = {
        "record": record,
        "withdrawn": [facts.get(UUID(entry["fact"])) for entry in record.withdrawn],
        "reinstated": [facts.get(UUID(entry["fact"])) for entry in record.reinstated],
    }
    return render(request, "console/withdrawal.html", context)
