"""Middleware of the API: request body limits, checked before a body is read (a request whose declared
length is above the limit is answered 413 at once; network uploads, trainers only, have their own
larger limit), and the site's messages kept off API requests."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib.messages.middleware import MessageMiddleware
from django.http import HttpResponse

from server.api.errors import error_body

NETWORK_UPLOAD_PATH = "/api/v1/networks/"


class RequestSizeLimitMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        length = request.META.get("CONTENT_LENGTH")
        if (
            not length
            and request.path.startswith("/api/")
            and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        ):
            return _refuse(
                "a body without Content-Length (chunked) is not taken: send its length", 411, "length_required"
            )
        if length:
            try:
                size = int(length)
            except ValueError:
                return _refuse("the Content-Length header is not a number", 400, "invalid")
            limits = settings.SENTE_LIMITS
            limit = (
                limits["network_bytes"] + 1024 * 1024
                if request.path == NETWORK_UPLOAD_PATH
                else limits["request_bytes"]
            )
            if size > limit:
                return _refuse(f"the request body has {size} bytes, more than the {limit} this server takes")
        return self.get_response(request)


def _refuse(message: str, status: int = 413, code: str = "too_large") -> HttpResponse:
    return HttpResponse(json.dumps(error_body(code, message)), status=status, content_type="application/json")


class SiteMessageMiddleware(MessageMiddleware):
    """Django's messages (notes shown on the next web page) for the site and the admin only: API
    requests never show them, and setting up their storage is a share of a task request's cost."""

    def process_request(self, request):
        if not request.path.startswith("/api/"):
            super().process_request(request)

    def process_response(self, request, response):
        if hasattr(request, "_messages"):
            return super().process_response(request, response)
        return response
