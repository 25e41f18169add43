"""API of the data exports: the list (``GET /api/v1/exports/?run=``) and each archive's download."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions, serializers
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from server.api.errors import invalid
from server.downloads import stored_file_response
from server.files import stored_name
from server.operations.models import DataExport
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
        qs = DataExport.objects.select_related("run")
        params = self.request.query_params
        if params.get("run"):
            qs = qs.filter(run__name=params["run"])
        kind = params.get("kind")
        if kind:
            if kind not in DataExport.Kind.values:
                raise invalid("kind", f"{kind!r} is not one of {', '.join(DataExport.Kind.values)}")
            qs = qs.filter(kind=kind)
        return qs

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
