"""Pages of long lists with Django's Paginator, and the site's answer to bad query parameters.

A list of a million games is not counted to the end: ``CappedPaginator`` counts at most ``cap``
items (``SELECT count(*) FROM (... LIMIT cap + 1)``) and lists the newest ``cap``; narrower lists
(a network's, a contributor's) reach older games.
"""

from __future__ import annotations

import functools

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.shortcuts import render
from django.utils.functional import cached_property

PER_PAGE = 50
LIST_CAP = 10_000


class BadParameter(Exception):
    """A query parameter with a value the page cannot use; answered 400 with the message."""

    def __init__(self, name: str, value: str, problem: str) -> None:
        self.name = name
        self.value = value
        super().__init__(f"{name}={value!r}: {problem}")


class CappedPaginator(Paginator):
    def __init__(self, object_list, per_page: int = PER_PAGE, cap: int = LIST_CAP) -> None:
        super().__init__(object_list, per_page)
        self.cap = cap

    @cached_property
    def count(self) -> int:
        items = self.object_list
        if isinstance(items, QuerySet):
            return items.order_by()[: self.cap + 1].count()
        return len(items)

    @property
    def capped(self) -> bool:
        """More items than the cap: only the first ``cap`` are listed."""
        return self.count > self.cap

    @cached_property
    def num_pages(self) -> int:
        shown = min(self.count, self.cap)
        return max(1, -(-shown // self.per_page))


def page_number(request: HttpRequest) -> int:
    """``?page=N``: BadParameter (a 400 naming it) for what is not a page number."""
    raw = request.GET.get("page") or "1"
    try:
        number = int(raw)
    except ValueError:
        number = 0
    if number < 1:
        raise BadParameter("page", raw, "not a page number (pages are counted from 1)")
    return number


def paginate(
    request: HttpRequest, items, per_page: int = PER_PAGE, cap: int = LIST_CAP
) -> tuple[Page, CappedPaginator]:
    """The requested page (``?page=N``) of items; 404 naming the problem for a page past the last,
    BadParameter for what is not a page number."""
    paginator = CappedPaginator(items, per_page, cap)
    number = page_number(request)
    if number > paginator.num_pages:
        if paginator.capped:
            raise Http404(
                f"page {number} is past the newest {paginator.cap:,} listed here (page "
                f"{paginator.num_pages} is the last); narrow the list to see older ones"
            )
        raise Http404(f"page {number} is past the last page ({paginator.num_pages})")
    return paginator.page(number), paginator


def choice(request: HttpRequest, name: str, allowed: tuple[str, ...], default: str) -> str:
    """A query parameter that must be one of ``allowed``; BadParameter otherwise."""
    value = request.GET.get(name, default)
    if value not in allowed:
        raise BadParameter(name, value, f"must be one of {', '.join(allowed)}")
    return value


def friendly(view):
    """Answer a bad query parameter with a 400 page that names it (instead of an error page)."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except BadParameter as e:
            return render(request, "dashboard/bad_request.html", {"message": str(e)}, status=400)

    return wrapped
