"""API of networks: public listing, detail and file download; upload for trainers."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from server.api.errors import ApiError, invalid
from server.api.users import request_user
from server.downloads import stored_file_response
from server.files import stored_name
from server.networks.models import Network, NetworkCanary
from server.networks.serializers import NetworkDetailSerializer, NetworkSerializer, NetworkUploadSerializer
from server.networks.services import NetworkUpload, take_upload


class CanUploadNetworks(permissions.BasePermission):
    message = "only staff and trainer accounts (permission networks.upload_network) may upload networks"

    def has_permission(self, request, view):
        if request.method in permissions.SAFE_METHODS:
            return True
        user = request.user
        return bool(user and user.is_authenticated and (user.is_staff or user.has_perm("networks.upload_network")))


class NetworkList(generics.ListCreateAPIView):
    """Every network, newest first (filters: ``run``, ``state``, ``released``); trainers upload new
    ones here as multipart forms."""

    serializer_class = NetworkSerializer
    permission_classes = [CanUploadNetworks]
    parser_classes = [MultiPartParser]

    def get_queryset(self):
        qs = Network.objects.public()
        params = self.request.query_params
        if params.get("run"):
            qs = qs.filter(run__name=params["run"])
        state = params.get("state")
        if state:
            if state not in Network.State.values:
                raise invalid("state", f"{state!r} is not one of {', '.join(Network.State.values)}")
            qs = qs.filter(state=state)
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
        network = _network_with_file(name)
        return stored_file_response(
            request, stored_name(network.file), network.size_bytes, network.sha256, f"{network.name}.safetensors"
        )


class NetworkKataGoDownload(APIView):
    """The network in KataGo's model format (version 8, ``.bin.gz``), for KataGo and the programs
    that run it; made on its first download, then served like the network's file (``ETag``, ranges)."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "application/octet-stream"): bytes, (206, "application/octet-stream"): bytes})
    def get(self, request, name: str):
        from server.networks.katago import katago_file

        network = _network_with_file(name)
        try:
            exported = katago_file(network)
        except ValueError as e:
            raise ApiError(str(e), code="not_exportable", status_code=409) from None
        return stored_file_response(
            request, stored_name(exported.file), exported.size_bytes, exported.sha256, f"{network.name}.bin.gz"
        )


class NetworkCanaryFile(APIView):
    """The network's reference outputs on the canary positions (npz; see ``common.nn.canary``)."""

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
