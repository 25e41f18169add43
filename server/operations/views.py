"""The website's page of the data: the daily archives of the games and the form that exports a selection."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from server.operations import selectors
from server.paging import friendly, paginate


@require_GET
@friendly
def data(request: HttpRequest) -> HttpResponse:
    """The daily archives of the games (``manage.py export_games``), newest first."""
    page, paginator = paginate(request, selectors.archives(), per_page=40)
    return render(request, "dashboard/data.html", {"page": page, "paginator": paginator, "runs": selectors.run_names()})
