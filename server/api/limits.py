"""Request body limits, checked before a body is read: a request whose declared length is above the
limit is answered 413 at once. Network uploads (trainers only) have their own, larger limit."""

from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpResponse

from server.api.errors import error_body

NETWORK_UPLOAD_PATH = "/api/v1/networks/"


class RequestSizeLimitMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        length = request.META.get("CONTENT_LENGTH")
        if length:
            try:
                size = int(length)
            except ValueError:
                return _too_large("the Content-Length header is not a number", 400, "invalid")
            limits = settings.SENTE_LIMITS
            limit = limits["network_bytes"] + 1024 * 1024 if request.path == NETWORK_UPLOAD_PATH \
                else limits["request_bytes"]
            if size > limit:
                return _too_large(f"the request body has {size} bytes, more than the {limit} this server takes")
        return self.get_response(request)


def _too_large(message: str, status: int = 413, code: str = "too_large") -> HttpResponse:
    return HttpResponse(json.dumps(error_body(code, message)), status=status, content_type="application/json")
