"""What the server refuses to do, in the domain's words rather than HTTP's.

Services and selectors raise these; they know nothing of requests or status codes. The API's one
exception handler (``server.api.errors``) answers each kind with its status and the JSON error body,
and a page turns one into its own answer (a 404 page, a form error). ``code`` is a stable machine
word (``invalid``, ``exists``, ``no_work``, ...), ``message`` says in plain words what was wrong and,
where it helps, what to do, ``field`` names the input at fault, and ``extra`` adds facts the caller
can act on (the client versions a run takes).
"""

from __future__ import annotations

from typing import Any


class Refused(Exception):
    """A request refused because of what it asked: bad or inconsistent input."""

    def __init__(
        self, message: str, code: str = "invalid", field: str | None = None, extra: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field
        self.extra = extra or {}


class NotFound(Refused):
    """What the request names is not there."""


class Conflict(Refused):
    """What the request would make exists already, or the thing it acts on is in a state that forbids it."""


class Unavailable(Refused):
    """Nothing to give now; the same request may succeed later."""


class ClientTooOld(Refused):
    """The client is a version the run no longer takes: its volunteer has to upgrade it."""


def invalid(field: str | None, message: str, code: str = "invalid") -> Refused:
    return Refused(message, code=code, field=field)
