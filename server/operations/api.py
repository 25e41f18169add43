"""API of the data exports: the list (``GET /api/v1/exports/?run=``), each archive's files and their
downloads, an npz archive's disabled games, and the filtered export of a run's games streamed as one
archive (``GET /api/v1/games/export/``)."""

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
from server.operations import admission, exports, selection, selectors
from server.operations.archives import stream
from server.operations.models import DataExport
from server.operations.sending import WithinDeadline
from server.refusals import invalid
from server.runs.models import Run


class DataExportSerializer(serializers.ModelSerializer):
    run: serializers.SlugRelatedField[Run] = serializers.SlugRelatedField(slug_field="name", read_only=True)
    games = serializers.IntegerField(
        read_only=True, help_text="the games in its files (npz: the disabled ones too, see disabled_games)"
    )
    sha256 = serializers.SerializerMethodField(help_text="the zip's (npz: null, each file has its own)")
    filename = serializers.SerializerMethodField(help_text="the zip's download name (npz: null)")
    url = serializers.SerializerMethodField(help_text="where to download the zip (npz: null, see files_url)")
    files = serializers.SerializerMethodField(help_text="its files: the zip, or the day's shards (npz)")
    files_url = serializers.SerializerMethodField(help_text="the list of its files, each with its download URL")
    disabled_games = serializers.SerializerMethodField(
        help_text="npz: the games of its files disabled now, to be skipped (null for sgf, which leaves them out)"
    )
    disabled_url = serializers.SerializerMethodField(
        help_text="npz: their member names, <game id>.npz, one a line (tar -x --exclude-from)"
    )

    class Meta:
        model = DataExport
        fields = (
            "run",
            "day",
            "kind",
            "games",
            "disabled_games",
            "size_bytes",
            "sha256",
            "filename",
            "url",
            "files",
            "files_url",
            "disabled_url",
            "created_at",
        )
        read_only_fields = fields

    def _is_npz(self, export: DataExport) -> bool:
        return export.kind == DataExport.Kind.NPZ

    def _address(self, name: str, export: DataExport) -> str:
        return reverse(name, args=[export.pk], request=self.context.get("request"))

    def get_sha256(self, export: DataExport) -> str | None:
        return None if self._is_npz(export) else export.sha256

    def get_filename(self, export: DataExport) -> str | None:
        return None if self._is_npz(export) else export.filename

    def get_url(self, export: DataExport) -> str | None:
        return None if self._is_npz(export) else self._address("export-file", export)

    def get_files(self, export: DataExport) -> int:
        return export.shard_count if self._is_npz(export) else 1  # type: ignore[attr-defined]

    def get_files_url(self, export: DataExport) -> str:
        return self._address("export-files", export)

    def get_disabled_games(self, export: DataExport) -> int | None:
        return export.disabled_games if self._is_npz(export) else None  # type: ignore[attr-defined]

    def get_disabled_url(self, export: DataExport) -> str | None:
        return self._address("export-disabled", export) if self._is_npz(export) else None


class DataExportList(generics.ListAPIView):
    """Every day's archives of every run's games, newest first (filters: ``run``, ``kind``). An SGF
    archive is one zip; an npz archive is the day's shards, listed at its ``files_url``."""

    serializer_class = DataExportSerializer
    permission_classes = [permissions.AllowAny]

    def get_queryset(self):
        return filter_listing(selectors.archives(), self.request.query_params, {"kind": DataExport.Kind.values})

    @extend_schema(parameters=[OpenApiParameter("run", str), OpenApiParameter("kind", str)])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ArchiveFileSerializer(serializers.Serializer):
    filename = serializers.CharField()
    url = serializers.CharField(help_text="where to download it (byte ranges resume a broken download)")
    size_bytes = serializers.IntegerField()
    sha256 = serializers.CharField()
    games = serializers.IntegerField()
    rows = serializers.IntegerField(allow_null=True, help_text="its training rows (sgf: null)")
    held_out = serializers.BooleanField(help_text="its games are held out of training (the validation set)")


class ArchiveFileList(generics.GenericAPIView):
    """An archive's files, each with its download URL, size, sha256, games and rows: an SGF
    archive's zip, or an npz archive's shards (tars of ``<game id>.npz``, held-out ones included:
    the archive is every game of the day), in the order they were packed."""

    permission_classes = [permissions.AllowAny]
    serializer_class = ArchiveFileSerializer

    def get(self, request, pk: int):
        export = get_object_or_404(DataExport.objects.select_related("run"), pk=pk)
        if export.kind != DataExport.Kind.NPZ:
            url = reverse("export-file", args=[export.pk], request=request)
            sgf = dict(filename=export.filename, url=url, size_bytes=export.size_bytes, sha256=export.sha256)
            page = self.paginate_queryset([dict(sgf, games=export.games, rows=None, held_out=False)])
            return self.get_paginated_response(ArchiveFileSerializer(page, many=True).data)
        shards = self.paginate_queryset(selectors.archive_shards(export))
        files = [
            dict(
                filename=export.shard_filename(shard),
                url=reverse("export-shard-file", args=[export.pk, shard.pk], request=request),
                size_bytes=shard.size_bytes,
                sha256=shard.sha256,
                games=shard.games,
                rows=shard.rows,
                held_out=shard.held_out,
            )
            for shard in shards or []
        ]
        return self.get_paginated_response(ArchiveFileSerializer(files, many=True).data)


class DataExportFile(APIView):
    """An SGF archive's zip, with its sha256 as ETag and byte ranges to resume the download."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "application/octet-stream"): bytes, (206, "application/octet-stream"): bytes})
    def get(self, request, pk: int):
        export = get_object_or_404(DataExport.objects.select_related("run"), pk=pk)
        if export.kind == DataExport.Kind.NPZ:
            raise ApiError(
                "an npz archive is the day's shards: download each from its files list",
                code="not_found",
                status_code=404,
                extra={"files_url": reverse("export-files", args=[export.pk], request=request)},
            )
        return stored_file_response(
            request, stored_name(export.file), export.size_bytes, export.sha256, export.filename
        )


class ArchiveShardFile(APIView):
    """One shard of an npz archive, with its sha256 as ETag and byte ranges to resume the download."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "application/octet-stream"): bytes, (206, "application/octet-stream"): bytes})
    def get(self, request, pk: int, shard: int):
        export = get_object_or_404(DataExport.objects.select_related("run"), pk=pk)
        found = get_object_or_404(export.shards.all(), pk=shard)
        return stored_file_response(
            request, stored_name(found.file), found.size_bytes, found.sha256, export.shard_filename(found)
        )


class ArchiveDisabled(APIView):
    """The games of an npz archive that are disabled now, to be skipped: their member names,
    ``<game id>.npz``, one a line (``tar -x --exclude-from``). It may grow: a game can be disabled
    after its archive is made, and its rows stay in the shards' bytes."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={(200, "text/plain"): str})
    def get(self, request, pk: int):
        export = get_object_or_404(DataExport, pk=pk, kind=DataExport.Kind.NPZ)
        lines = (f"{name}\n".encode() for name in exports.disabled_members(export))
        response = StreamingHttpResponse(lines, content_type="text/plain; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        return response


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
