"""What client and server say to each other beyond the settings: the API version, client versions,
client-made game ids, and the metadata that comes with every uploaded game.

The metadata documents are validated like the settings (:mod:`common.settings`): unknown keys and
wrong types are refused with the dotted name of the key. The server then checks them against the
task, the SGF and the training rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

from common import __version__, boundedjson
from common.go.rules import Rules, RulesError
from common.settings.framework import Settings, SettingsError, in_range, need, show

API_PREFIX = "/api/v1/"
CLIENT_VERSION = __version__
GAME_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
NETWORK_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
INSTANCE_ID_PATTERN = r"[A-Za-z0-9._:-]{1,64}"  # a client installation
TASK_KINDS = ("selfplay", "rating")
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")  # U+0000 to U+001F and U+007F: in no text of the protocol
MACHINE_TEXT = 64  # the longest machine name or device model a task request carries

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def parse_version(text: str) -> tuple[int, int, int]:
    """'1.2' or '1.2.3' as a comparable tuple; ValueError otherwise."""
    m = _VERSION.match(text.strip()) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"version {text!r}: expected MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 0.1.0")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


class MetadataError(SettingsError):
    """Game metadata that cannot be taken; ``path`` names the key, ``problem`` what is wrong."""


def _rules(path: str, text: str) -> Rules:
    try:
        return Rules.from_text(text)
    except RulesError as e:
        raise SettingsError(path, str(e)) from None


_Metadata = TypeVar("_Metadata", bound=Settings)


def parse_metadata(cls: type[_Metadata], data: object) -> _Metadata:
    """A :class:`TrainingGameMetadata` or :class:`RatingGameMetadata` from decoded JSON, or
    :class:`MetadataError` naming the key at fault."""
    try:
        return cls.from_dict(data)
    except SettingsError as e:
        raise MetadataError(e.path, e.problem, what="metadata") from None


def read_metadata(cls: type[_Metadata], text: str | bytes) -> _Metadata:
    """:func:`parse_metadata` of JSON text, read within :mod:`common.boundedjson`'s bounds; text
    that is not JSON (or beyond the bounds) is a :class:`MetadataError` with an empty path."""
    try:
        data = boundedjson.loads(text)
    except boundedjson.JSONError as e:
        raise MetadataError("", f"is not JSON: {e}", what="metadata") from None
    return parse_metadata(cls, data)


def _game_id(path: str, value: str) -> None:
    need(
        re.fullmatch(GAME_ID_PATTERN, value) is not None,
        path,
        f"{show(value)} is not a game id (1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit)",
    )


def _network(path: str, value: str) -> None:
    need(re.fullmatch(NETWORK_NAME_PATTERN, value) is not None, path, f"{show(value)} is not a network name")


def _check_game(meta) -> None:
    """What every game's metadata has: its id, board, komi, rules, result, moves and settings version."""
    _game_id("game_id", meta.game_id)
    in_range("board_x_size", meta.board_x_size, 2, 19)
    in_range("board_y_size", meta.board_y_size, 2, 19)
    in_range("komi", meta.komi, -150.0, 150.0)
    need(float(meta.komi * 2).is_integer(), "komi", f"must be a multiple of 0.5, got {meta.komi}")
    _rules("rules", meta.rules)
    need(len(meta.result) <= 16, "result", "is longer than 16 characters")
    in_range("moves", meta.moves, 0, 100_000)
    in_range("settings_version", meta.settings_version, 1)


@dataclass(frozen=True)
class TrainingGameMetadata(Settings):
    """A self-play game: ``result`` as in SGF (``B+3.5``, ``W+R``, ``0`` for a draw, ``Void`` for
    no result), ``moves`` the moves played (passes included), ``rows`` the training rows in its npz."""

    game_id: str
    network: str
    board_x_size: int
    board_y_size: int
    komi: float
    rules: str
    result: str
    moves: int
    rows: int
    settings_version: int
    handicap: int = 0

    def validate(self, path: str = "") -> None:
        _network("network", self.network)
        _check_game(self)
        in_range("rows", self.rows, 0, 100_000)
        in_range("handicap", self.handicap, 0, 9)


@dataclass(frozen=True)
class RatingGameMetadata(Settings):
    """A rating (match) game between two networks; fields as :class:`TrainingGameMetadata`."""

    game_id: str
    black_network: str
    white_network: str
    board_x_size: int
    board_y_size: int
    komi: float
    rules: str
    result: str
    moves: int
    settings_version: int

    def validate(self, path: str = "") -> None:
        _network("black_network", self.black_network)
        _network("white_network", self.white_network)
        _check_game(self)
