"""``POST /api/v1/tasks/``: hand a client its next piece of work, and record it.
``PATCH /api/v1/tasks/``: a client gives up games of its tasks it will not play, so that the
ledger of open tasks owes only games that will come."""

from __future__ import annotations

import random
import re
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from common.protocol import INSTANCE_ID_PATTERN, TASK_KINDS, parse_version
from server.api.errors import ApiError
from server.distribution.models import Task
from server.networks.serializers import network_ref
from server.ratings.scheduling import choose_pair
from server.runs.models import BUILD_PATTERN, current_state


class TaskRequest(serializers.Serializer):
    client_version = serializers.CharField(max_length=16)
    client_build = serializers.RegexField(
        rf"^{BUILD_PATTERN}\Z",
        required=False,
        default="",
        allow_blank=True,
        help_text="the hash of the client's search and data code (16 hex digits)",
    )
    client_instance_id = serializers.RegexField(
        rf"^{INSTANCE_ID_PATTERN}\Z", help_text="a stable id of the client installation"
    )
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=TASK_KINDS),
        min_length=1,
        default=list(TASK_KINDS),
        help_text="the kinds of task the client takes",
    )
    games = serializers.IntegerField(min_value=1, default=1, help_text="how many games the client wants to play")

    def validate_client_version(self, value):
        try:
            parse_version(value)
        except ValueError as e:
            raise serializers.ValidationError(str(e)) from None
        return value

    def validate_games(self, value):
        most = settings.SENTE_LIMITS["games_per_task"]
        if value > most:
            raise serializers.ValidationError(f"at most {most} games per task, got {value}")
        return value


# \Z, not $: $ also matches before a final line break, which would let one into the ledger.
_INSTANCE_ID = re.compile(rf"^{INSTANCE_ID_PATTERN}\Z")
_BUILD = re.compile(rf"^{BUILD_PATTERN}\Z")
_FIELDS = frozenset(("client_version", "client_build", "client_instance_id", "kinds", "games"))


def plain_request(data) -> dict | None:
    """The common, well-formed task request, checked without building a serializer (task requests
    are the server's most frequent; DRF's serializer costs a tenth of their time). Returns the
    values as TaskRequest would, or None for anything else, which then goes through TaskRequest
    and gets its error messages. Never accepts what TaskRequest refuses."""
    if type(data) is not dict or not _FIELDS.issuperset(data):
        return None
    version, instance = data.get("client_version"), data.get("client_instance_id")
    kinds, games, build = data.get("kinds", list(TASK_KINDS)), data.get("games", 1), data.get("client_build", "")
    if (
        type(version) is not str
        or len(version) > 16
        or type(instance) is not str
        or not _INSTANCE_ID.match(instance)
        or type(build) is not str
        or (build and not _BUILD.match(build))
        or type(kinds) is not list
        or not kinds
        or any(k not in TASK_KINDS for k in kinds)
        or type(games) is not int
        or not 1 <= games <= settings.SENTE_LIMITS["games_per_task"]
    ):
        return None
    try:
        parse_version(version)
    except ValueError:
        return None
    return {
        "client_version": version,
        "client_build": build,
        "client_instance_id": instance,
        "kinds": kinds,
        "games": games,
    }


def task_body(task: Task, request) -> dict:
    body = {
        "id": str(task.id),
        "kind": task.kind,
        "run": task.run.name,
        "settings": task.settings_version.document,
        "settings_version": task.settings_version.version,
        "games": task.games,
        "created_at": task.created_at,
        "expires_at": task.expires_at,
        "upload_url": reverse(
            "game-training-upload" if task.kind == Task.Kind.SELFPLAY else "game-rating-upload", request=request
        ),
    }
    if task.kind == Task.Kind.SELFPLAY:
        body["network"] = network_ref(task.network, request)
    else:
        body["networks"] = [network_ref(task.network_a, request), network_ref(task.network_b, request)]
    return body


class ReleasedTask(serializers.Serializer):
    id = serializers.UUIDField()
    games = serializers.IntegerField(min_value=0, help_text="the games of the task the client will deliver, in all")


class ReleaseRequest(serializers.Serializer):
    tasks = serializers.ListField(child=ReleasedTask(), min_length=1, max_length=1000)


class TaskView(APIView):
    permission_classes = [IsAuthenticated]

    @property
    def throttle_scope(self) -> str | None:
        """Task requests count against the task throttle; giving games up (PATCH) does not: it only
        ever lightens the server's books."""
        return "tasks" if self.request.method == "POST" else None

    @extend_schema(
        request=TaskRequest,
        responses={
            201: inline_serializer(
                "Task",
                {
                    "id": serializers.UUIDField(),
                    "kind": serializers.ChoiceField(TASK_KINDS),
                    "run": serializers.CharField(),
                    "network": serializers.DictField(required=False),
                    "networks": serializers.ListField(required=False),
                    "settings": serializers.DictField(),
                    "settings_version": serializers.IntegerField(),
                    "games": serializers.IntegerField(),
                    "expires_at": serializers.DateTimeField(),
                    "upload_url": serializers.URLField(),
                },
            )
        },
    )
    def post(self, request):
        v = plain_request(request.data)
        if v is None:
            data = TaskRequest(data=request.data)
            data.is_valid(raise_exception=True)
            v = data.validated_data
        state = current_state()
        if state is None:
            raise ApiError("no run is active on this server; try again later", code="no_run", status_code=503)
        run = state.run
        refusal = run.client_refusal(v["client_version"], v["client_build"])
        if refusal is not None:
            raise ApiError(
                refusal,
                code="upgrade_required",
                status_code=status.HTTP_426_UPGRADE_REQUIRED,
                extra=run.clients_taken(),
            )
        kinds = set(v["kinds"])
        version = state.settings_version
        pair = None
        if Task.Kind.RATING in kinds and (
            Task.Kind.SELFPLAY not in kinds or random.random() < version.settings.gating.rating_game_prob
        ):
            pair = choose_pair(run)
        if pair is None and Task.Kind.SELFPLAY not in kinds:
            raise ApiError(
                "no rating games are to be played now; ask again later or take self-play tasks",
                code="no_work",
                status_code=503,
            )
        now = timezone.now()
        common = dict(
            run=run,
            user=request.user,
            settings_version=version,
            games=v["games"],
            client_version=v["client_version"],
            client_build=v["client_build"],
            client_instance_id=v["client_instance_id"],
            created_at=now,
            expires_at=now + timedelta(seconds=settings.SENTE_TASK_SECONDS),
        )
        if pair is not None:
            # A match is spread over many clients (KataGo's rating tasks are a few games each): one
            # client's fault or speed then weighs little in a gating decision.
            common["games"] = min(v["games"], version.settings.gating.rating_task_games)
            task = Task.objects.issue(kind=Task.Kind.RATING, network_a=pair[0], network_b=pair[1], **common)
        else:
            network = state.network
            if network is None:
                raise ApiError(
                    f"run {run.name} has no network to play yet; try again later", code="no_network", status_code=503
                )
            task = Task.objects.issue(kind=Task.Kind.SELFPLAY, network=network, **common)
        return Response(task_body(task, request), status=status.HTTP_201_CREATED)

    @extend_schema(
        request=ReleaseRequest,
        responses={
            200: inline_serializer(
                "Released",
                {
                    "given_up": serializers.IntegerField(help_text="the games the ledger no longer waits for"),
                    "tasks": serializers.ListField(
                        child=serializers.DictField(), help_text="id, games, games_received"
                    ),
                    "unknown": serializers.ListField(
                        child=serializers.UUIDField(), help_text="ids that are none of yours"
                    ),
                },
            )
        },
    )
    def patch(self, request):
        """Give up games of your tasks: each task's ``games`` becomes the games you will deliver in
        all (never fewer than it has received, never more than it had)."""
        data = ReleaseRequest(data=request.data)
        data.is_valid(raise_exception=True)
        wanted: dict = {}
        for item in data.validated_data["tasks"]:
            wanted[item["id"]] = min(item["games"], wanted.get(item["id"], item["games"]))
        given_up = 0
        answer = []
        with transaction.atomic():
            for task in (
                Task.objects.select_for_update()
                .filter(user=request.user, pk__in=list(wanted))
                .order_by("pk")
                .only("id", "games", "games_received")
            ):
                games = max(wanted[task.pk], task.games_received)
                if games < task.games:
                    Task.objects.filter(pk=task.pk).update(games=Greatest(F("games_received"), games))
                    given_up += task.games - games
                    task.games = games
                answer.append({"id": str(task.pk), "games": task.games, "games_received": task.games_received})
        found = {item["id"] for item in answer}
        return Response(
            {"given_up": given_up, "tasks": answer, "unknown": [str(t) for t in wanted if str(t) not in found]}
        )
