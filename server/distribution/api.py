"""``POST /api/v1/tasks/``: hand a client its next piece of work, and record it.
``PATCH /api/v1/tasks/``: a client gives up games of its tasks it will not play, so that the
ledger of open tasks owes only games that will come."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from common.protocol import TASK_KINDS
from server.accounts.users import request_user
from server.distribution.models import Task
from server.distribution.services import give_up_games, issue_task
from server.distribution.task_request import TaskRequest, read_task_request
from server.networks.serializers import network_ref
from server.notices.announcements import for_clients


def task_body(task: Task, request: Request) -> dict:
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
    refs = [network_ref(network, request) for network in task.networks()]
    if task.kind == Task.Kind.SELFPLAY:
        body["network"] = refs[0]
    else:
        body["networks"] = refs
    body["announcements"] = for_clients()  # the client's status panel shows them
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
    def post(self, request: Request) -> Response:
        task = issue_task(request_user(request), read_task_request(request.data))
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
    def patch(self, request: Request) -> Response:
        """Give up games of your tasks: each task's ``games`` becomes the games you will deliver in
        all (never fewer than it has received, never more than it had)."""
        data = ReleaseRequest(data=request.data)
        data.is_valid(raise_exception=True)
        done = give_up_games(
            request_user(request), ((item["id"], item["games"]) for item in data.validated_data["tasks"])
        )
        return Response({"given_up": done.given_up, "tasks": done.tasks, "unknown": done.unknown})
