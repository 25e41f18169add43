"""Control characters stop at the edge: a request whose decoded path, query parameter names or
values hold one (U+0000 to U+001F, or U+007F) is answered 400 before any view runs (JSON under
/api/, a plain page on the website), and a cookie holding one is dropped as if never sent.

Only NUL is what PostgreSQL cannot store (a query with it fails, a 500), but no address of this
server takes any control character: names of runs, networks and users are letters, digits and a
few signs, and query parameters are numbers and words. Refusing them all also keeps line breaks
out of the logs, where they could forge lines. Bodies are the parsers' and forms' business: Django
forms and DRF's CharField refuse NUL, and the JSON parser refuses what no database can hold.
"""

from __future__ import annotations

import json
import re

from django.core.exceptions import TooManyFieldsSent
from django.http import HttpResponse
from django.shortcuts import render

from common.protocol import CONTROL_CHARS
from server.api.errors import error_body


def _where(m: re.Match[str]) -> str:
    return f"the control character U+{ord(m.group()):04X} at character {m.start() + 1}"


def _problem(request) -> tuple[str, str] | None:
    """The field and the message naming the first control character of the path or the query."""
    if m := CONTROL_CHARS.search(request.path):
        return "path", f"the address's path holds {_where(m)}"
    query = request.META.get("QUERY_STRING", "")
    if "%" in query or CONTROL_CHARS.search(query):  # otherwise nothing in it decodes to one
        try:
            params = list(request.GET.lists())
        except TooManyFieldsSent as e:
            return "query", str(e)
        for name, values in params:
            if m := CONTROL_CHARS.search(name):
                return "query", f"a query parameter's name holds {_where(m)}"
            for value in values:
                if m := CONTROL_CHARS.search(value):
                    return name, f"the query parameter {name} holds {_where(m)}"
    return None


class ControlCharacterMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        problem = _problem(request)
        if problem is not None:
            field, message = problem
            if request.path.startswith("/api/"):
                return HttpResponse(
                    json.dumps(error_body("invalid", message, field)), status=400, content_type="application/json"
                )
            return render(request, "400.html", {"message": message}, status=400)
        cookies = request.COOKIES
        for name in [n for n, value in cookies.items() if CONTROL_CHARS.search(n) or CONTROL_CHARS.search(value)]:
            del cookies[name]
        return self.get_response(request)
