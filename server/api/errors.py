"""API errors as JSON: ``{"error": {"code": ..., "message": ..., "field": ...}}``.

``code`` is a stable machine-readable word (``invalid``, ``not_found``, ``throttled``, ...),
``message`` says in plain words what was wrong and, where it helps, what to do; ``field`` names the
request field at fault (absent when the error is not about one field; ``body`` for a request body
that cannot be read at all). Validation errors about several fields list them all under ``fields``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from server import refusals


class ApiError(exceptions.APIException):
    """An error with a machine code, a message and optionally the field it is about."""

    status_code: int = status.HTTP_400_BAD_REQUEST

    def __init__(
        self,
        message: str,
        code: str = "invalid",
        field: str | None = None,
        status_code: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.message = message
        self.error_code = code
        self.field = field
        self.extra = extra or {}
        if status_code is not None:
            self.status_code = status_code


# The status each kind of the domain's refusals answers with; a kind not named here answers as the
# nearest kind it derives from.
REFUSAL_STATUS: dict[type[refusals.Refused], int] = {
    refusals.Refused: status.HTTP_400_BAD_REQUEST,
    refusals.NotFound: status.HTTP_404_NOT_FOUND,
    refusals.Conflict: status.HTTP_409_CONFLICT,
    refusals.ClientTooOld: status.HTTP_426_UPGRADE_REQUIRED,
    refusals.Unavailable: status.HTTP_503_SERVICE_UNAVAILABLE,
}


def from_refusal(refusal: refusals.Refused) -> ApiError:
    """The API's answer to a refusal raised by a service."""
    kind = next(k for k in type(refusal).__mro__ if k in REFUSAL_STATUS)
    return ApiError(
        refusal.message, code=refusal.code, field=refusal.field, status_code=REFUSAL_STATUS[kind], extra=refusal.extra
    )


def _flatten(detail: Any, prefix: str = "") -> list[tuple[str | None, str, str]]:
    """(field, message, code) for every leaf of a DRF error detail."""
    out: list[tuple[str | None, str, str]] = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = None if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            out += _flatten(value, name or prefix)
    elif isinstance(detail, list):
        for i, value in enumerate(detail):
            sub = prefix if not isinstance(value, (dict, list)) else f"{prefix}[{i}]"
            out += _flatten(value, sub)
    else:
        code = getattr(detail, "code", "invalid") or "invalid"
        out.append((prefix or None, str(detail), str(code)))
    return out


def error_body(code: str, message: str, field: str | None = None, **extra: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if field:
        error["field"] = field
    error.update(extra)
    return {"error": error}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    # The domain's refusals and Django's own exceptions become the API's first, so that their codes
    # are the refusal's or DRF's (not_found, ...).
    if isinstance(exc, refusals.Refused):
        exc = from_refusal(exc)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, RequestDataTooBig):  # Django's limit on a body read whole (JSON, forms)
        exc = ApiError(
            f"the request body is larger than the {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes this server reads",
            code="too_large",
            field="body",
            status_code=413,
        )
    elif isinstance(exc, (TooManyFieldsSent, TooManyFilesSent)):
        exc = ApiError(f"the request body has too many fields or files: {exc}", field="body")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # an unexpected error: Django's 500 handling (logged, no details to the client)
    if isinstance(exc, ApiError):
        response.data = error_body(exc.error_code, exc.message, exc.field, **exc.extra)
        return response
    if isinstance(exc, exceptions.ValidationError):
        leaves = _flatten(exc.detail)
        field, message, code = leaves[0] if leaves else (None, "invalid request", "invalid")
        text = f"{field}: {message}" if field else message
        extra = {}
        if len(leaves) > 1:
            extra["fields"] = [{"field": f, "message": m} for f, m, _ in leaves]
        response.data = error_body(
            "invalid" if code in ("invalid", "required", "null", "blank") else code, text, field, **extra
        )
        return response
    if isinstance(exc, exceptions.ParseError):  # a body no parser could read (bad multipart, charset)
        response.data = error_body("parse_error", str(exc.detail), "body")
        return response
    if isinstance(exc, exceptions.Throttled):
        wait = exc.wait  # type: ignore[attr-defined]  # set by Throttled's __init__ (not in its stubs); whole seconds
        message = "too many requests; " + (f"try again in {wait} s" if wait is not None else "try again later")
        response.data = error_body("throttled", message, retry_after=wait)
        return response
    detail = getattr(exc, "detail", str(exc))
    detail_code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    response.data = error_body(str(detail_code), str(detail))
    return response


def not_found(request, path: str = "") -> JsonResponse:
    """Any other URL under the API: a JSON 404 like every API error."""
    return JsonResponse(
        error_body("not_found", f"there is no API endpoint {request.path}; the API is described at /api/v1/docs/"),
        status=404,
    )
