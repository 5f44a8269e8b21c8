"""The console's shared HTTP plumbing: the typed request, refusals, paging, redirects.

Every page family has its own module beside this one; what two or more of
them need lives here.
"""

from collections.abc import Callable, Iterable, Mapping
from functools import cached_property, wraps
from typing import Any
from uuid import UUID

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from console.forms import PagedForm
from memories import lookups
from memories.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.models import Fact, Scope
from memories.roles import is_global_steward, steward_scope_ids
from memories.vocabulary import attach_vocabulary


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

    def __init__(self, object_list, per_page: int, *, number: int) -> None:
        super().__init__(object_list, per_page)
        number = min(max(number, 1), self.deepest(per_page))
        self.limit = number * per_page + self.WINDOW
        self.more = False

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
        if isinstance(self.object_list, SqlRows):
            found = self.object_list.count_upto(self.limit + 1)
        else:
            # A sliced queryset counts as SELECT count(*) FROM (... LIMIT n);
            # with values("pk") the inner query carries no joined columns.
            found = self.object_list.order_by().values("pk")[: self.limit + 1].count()
        self.more = found > self.limit
        return min(found, self.limit)


class SqlRows:
    """A list's rows as hand-written SQL, for ``paginate``: counted in a window, read by slice.

    ``table`` is the FROM of the list with its alias, ``where`` its
    condition, ``order`` its ORDER BY; ``columns`` is what a row selects,
    from ``table`` and from ``joins``, which the count leaves out. ``build``
    makes a row into the object the page shows. The count reads only as far
    as the window, like the paginator's count of a queryset. For a hot list
    page, where building the queryset cost more Python than PostgreSQL took
    to run it. Only fixed fragments go into the text; values are parameters.
    """

    def __init__(
        self,
        *,
        table: str,
        where: str,
        order: str,
        params: Mapping[str, Any],
        columns: str,
        joins: str = "",
        build: Callable[[tuple], Any],
    ) -> None:
        self.table, self.where, self.order = table, where, order
        self.columns, self.joins = columns, joins
        self.params = dict(params)
        self.build = build
        self._counted: tuple[int, int] | None = None  # (limit, count) read ahead
        self._read: tuple[int, int, list[tuple]] | None = None  # (offset, limit, rows)

    def _count_query(self, limit: int) -> tuple[str, dict[str, Any]]:
        sql = (
            f"SELECT count(*) FROM (SELECT 1 FROM {self.table} WHERE {self.where}"
            " LIMIT %(count_limit)s) AS counted"
        )
        return sql, {**self.params, "count_limit": limit}

    def _slice_query(self, offset: int, limit: int) -> tuple[str, dict[str, Any]]:
        sql = (
            f"SELECT {self.columns} FROM {self.table} {self.joins} WHERE {self.where}"
            f" ORDER BY {self.order} LIMIT %(limit)s OFFSET %(offset)s"
        )
        return sql, {**self.params, "offset": offset, "limit": limit}

    def read_ahead(self, *, count_limit: int, offset: int, limit: int) -> None:
        """Read the count and the slice a page will most likely ask for, in one round trip.

        ``paginate`` knows the page number asked for; if that page turns out
        not to exist (past the end), the paginator asks for another slice,
        which is then read on its own.
        """
        counted, read = lookups.batch(
            self._count_query(count_limit), self._slice_query(offset, limit)
        )
        self._counted = (count_limit, counted[0][0])
        self._read = (offset, limit, read)

    def count_upto(self, limit: int) -> int:
        if self._counted is not None and self._counted[0] == limit:
            return self._counted[1]
        return lookups.rows(*self._count_query(limit))[0][0]

    def __getitem__(self, window: slice) -> list:
        if not isinstance(window, slice) or window.step is not None:
            raise TypeError("SqlRows reads a page: a slice without a step")
        start = window.start or 0
        limit = window.stop - start
        if self._read is not None and self._read[0] == start and limit <= self._read[1]:
            found = self._read[2][:limit]
        else:
            found = lookups.rows(*self._slice_query(start, limit))
        return [self.build(row) for row in found]


def in_list(column: str, values: Iterable[Any], params: dict[str, Any], name: str) -> str:
    """``column IN (...)`` with one parameter per value (added to ``params``), for SqlRows.

    Not ``= ANY(array)``: PostgreSQL reads ``IN`` with one value as ``=``,
    and can then walk an index on the column in the order a page asks for
    and stop at the page's end; with an array it sorts every match first.
    """
    names = []
    for index, value in enumerate(values):
        params[f"{name}_{index}"] = value
        names.append(f"%({name}_{index})s")
    return f"{column} IN ({', '.join(names)})" if names else "FALSE"


def paginate(request: HtmxHttpRequest, listed: "QuerySet | SqlRows", form: PagedForm) -> Page:
    """One page of ``listed``: a bounded COUNT and one slice, whatever the page size.

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
    paginator = WindowPaginator(listed, size, number=number)
    # Read ahead the page asked for, unless it cannot exist: then the
    # paginator counts first and reads the last page on its own.
    if isinstance(listed, SqlRows) and not past_any_end:
        listed.read_ahead(count_limit=paginator.limit + 1, offset=(number - 1) * size, limit=size)
    return paginator.get_page(number)


# The relations a fact row shows besides its subject and object: tiny tables
# (a few scopes, the vocabulary, the accounts of one page).
SMALL_RELATIONS = ("scope", "predicate", "source_type", "author")


def fill_small_relations(
    facts: Iterable[Fact], scopes: Mapping[int, Scope] | None = None
) -> list[Fact]:
    """Attach each fact's scope, predicate, source type and author without joining them.

    Joining four tiny tables into a page query costs PostgreSQL more to plan
    (it weighs every join order) than to run, several milliseconds a page. The
    vocabulary comes from the process's cached copy, scopes and authors from
    one small query each (none for the scopes when the page has already read
    them: ``scopes``). Use with ``select_related("subject", "object_ref")``.
    """
    facts = list(facts)
    attach_vocabulary(facts)
    scopes = dict(scopes or {})
    missing_scopes = {f.scope_id for f in facts} - scopes.keys()
    scopes |= Scope.objects.in_bulk(missing_scopes) if missing_scopes else {}
    authors = (
        get_user_model().objects.only("username").in_bulk({f.author_id for f in facts})
        if facts
        else {}
    )
    for fact in facts:
        fact.scope = scopes[fact.scope_id]
        fact.author = authors[fact.author_id]
    return facts


def row_link(name: str) -> Callable[[UUID], str]:
    """``reverse(name, args=[pk])`` for every row of a page, with one walk of the URL resolver.

    For a pattern whose one argument is a ``<uuid:...>``: the converter writes
    a UUID as ``str()`` does, so the reversed path is the same for any id
    around it. A queue page links each of its rows; reversing each costs
    more than the rest of the row.
    """
    marker = UUID(int=0)
    before, found, after = reverse(name, args=[marker]).partition(str(marker))
    if not found:
        raise ValueError(f"{name} does not take one UUID")
    return lambda pk: f"{before}{pk}{after}"


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
    if is_global_steward(user):
        return Scope.objects.all()
    return Scope.objects.filter(pk__in=steward_scope_ids(user))
