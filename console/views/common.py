"""The console's shared HTTP plumbing: the typed request, refusals, paging, redirects.

Every page family has its own module beside this one; what two or more of
them need lives here.
"""

from collections.abc import Callable
from functools import cached_property, wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from console.forms import PagedForm
from memories.store.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.store.models import Scope


class HtmxHttpRequest(HttpRequest):
    """A console request: django-htmx's details of it, and the signed-in account.

    Every console view is behind ``login_required``, so ``user`` is a ``User``.
    """

    htmx: HtmxDetails
    user: User


# --- shared plumbing ----------------------------------------------------------------

# PostgreSQL's bigint, the type of LIMIT and OFFSET.
BIGINT_MAX = 2**63 - 1


def refusals(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer an action's refusal the way the console always does.

    NotFound is a 404 (absent and not yours look the same); Forbidden a 403
    page; StateConflict a 409 saying what changed. Rejected is not handled
    here: a view re-renders its form with the field's error instead.
    """

    @wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except NotFound:
            raise Http404 from None
        except Forbidden as error:
            return render(request, "refused.html", {"message": str(error)}, status=403)
        except StateConflict as error:
            return render(request, "refused.html", {"message": str(error)}, status=409)

    return wrapper


class WindowPaginator(Paginator):
    """A paginator that counts no further than ``WINDOW`` rows past the end of this page.

    A queue of 10,000 items costs a full COUNT on every page view, and that
    count grows with the queue. Counting at most one window past the page
    shown keeps a page's cost flat; past the window the pager says "1,000+"
    and still offers the next page, so deep pages stay reachable (each
    counting its own window).
    """

    WINDOW = 1_000

    def __init__(
        self,
        object_list,
        per_page: int,
        *,
        number: int,
        rows: Callable[[list], QuerySet] | None = None,
    ) -> None:
        super().__init__(object_list, per_page)
        number = min(max(number, 1), self.deepest(per_page))
        self.limit = number * per_page + self.WINDOW
        self.more = False
        self.rows = rows

    @classmethod
    def deepest(cls, per_page: int) -> int:
        """The deepest page whose count and slice PostgreSQL can still bound.

        LIMIT and OFFSET are bigints: the count of a page reads ``number *
        per_page + WINDOW + 1`` rows at most, which must fit in one. No list
        is that long, so a page this deep is past the end of every list.
        """
        return (BIGINT_MAX - cls.WINDOW - 1) // per_page

    @cached_property
    def count(self) -> int:
        # A sliced queryset counts as SELECT count(*) FROM (... LIMIT n); with
        # values("pk") the inner query carries no joined columns.
        found = self.object_list.order_by().values("pk")[: self.limit + 1].count()
        self.more = found > self.limit
        return min(found, self.limit)

    def page(self, number) -> Page:
        """The page, its rows read by ``rows`` (when given) from the ids the list orders.

        PostgreSQL joins what a row displays before it sorts and cuts the
        page, so a list filtered to thousands of rows (every suspended fact)
        would join all of them; ordering the bare ids and reading the shown
        rows by key joins only the page's.
        """
        page = super().page(number)
        if self.rows is not None:
            ids = list(page.object_list.values_list("pk", flat=True))
            found = {row.pk: row for row in self.rows(ids)}
            page.object_list = [found[pk] for pk in ids if pk in found]
        return page


def paginate(
    request: HtmxHttpRequest,
    listed: QuerySet,
    form: PagedForm,
    *,
    rows: Callable[[list], QuerySet] | None = None,
) -> Page:
    """One page of ``listed``: a bounded COUNT and one slice, whatever the page size.

    ``rows``, given the ids of the page's rows, reads them as the page shows
    them (``WindowPaginator.page``); ``listed`` then needs only to filter and order.

    Page numbers read as Django's ``Paginator.get_page`` reads them: a page
    past the end, however far, is the last page, and so is a number below 1
    (``form.page_number()`` makes anything that is not a number the first).
    Finding the last page means counting to the end of the list.
    """
    size = form.page_size()
    number = form.page_number()
    deepest = WindowPaginator.deepest(size)
    past_any_end = not 1 <= number < deepest
    if past_any_end:
        number = deepest
    paginator = WindowPaginator(listed, size, number=number, rows=rows)
    return paginator.get_page(number)


def page_query(request: HtmxHttpRequest) -> str:
    """The current query string without ``page``, for the pager's links."""
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


def add_rejection(form: forms.Form, error: Rejected) -> None:
    """Show an action's refusal on the form field it names (or on the form)."""
    field = error.field if error.field in form.fields else None
    form.add_error(field, error.message if field else str(error))


def done(request: HtmxHttpRequest, message: str, to: str) -> HttpResponse:
    """After a successful plain POST: a message and a redirect (post/redirect/get)."""
    messages.success(request, message)
    if request.htmx:
        return HttpResponseClientRedirect(to)
    return redirect(to)


def steward_scopes(user: User) -> QuerySet[Scope]:
    """The scopes in which ``user`` holds steward authority."""
    return Scope.objects.stewarded_by(user)
