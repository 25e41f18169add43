"""API of the data exports: the list (``GET /api/v1/exports/?run=``), each archive's download, and
the filtered export of a run's games streamed as one archive (``GET /api/v1/games/export/``)."""

from __future__ import annotations

from django.conf import settings
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, permissions, serializers
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from server.api.addresses import client_key
from server.api.errors import ApiError, error_body
from server.api.filters import filter_listing
from server.downloads import stored_file_response
from server.files import stored_name
from server.networks.models import Network
from server.operations import admission, selection
from server.operations.archives import stream
from server.operations.models import DataExport
from server.operations.sending import WithinDeadline
from server.refusals import invalid
from server.runs.models import Run


class DataExportSerializer(serializers.ModelSerializer):
    run: serializers.SlugRelatedField[Run] = serializers.SlugRelatedField(slug_field="name", read_only=True)
    url = serializers.SerializerMethodField(help_text="where to download the archive")
    filename = serializers.CharField(read_only=True)

    class Meta:
        model = DataExport
        fields = ("run", "day", "kind", "games", "size_bytes", "sha256", "filename", "url", "created_at")
        read_only_fields = fields

    def get_url(self, export: DataExport) -> str:
        return reverse("export-file", args=[export.pk], request=self.context.get("request"))


class DataExportList(generics.ListAPIView):
    """Every day's archives of every run's games, newest first (filters: ``run``, ``kind``)."""

    serializer_class = DataExportSerializer
    permission_classes = [permissions.AllowAny]

    def get_queryset(self):
        return filter_listing(
            DataExport.objects.select_related("run"), self.request.query_params, {"kind": DataExport.Kind.values}
        )

    @extend_schema(parameters=[OpenApiParameter("run", str), OpenApiParameter("kind", str)])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class DataExportFile(APIView):
    """One archive, with its sha256 as ETag and byte ranges to resume the download."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "application/octet-stream"): bytes, (206, "application/octet-stream"): bytes})
    def get(self, request, pk: int):
        export = get_object_or_404(DataExport.objects.select_related("run"), pk=pk)
        return stored_file_response(
            request, stored_name(export.file), export.size_bytes, export.sha256, export.filename
        )


EXPORT_PARAMETERS = [
    OpenApiParameter("run", str, description="the run (default: the current run)"),
    OpenApiParameter("kind", str, description="sgf (a .tar.gz of SGF files) or npz (a tar of training rows)"),
    OpenApiParameter("games", str, description="training, rating or all (sgf only; default all)"),
    *(
        OpenApiParameter(name, str, description=str(f.extra.get("help_text") or f.field_name or name))
        for name, f in selection.GameSelection.base_filters.items()
    ),
]


class GameExport(APIView):
    """A run's games as one archive, streamed as it is written (any number of games, in the memory of
    one): ``kind=sgf`` a gzipped tar of the SGF files (``training/``, ``rating/``), ``kind=npz`` a tar of
    the self-play games' training rows, one npz per game as KataGo's tools read them. Filters: a
    network, a date range (UTC days), the scoring and ko rules, komi (exact or a range), a square
    board size, the winner and resignation; disabled games are never exported.

    An export holds a worker thread while it streams, so few run at once (429 when the client's
    address has its exports running, 503 when the server streams as many as it may, both with
    ``Retry-After``), each must be sent within ``SENTE_EXPORT_SECONDS`` or is cut off, and a selection
    of more than ``SENTE_EXPORT_ANONYMOUS_GAMES`` games is for signed-in users (403 otherwise: the
    daily archives hold every game)."""

    permission_classes = [permissions.AllowAny]
    throttle_scope = "exports"

    @extend_schema(
        parameters=EXPORT_PARAMETERS,
        responses={
            (200, "application/gzip"): bytes,
            (200, "application/x-tar"): bytes,
            403: OpenApiResponse(description="too many games for an anonymous export: sign in"),
            429: OpenApiResponse(description="the client's address has its exports under way (Retry-After)"),
            503: OpenApiResponse(description="the server streams as many exports as it may (Retry-After)"),
        },
    )
    def get(self, request):
        params = request.query_params
        name = params.get("run")
        run = Run.objects.filter(name=name).first() if name else Run.objects.current()
        if run is None:
            raise ApiError(
                f"there is no run named {name!r}" if name else "no run is active: name one with run=",
                code="not_found",
                field="run",
                status_code=404,
            )
        network = params.get("network")
        if network and not Network.objects.filter(run=run, name=network).exists():
            raise invalid("network", f"run {run.name} has no network named {network!r}")
        try:
            export = selection.archive(run, params.get("kind", "sgf"), params.get("games", "all"), params)
        except selection.SelectionError as e:
            raise invalid(e.field, e.message) from None
        limits = settings.SENTE_EXPORTS
        most = int(limits["anonymous_games"])
        if not request.user.is_authenticated and export.count(at_most=most + 1) > most:
            raise ApiError(
                f"the selection holds more than {most} games, the most an anonymous export may: sign in to "
                "export it, narrow it (a network, a few days), or download the daily archives (/api/v1/exports/)",
                code="too_many_games",
                status_code=403,
            )
        admitted = admission.admit(client_key(request))
        if isinstance(admitted, admission.Refusal):
            return Response(
                error_body("busy", admitted.message, retry_after=admitted.retry_after),
                status=admitted.status,
                headers={"Retry-After": str(admitted.retry_after)},
            )
        # The slots go back when the answer is closed: sent, cut off at its deadline, or left by its reader.
        body = WithinDeadline(
            stream(export.writer, export.members()),
            float(limits["seconds"]),
            request.META,
            f"export {export.filename}",
            admitted.release,
        )
        response = StreamingHttpResponse(body, content_type=export.content_type)
        response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
        response["Cache-Control"] = "no-store"
        return response
