"""``POST /api/v1/games/training/`` and ``POST /api/v1/games/rating/``: game uploads (multipart); and
``GET /api/v1/me/``: what the signed-in account has contributed."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from server.accounts.models import User
from server.accounts.users import request_user
from server.games.ingest import Upload, record_refusal, take_rating_game, take_training_game
from server.games.models import Game as GameRow
from server.games.models import RatingGame, TrainingGame
from server.games.selectors import contributed
from server.refusals import Refused


def _file(request, name: str) -> bytes | None:
    f = request.FILES.get(name)
    return None if f is None else f.read()


def _upload(request) -> Upload:
    metadata = request.data.get("metadata")
    if metadata is None and "metadata" in request.FILES:
        metadata = request.FILES["metadata"].read().decode("utf-8", errors="replace")
    return Upload(
        task=request.data.get("task"), metadata=metadata, sgf=_file(request, "sgf"), npz=_file(request, "npz")
    )


StoredGame = TypeVar("StoredGame", bound=GameRow)


def _take(
    take: Callable[[User, Upload], tuple[StoredGame, bool]], kind: str, request: Request
) -> tuple[StoredGame, bool]:
    """The game and whether it is new; a refusal is recorded (apart from the failed upload's
    transaction) before its error goes back to the client."""
    try:
        return take(request_user(request), _upload(request))
    except Refused as e:
        record_refusal(kind, request.user if request.user.is_authenticated else None, e)
        raise


def training_game_body(game: TrainingGame) -> dict:
    return {
        "id": game.pk,
        "kind": "training",
        "game_id": game.client_game_id,
        "task": str(game.task_id),
        "network": game.network.name,
        "rows": game.rows,
        "result": game.result,
        "moves": game.moves,
        "created_at": game.created_at,
    }


def rating_game_body(game: RatingGame) -> dict:
    return {
        "id": game.pk,
        "kind": "rating",
        "game_id": game.client_game_id,
        "task": str(game.task_id),
        "black_network": game.black_network.name,
        "white_network": game.white_network.name,
        "result": game.result,
        "moves": game.moves,
        "created_at": game.created_at,
    }


UPLOAD_FIELDS: dict[str, serializers.Field] = {
    "task": serializers.UUIDField(help_text="the task the game was played for"),
    "metadata": serializers.CharField(help_text="JSON: common.protocol's game metadata"),
    "sgf": serializers.FileField(),
}


class TrainingGameUpload(APIView):
    """Upload a self-play game: its SGF and its training rows (npz). A retry with the same game id
    answers 200 with the game stored the first time."""

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser]
    throttle_scope = "uploads"

    @extend_schema(
        request={
            "multipart/form-data": inline_serializer(
                "TrainingGameUpload", {**UPLOAD_FIELDS, "npz": serializers.FileField()}
            )
        },
        responses={201: dict, 200: dict},
    )
    def post(self, request):
        game, created = _take(take_training_game, "training", request)
        return Response(training_game_body(game), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class RatingGameUpload(APIView):
    """Upload a rating game (its SGF)."""

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser]
    throttle_scope = "uploads"

    @extend_schema(
        request={"multipart/form-data": inline_serializer("RatingGameUpload", UPLOAD_FIELDS)},
        responses={201: dict, 200: dict},
    )
    def post(self, request):
        game, created = _take(take_rating_game, "rating", request)
        return Response(rating_game_body(game), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MeView(APIView):
    """The signed-in user's totals."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={
            200: inline_serializer(
                "Me",
                {
                    "username": serializers.CharField(),
                    "training_games": serializers.IntegerField(),
                    "rating_games": serializers.IntegerField(),
                    "training_rows": serializers.IntegerField(),
                    "tasks": serializers.IntegerField(),
                    "last_game_at": serializers.DateTimeField(allow_null=True),
                    "is_trainer": serializers.BooleanField(),
                },
            )
        }
    )
    def get(self, request: Request) -> Response:
        user = request_user(request)
        return Response(
            {
                "username": user.username,
                **contributed(user),
                "is_trainer": user.has_perm("networks.upload_network"),
            }
        )
