"""API of networks: public listing, detail and file download; upload for trainers."""

from __future__ import annotations

import math
from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, permissions, status
from rest_framework.authentication import BaseAuthentication
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from server.accounts.authentication import ClientTokenAuthentication
from server.accounts.users import request_user
from server.api.errors import ApiError, error_body
from server.api.filters import filter_listing
from server.downloads import stored_file_response
from server.files import stored_name
from server.networks import selectors
from server.networks.models import Network, NetworkCanary, NetworkKataGoFile
from server.networks.serializers import (
    NetworkDetailSerializer,
    NetworkSerializer,
    NetworkUploadSerializer,
    PickedNetworkSerializer,
)
from server.networks.services import NetworkUpload, take_upload


class CanUploadNetworks(permissions.BasePermission):
    message = (
        "only accounts with the permission networks.upload_network (the trainers group) may upload networks; "
        "being staff is not enough"
    )

    def has_permission(self, request, view):
        if request.method in permissions.SAFE_METHODS:
            return True
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm("networks.upload_network"))


class NetworkList(generics.ListCreateAPIView):
    """Every network, newest first (filters: ``run``, ``state``, ``released``); trainers upload new
    ones here as multipart forms."""

    serializer_class = NetworkSerializer
    permission_classes = [CanUploadNetworks]
    parser_classes = [MultiPartParser]

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        self.upload = request.method not in permissions.SAFE_METHODS
        return super().initialize_request(request, *args, **kwargs)

    def get_authenticators(self) -> list[BaseAuthentication]:
        """An upload authenticates by client token alone. A web session's CSRF check would read the
        form's token from the body, parsing all of a multipart body of up to a gigabyte (nginx passes
        it on as it comes) before the permission is looked at; with the token in a header, whoever may
        not upload is refused before any of the body is read. The listing is as every view's."""
        if getattr(self, "upload", True):  # (set by initialize_request, which asks for them)
            return [ClientTokenAuthentication()]
        return super().get_authenticators()

    def get_queryset(self):
        params = self.request.query_params
        qs = filter_listing(Network.objects.public(), params, {"state": Network.State.values})
        released = params.get("released", "").lower()
        if released in ("1", "true", "yes"):
            qs = qs.filter(released=True)
        elif released in ("0", "false", "no"):
            qs = qs.filter(released=False)
        return qs

    @extend_schema(
        parameters=[OpenApiParameter("run", str), OpenApiParameter("state", str), OpenApiParameter("released", bool)]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(request=NetworkUploadSerializer, responses={201: NetworkSerializer})
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = NetworkUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        network = take_upload(request_user(request), NetworkUpload(**data.validated_data))
        body = NetworkSerializer(network, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class NetworkDetail(generics.RetrieveAPIView):
    """One network, with its rating, its gating record and the events that changed its standing."""

    serializer_class = NetworkDetailSerializer
    permission_classes = [permissions.AllowAny]
    lookup_field = "name"
    queryset = Network.objects.public().prefetch_related("events")


class PickedNetwork(APIView):
    """``strongest``: the run's strongest network, the highest lower bound of a 95% interval of Elo
    among accepted networks with the run's ``gating.strongest_min_games`` rating games (as KataGo's
    server picks its strongest confidently-rated network); ``released``: the newest released network.
    ``?run=NAME`` picks in that run (default: the current run for ``strongest``, every run for
    ``released``)."""

    permission_classes = [permissions.AllowAny]
    alias = "strongest"

    @extend_schema(parameters=[OpenApiParameter("run", str)], responses=PickedNetworkSerializer)
    def get(self, request):
        network, run = selectors.picked(self.alias, request.query_params.get("run"))
        context = {"request": request, "alias": self.alias, "min_games": None}
        if self.alias == "strongest" and run is not None:
            context["min_games"] = selectors.strongest_min_games(run)
        return Response(PickedNetworkSerializer(network, context=context).data)


def _network_with_file(name: str) -> Network:
    """The network called ``name``; 404 if there is none or it is the random network (no file)."""
    network = get_object_or_404(Network, name=name)
    if network.is_random or not network.file:
        raise ApiError(
            f"network {name!r} has no file: it is the random network (a uniform policy)",
            code="no_file",
            status_code=404,
        )
    return network


class NetworkFile(APIView):
    """The network's file, with ``ETag`` (its sha256) and single byte ranges (``Range``) to resume a
    download. In production the front server or object storage may serve it instead."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "application/octet-stream"): bytes, (206, "application/octet-stream"): bytes})
    def get(self, request, name: str):
        return network_file_response(request, _network_with_file(name))


def network_file_response(request, network: Network, stable_link: bool = False):
    """The network's file as a download; a stable link's answer may change, so it is revalidated."""
    return stored_file_response(
        request,
        stored_name(network.file),
        network.size_bytes,
        network.sha256,
        f"{network.name}.safetensors",
        changing=stable_link,
    )


class NetworkKataGoDownload(APIView):
    """The network in KataGo's model format (version 8, ``.bin.gz``), for KataGo and the programs
    that run it, served like the network's file (``ETag``, ranges). The background worker makes it
    (``server.networks.katago``); until it is ready the answer is 503 with ``Retry-After``, and a
    network KataGo's format cannot hold is 409 with the reason."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        responses={
            (200, "application/octet-stream"): bytes,
            (206, "application/octet-stream"): bytes,
            409: OpenApiResponse(description="KataGo's format cannot hold the network (the reason)"),
            503: OpenApiResponse(description="the file is not made yet: try again after Retry-After"),
        }
    )
    def get(self, request, name: str):
        return katago_file_response(request, _network_with_file(name))


def katago_file_response(request, network: Network, stable_link: bool = False):
    """The network in KataGo's format as a download once the background worker made it; until then
    503 with ``Retry-After`` (its making queued, if it was not), and 409 with the reason when it
    cannot be made. The request itself never reads the network's file."""
    from server.networks.katago import RETRY_AFTER_SECONDS
    from server.networks.tasks import request_katago_file

    row = request_katago_file(network)
    if row.state == NetworkKataGoFile.State.REFUSED:
        raise ApiError(row.refusal, code="not_exportable", status_code=409)
    if row.state != NetworkKataGoFile.State.READY:
        waiting = row.state == NetworkKataGoFile.State.QUEUED and row.retry_at is not None
        left = (row.retry_at - timezone.now()).total_seconds() if waiting and row.retry_at else 0
        if left > 0:  # its last build failed, and it waits before the next (server.networks.katago)
            wait = math.ceil(left)
            message = (
                f"the KataGo file of network {network.name} could not be made ({row.failures} failed "
                f"attempt{'s' if row.failures != 1 else ''} in a row); it is tried again after "
                f"{row.retry_at:%Y-%m-%d %H:%M} UTC: try again in {wait} s"
            )
        else:
            wait = RETRY_AFTER_SECONDS
            message = (
                f"the KataGo file of network {network.name} is being made in the background ({row.state}); "
                f"try again in {wait} s"
            )
        return Response(
            error_body("not_ready", message, retry_after=wait),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(wait), "Cache-Control": "no-store"},
        )
    return stored_file_response(
        request,
        stored_name(row.file),
        row.size_bytes,
        row.sha256,
        f"{network.name}.bin.gz",
        changing=stable_link,
    )


class PickedNetworkFile(APIView):
    """The file of the network a stable link names (``/networks/strongest/file``, ``.../katago``;
    see :class:`PickedNetwork`), under the network's own file name, with its ``ETag`` (so that a
    script downloads it again only when the pick changed: ``If-None-Match``) and ``X-Sente-Network``
    naming it."""

    permission_classes = [permissions.AllowAny]
    alias = "strongest"
    katago = False

    @extend_schema(exclude=True)  # a link of the site (docs/website.md), not of the API
    def get(self, request):
        network, _ = selectors.picked(self.alias, request.query_params.get("run"))
        if self.katago:
            response = katago_file_response(request, network, stable_link=True)
        else:
            response = network_file_response(request, network, stable_link=True)
        response["X-Sente-Network"] = network.name
        return response


class NetworkCanaryFile(APIView):
    """The network's reference outputs on the canary positions (npz; see ``common.canary``)."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request, name: str):
        network = get_object_or_404(Network, name=name)
        ref = NetworkCanary.objects.filter(network=network).first()
        if ref is None:
            raise ApiError(f"network {name!r} has no canary reference yet", code="no_canary", status_code=404)
        return stored_file_response(
            request, stored_name(ref.file), ref.size_bytes, ref.sha256, f"{network.name}-canary.npz"
        )
