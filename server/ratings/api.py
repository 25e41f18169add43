"""``GET /api/v1/ratings/?run=NAME``: every network of a run with its Elo and error bars, games, state
and data rows seen (the Elo graph's data). Without ``run``: the current run."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from server.api.errors import ApiError
from server.networks.models import Network
from server.ratings.models import RatingFit
from server.runs.models import Run


class RatingsView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[OpenApiParameter("run", str, description="the run (default: the current run)")],
        responses={
            200: inline_serializer(
                "Ratings",
                {
                    "run": serializers.CharField(),
                    "fitted_at": serializers.DateTimeField(allow_null=True),
                    "games": serializers.IntegerField(help_text="rating games in the last fit"),
                    "networks": inline_serializer(
                        "NetworkRating",
                        {
                            "name": serializers.CharField(),
                            "parent": serializers.CharField(allow_null=True),
                            "state": serializers.CharField(),
                            "elo": serializers.FloatField(allow_null=True),
                            "elo_se": serializers.FloatField(allow_null=True),
                            "games": serializers.IntegerField(),
                            "rows_seen": serializers.IntegerField(),
                            "train_step": serializers.IntegerField(),
                            "created_at": serializers.DateTimeField(),
                        },
                        many=True,
                    ),
                },
            )
        },
    )
    def get(self, request):
        name = request.query_params.get("run")
        run = Run.objects.filter(name=name).first() if name else Run.objects.current()
        if run is None:
            raise ApiError(f"there is no run {name!r}" if name else "no run is active", code="no_run", status_code=404)
        fit = RatingFit.objects.filter(run=run).first()
        networks = Network.objects.filter(run=run).select_related("parent", "rating").order_by("created_at", "id")
        rows = []
        for n in networks:
            rating = getattr(n, "rating", None)
            rows.append(
                {
                    "name": n.name,
                    "parent": n.parent.name if n.parent else None,
                    "state": n.state,
                    "elo": rating.elo if rating else None,
                    "elo_se": rating.elo_se if rating else None,
                    "games": rating.games if rating else 0,
                    "rows_seen": n.rows_seen,
                    "train_step": n.train_step,
                    "created_at": n.created_at,
                }
            )
        return Response(
            {
                "run": run.name,
                "fitted_at": fit.fitted_at if fit else None,
                "games": fit.games if fit else 0,
                "networks": rows,
            }
        )
