"""Reading a task request (``POST /api/v1/tasks/``) into :class:`TaskRequestValues`.

Task requests are the server's most frequent: the common, well-formed one is checked by hand
(:func:`plain_task_request`), since building DRF's serializer costs a tenth of a request's time.
Anything else goes through :class:`TaskRequest`, which also describes the request in the OpenAPI
schema and words the errors (form-encoded bodies, strings for numbers, a missing or bad field).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from rest_framework import serializers

from common.protocol import CONTROL_CHARS, INSTANCE_ID_PATTERN, MACHINE_TEXT, TASK_KINDS, parse_version
from server.runs.models import BUILD_PATTERN


@dataclass(slots=True)
class TaskRequestValues:
    """A task request's values, checked (slots, not frozen: frozen costs a microsecond per request)."""

    client_version: str
    client_build: str
    client_instance_id: str
    kinds: tuple[str, ...]
    games: int
    machine_name: str = ""
    device_model: str = ""
    evals_per_second: float | None = None


MOST_EVALS_PER_SECOND = 1e8  # beyond any card for years: a larger figure is no measurement


def _plain_text(value: str) -> None:
    if CONTROL_CHARS.search(value):
        raise serializers.ValidationError("holds a control character")


class Machine(serializers.Serializer):
    """What the client says of the machine and device it plays on (shown to the account's owner, and
    in the totals by device model): its own figures, bounded."""

    name = serializers.CharField(
        max_length=MACHINE_TEXT, allow_blank=True, default="", validators=[_plain_text], help_text="the machine's name"
    )
    device = serializers.CharField(
        max_length=MACHINE_TEXT,
        allow_blank=True,
        default="",
        validators=[_plain_text],
        help_text="the device's model, e.g. NVIDIA GeForce RTX 3060",
    )
    evals_per_second = serializers.FloatField(
        min_value=0.0,
        max_value=MOST_EVALS_PER_SECOND,
        required=False,
        allow_null=True,
        default=None,
        help_text="the worker's network evaluations per second lately",
    )


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
    machine = Machine(required=False, help_text="the machine and device the client plays on")

    def validate_client_version(self, value: str) -> str:
        try:
            parse_version(value)
        except ValueError as e:
            raise serializers.ValidationError(str(e)) from None
        return value

    def validate_games(self, value: int) -> int:
        most = settings.SENTE_LIMITS["games_per_task"]
        if value > most:
            raise serializers.ValidationError(f"at most {most} games per task, got {value}")
        return value


# \Z, not $: $ also matches before a final line break, which would let one into the ledger.
_INSTANCE_ID = re.compile(rf"^{INSTANCE_ID_PATTERN}\Z")
_BUILD = re.compile(rf"^{BUILD_PATTERN}\Z")
_FIELDS = frozenset(("client_version", "client_build", "client_instance_id", "kinds", "games", "machine"))
_MACHINE_FIELDS = frozenset(("name", "device", "evals_per_second"))


def _plain_machine(data: Any) -> tuple[str, str, float | None] | None:
    """A well-formed machine object's values, or None (then the serializer words the problem)."""
    if type(data) is not dict or not _MACHINE_FIELDS.issuperset(data):
        return None
    name, device, rate = data.get("name", ""), data.get("device", ""), data.get("evals_per_second")
    for text in (name, device):
        # The serializer trims spaces at the ends: such a text is its to read.
        if type(text) is not str or len(text) > MACHINE_TEXT or CONTROL_CHARS.search(text) or text != text.strip():
            return None
    if rate is not None and (
        type(rate) not in (int, float) or not math.isfinite(rate) or not 0 <= rate <= MOST_EVALS_PER_SECOND
    ):
        return None
    return name, device, None if rate is None else float(rate)


def plain_task_request(data: Any) -> TaskRequestValues | None:
    """The values of a common, well-formed request (a JSON object of the right types, nothing to
    coerce), or None for anything else. Never accepts what :class:`TaskRequest` refuses."""
    if type(data) is not dict or not _FIELDS.issuperset(data):
        return None
    version, instance = data.get("client_version"), data.get("client_instance_id")
    kinds, games, build = data.get("kinds", TASK_KINDS), data.get("games", 1), data.get("client_build", "")
    if (
        type(version) is not str
        or len(version) > 16
        or type(instance) is not str
        or not _INSTANCE_ID.match(instance)
        or type(build) is not str
        or (build and not _BUILD.match(build))
        or type(kinds) not in (list, tuple)
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
    machine = _plain_machine(data["machine"]) if "machine" in data else ("", "", None)
    if machine is None:
        return None
    return TaskRequestValues(version, build, instance, tuple(kinds), games, *machine)


def read_task_request(data: Any) -> TaskRequestValues:
    """The request's values; raises DRF's ValidationError (the API's 400) for a request
    :class:`TaskRequest` refuses."""
    plain = plain_task_request(data)
    if plain is not None:
        return plain
    serializer = TaskRequest(data=data)
    serializer.is_valid(raise_exception=True)
    v = serializer.validated_data
    machine = v.get("machine") or {}
    return TaskRequestValues(
        v["client_version"],
        v["client_build"],
        v["client_instance_id"],
        tuple(v["kinds"]),
        v["games"],
        machine.get("name", ""),
        machine.get("device", ""),
        machine.get("evals_per_second"),
    )
