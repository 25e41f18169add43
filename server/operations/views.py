"""The website's pages of the data: the daily archives of the games, each npz archive's files, and the
form that exports a selection."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from server.operations import selectors
from server.operations.models import DataExport
from server.paging import friendly, paginate


@require_GET
@friendly
def data(request: HttpRequest) -> HttpResponse:
    """The daily archives of the games (``manage.py export_games``), newest first."""
    page, paginator = paginate(request, selectors.archives(), per_page=40)
    return render(request, "dashboard/data.html", {"page": page, "paginator": paginator, "runs": selectors.run_names()})


@require_GET
@friendly
def archive(request: HttpRequest, pk: int) -> HttpResponse:
    """An npz archive's files (the day's shards), a page at a time, and its disabled games."""
    export = selectors.archives().filter(pk=pk, kind=DataExport.Kind.NPZ).first()
    if export is None:
        raise Http404(f"there is no npz archive {pk}")
    page, paginator = paginate(request, selectors.archive_shards(export), per_page=100)
    return render(request, "dashboard/data_archive.html", {"export": export, "page": page, "paginator": paginator})
