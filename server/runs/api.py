"""API of runs: the list, one run, and the current run with what a client needs to know."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, permissions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from server.api.errors import ApiError
from server.networks.serializers import network_ref
from server.ratings.promotion import gating_waits
from server.runs.models import RUN_FIELDS, Run
from server.training.serializers import TrainingLineSerializer


class RunSerializer(serializers.ModelSerializer):
    settings_version = serializers.SerializerMethodField()
    settings = serializers.SerializerMethodField()
    training = TrainingLineSerializer(
        source="training_lines",
        many=True,
        read_only=True,
        help_text="the trainer's state, one entry per architecture it trains",
    )

    class Meta:
        model = Run
        fields = (*RUN_FIELDS, "created_at", "settings_version", "settings", "training")

    def _current(self, run: Run):
        # DRF's context is one dict shared by the list serializer's items; its stubs say Mapping
        cache = self.context.setdefault("current_settings", {})  # type: ignore[attr-defined]
        if run.pk not in cache:
            cache[run.pk] = run.current_settings()
        return cache[run.pk]

    def get_settings_version(self, run: Run) -> int | None:
        current = self._current(run)
        return current.version if current else None

    def get_settings(self, run: Run) -> dict | None:
        current = self._current(run)
        return current.document if current else None


class RunList(generics.ListAPIView):
    serializer_class = RunSerializer
    permission_classes = [permissions.AllowAny]
    queryset = Run.objects.prefetch_related("training_lines__last_export")


class RunDetail(generics.RetrieveAPIView):
    serializer_class = RunSerializer
    permission_classes = [permissions.AllowAny]
    queryset = Run.objects.prefetch_related("training_lines__last_export")
    lookup_field = "name"


class CurrentRun(APIView):
    """The run that hands out work now: the client versions and builds it takes, the newest client
    release and the command that upgrades to it, its settings version, its self-play network, the
    most games a task may have, and whether a candidate waits for its gating games (a client then
    asks for rating tasks beside its reserve of self-play)."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        responses={
            200: inline_serializer(
                "CurrentRun",
                {
                    "run": serializers.CharField(),
                    "status": serializers.CharField(),
                    "min_client_version": serializers.CharField(),
                    "max_client_version": serializers.CharField(allow_null=True),
                    "client_builds": serializers.ListField(child=serializers.CharField(), help_text="empty: any build"),
                    "newest_client_version": serializers.CharField(
                        help_text="the newest client release: an older client that the run takes says how to upgrade"
                    ),
                    "client_upgrade": serializers.CharField(help_text="the command that upgrades the client"),
                    "settings_version": serializers.IntegerField(),
                    "network": serializers.DictField(allow_null=True),
                    "games_per_task": serializers.IntegerField(),
                    "gating": serializers.BooleanField(help_text="a candidate waits for its gating games"),
                },
            )
        }
    )
    def get(self, request):
        run = Run.objects.current()
        if run is None:
            raise ApiError("no run is active on this server", code="no_run", status_code=404)
        network = run.selfplay_network()
        current = run.current_settings()
        return Response(
            {
                "run": run.name,
                "status": run.status,
                **run.clients_taken(),
                "newest_client_version": settings.SENTE_NEWEST_CLIENT_VERSION,
                "client_upgrade": settings.SENTE_CLIENT_UPGRADE,
                "settings_version": current.version if current else None,
                "network": network_ref(network, request) if network else None,
                "games_per_task": settings.SENTE_LIMITS["games_per_task"],
                "gating": gating_waits(run),
            }
        )
