"""The filters listings share: ``run`` (a run's name) and fields whose value must be one of their
choices, read from the query string; a value that is none of them is refused with the parameter's
name and the choices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db.models import QuerySet

from server.refusals import invalid


def filter_listing(qs: QuerySet, params: Mapping[str, str], choices: Mapping[str, Sequence[str]]) -> QuerySet:
    """``qs`` narrowed to the run named by ``run`` and to the value of each parameter in ``choices``
    (the model field of that name); a parameter left out or empty narrows nothing."""
    if params.get("run"):
        qs = qs.filter(run__name=params["run"])
    for name, allowed in choices.items():
        value = params.get(name)
        if value:
            if value not in allowed:
                raise invalid(name, f"{value!r} is not one of {', '.join(allowed)}")
            qs = qs.filter(**{name: value})
    return qs
