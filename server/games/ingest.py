"""Taking an uploaded game: every check before anything is stored, then the row and its files in one
transaction.

The checks, in order (each failure is an :class:`~server.refusals.Refused` naming the field):

1. the request: fields present, file sizes within the limits, metadata JSON of the right shape;
2. the game id: the user's own retry gets the stored game back (idempotent); another user's id is a
   conflict;
3. the task: exists, belongs to the user, is of this kind, was given to a client version and build
   its run still takes, not expired beyond its grace, not full;
4. the metadata against the task: the networks and the settings version;
5. the training rows (self-play): unpacked size, the ``common.data`` validator, the row count and
   the board size against the metadata;
6. the SGF: it parses, is one game, its board size, komi, rules, handicap, players, result and move
   count match the metadata and the task's settings;
7. what the game drew (:mod:`server.games.drawn`): the settings it says it played with are the
   task's, and its size, komi, handicap, searches and visits are ones those settings produce;
8. the replay: every move is legal in the rules engine; a game ended by passes (or by every point
   being pass-alive) has the result its rules count (area scoring, or territory scoring after the
   encore's phases, passes for ko included), any other is void at the move limit (or, in rating
   games, a resignation); and, while it replays, every training row is held against the
   game (:mod:`common.data.gamecheck`): its position, the move played, the outcome, the ownership,
   and that the rows come from the game's full searches, no more of them than those can give.

Then the row is inserted, the files are written by content hash, and the transaction commits; if
anything fails on the way, the files this request created are removed and no row stays.
"""

from __future__ import annotations

import io
import logging
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from common.data.gamecheck import RowMismatch, RowsAgainstGame
from common.data.schema import GAME_MODE_ASYM, GAME_MODE_FORK, unpack_spatial
from common.data.validate import RowValidationError, load_rows
from common.go.game import Game, IllegalMoveError
from common.go.rules import Rules, RulesError
from common.go.sgf import GameRecord, SGFError, parse_collection, record_from_tree
from common.protocol import MetadataError, RatingGameMetadata, TrainingGameMetadata, read_metadata
from common.settings import MatchSettings, RulesChoice, SelfPlaySettings
from server.accounts.models import User
from server.distribution.models import Task
from server.files import StoredFiles, content_name, sha256_of
from server.games import drawn, signals
from server.games.models import Game as GameRow
from server.games.models import RatingGame, TrainingGame, UploadRefusal, Winner
from server.games.shards import hold_rows_file
from server.games.tasks import request_packing
from server.refusals import ClientTooOld, Conflict, Refused, invalid

log = logging.getLogger(__name__)

_Field = TypeVar("_Field", str, bytes)


@dataclass
class Upload:
    """What a request brought: the raw field values (None where absent)."""

    task: str | None
    metadata: str | None
    sgf: bytes | None
    npz: bytes | None = None


# --- the request ---------------------------------------------------------------------------------
def _require(upload: Upload, names: tuple[str, ...]) -> None:
    for name in names:
        if getattr(upload, name) in (None, b"", ""):
            raise invalid(name, "is required", "required")


def _given(value: _Field | None) -> _Field:
    """An upload's field that :func:`_require` has seen, so never None (ValueError if it was not)."""
    if value is None:
        raise ValueError("an upload's field is used before it was required")
    return value


def _check_sizes(upload: Upload) -> None:
    limits = settings.SENTE_LIMITS
    for name, key in (("sgf", "sgf_bytes"), ("npz", "npz_bytes"), ("metadata", "metadata_bytes")):
        value = getattr(upload, name)
        if value is not None and len(value) > limits[key]:
            raise invalid(name, f"is {len(value)} bytes, more than the {limits[key]} this server takes", "too_large")


def _metadata(upload: Upload, cls: type):
    try:
        return read_metadata(cls, _given(upload.metadata))
    except MetadataError as e:
        raise invalid(f"metadata.{e.path}" if e.path else "metadata", e.problem) from None


# --- the task ------------------------------------------------------------------------------------
def _task(upload: Upload, user, kind: str) -> Task:
    try:
        task_id = uuid.UUID(str(upload.task))
    except ValueError:
        raise invalid("task", f"{upload.task!r} is not a task id") from None
    related = (
        ("run", "settings_version", "network")
        if kind == Task.Kind.SELFPLAY
        else ("run", "settings_version", "network_a", "network_b")
    )
    try:
        task = Task.objects.select_related(*related).get(pk=task_id)
    except Task.DoesNotExist:
        raise invalid("task", f"there is no task {task_id}", "no_task") from None
    if task.user_id != user.pk:
        raise invalid("task", f"task {task_id} was given to another user", "not_your_task")
    if task.kind != kind:
        raise invalid("task", f"task {task_id} is a {task.kind} task, not a {kind} task", "wrong_kind")
    # A game comes from the client its task was given to: one the run no longer takes (a maintainer
    # changed its versions or builds) is refused as that client's task request would be.
    refusal = task.run.client_refusal(task.client_version, task.client_build)
    if refusal is not None:
        raise ClientTooOld(
            f"this game's task was given to a client the run no longer takes: {refusal}",
            code="upgrade_required",
            field="task",
            extra=task.run.clients_taken(),
        )
    if timezone.now() > task.accepts_until():
        raise invalid(
            "task",
            f"task {task_id} expired at {task.expires_at:%Y-%m-%d %H:%M} UTC and its games are no longer taken",
            "expired",
        )
    if task.games_received >= task.games:
        raise invalid("task", f"task {task_id} has all its {task.games} games already", "task_complete")
    return task


def _check_settings_version(meta, task: Task) -> None:
    if meta.settings_version != task.settings_version.version:
        raise invalid(
            "metadata.settings_version",
            f"is {meta.settings_version}, but the task's settings are version {task.settings_version.version}",
            "mismatch",
        )


# --- the SGF -------------------------------------------------------------------------------------
def _record(sgf: bytes) -> GameRecord:
    try:
        trees = parse_collection(sgf)
        if len(trees) != 1:
            raise invalid("sgf", f"holds {len(trees)} games; upload exactly one")
        return record_from_tree(trees[0])
    except SGFError as e:
        raise invalid("sgf", str(e), "bad_sgf") from None


def _check_record(rec: GameRecord, meta, draws_board: Callable[[int, int], bool], rules_choice: RulesChoice) -> Rules:
    if (rec.x_size, rec.y_size) != (meta.board_x_size, meta.board_y_size):
        raise invalid(
            "sgf",
            f"the board is {rec.x_size}x{rec.y_size}, the metadata says {meta.board_x_size}x{meta.board_y_size}",
            "mismatch",
        )
    if not draws_board(rec.x_size, rec.y_size):
        raise invalid(
            "sgf", f"a {rec.x_size}x{rec.y_size} board is not one the task's settings draw", "not_in_settings"
        )
    if rec.komi is None or rec.komi != meta.komi:
        raise invalid("sgf", f"komi {rec.komi} differs from the metadata's {meta.komi}", "mismatch")
    if rec.rules is None:
        raise invalid("sgf", f"rules {rec.rules_text!r} are missing or unknown", "mismatch")
    try:
        declared = Rules.from_text(meta.rules)
    except RulesError as e:
        raise invalid("metadata.rules", str(e)) from None
    if rec.rules != declared:
        raise invalid(
            "sgf", f"rules {rec.rules.to_compact()} differ from the metadata's {declared.to_compact()}", "mismatch"
        )
    problem = rules_choice.allows(rec.rules)
    if problem:
        raise invalid("sgf", f"rules: {problem}", "not_in_settings")
    if (rec.result or "") != meta.result:
        raise invalid("sgf", f"result {rec.result!r} differs from the metadata's {meta.result!r}", "mismatch")
    if len(rec.moves) != meta.moves:
        raise invalid("sgf", f"has {len(rec.moves)} moves, the metadata says {meta.moves}", "mismatch")
    if rec.encore_phase:
        # KataGo's cleanup training begins games there; our self-play and matches never do.
        raise invalid(
            "sgf",
            f"begins in encore phase {rec.encore_phase}; the task's games begin in the main phase",
            "not_in_settings",
        )
    return rec.rules


def _replay(rec: GameRecord, visit=None) -> Game:
    try:
        return rec.to_game(visit=visit)
    except IllegalMoveError as e:
        raise invalid("sgf", f"{e}", "illegal_move") from None
    except (ValueError, RulesError) as e:
        raise invalid("sgf", f"cannot be replayed: {e}", "illegal_move") from None


def _check_result(
    game: Game, declared: str, pass_alive_end: bool, max_moves: int, resign_allowed: bool, game_id: str
) -> None:
    """The declared result against the replayed game (``game_id`` names it in the error)."""
    if not game.is_over and pass_alive_end:
        game.end_if_all_pass_alive()
    outcome = game.result  # None while the game goes on
    if outcome is not None:
        actual = outcome.sgf()
        if declared != actual:
            raise invalid(
                "sgf",
                f"game {game_id!r} ended ({outcome.reason}) with {actual} by {game.rules.scoring.lower()} "
                f"scoring, but declares {declared}",
                "wrong_result",
            )
        return
    if declared == "Void":
        if game.num_moves < max_moves:
            raise invalid(
                "sgf",
                f"game {game_id!r} declares no result (Void) after {game.num_moves} moves, before the move "
                f"limit of {max_moves}",
                "wrong_result",
            )
        return
    if resign_allowed and declared in ("B+R", "W+R"):
        return
    ending = "no two passes" if game.rules.scoring == "AREA" else "no two passes ended its second encore phase"
    raise invalid(
        "sgf",
        f"game {game_id!r} declares {declared!r} but did not end ({ending}, not every point pass-alive)",
        "wrong_result",
    )


def _players(rec: GameRecord, black: str, white: str) -> None:
    if rec.black_player != black or rec.white_player != white:
        raise invalid(
            "sgf",
            f"players are {rec.black_player!r} (black) and {rec.white_player!r} (white), expected "
            f"{black!r} and {white!r}",
            "mismatch",
        )


def _outcome(result: str, game: Game) -> dict:
    if result == "Void":
        return {"winner": Winner.NONE, "score": None, "resigned": False}
    if result == "0":
        return {"winner": Winner.DRAW, "score": 0.0, "resigned": False}
    winner = Winner.BLACK if result.startswith("B+") else Winner.WHITE
    if result.endswith("+R"):
        return {"winner": winner, "score": None, "resigned": True}
    return {"winner": winner, "score": game.result.score if game.result else None, "resigned": False}


# --- the training rows ---------------------------------------------------------------------------
def _rows(npz: bytes, meta: TrainingGameMetadata) -> dict:
    limit = settings.SENTE_LIMITS["npz_unpacked_bytes"]
    try:
        with zipfile.ZipFile(io.BytesIO(npz)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, EOFError) as e:
        raise invalid("npz", f"is not an npz (zip) archive: {e}", "bad_npz") from None
    if unpacked > limit:
        raise invalid("npz", f"unpacks to {unpacked} bytes, more than the {limit} this server takes", "too_large")
    try:
        arrays = load_rows(npz)
    except RowValidationError as e:
        errors = e.report.errors
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise invalid("npz", "invalid training rows: " + "; ".join(errors[:5]) + more, "bad_rows") from None
    n = int(arrays["globalTargetsNC"].shape[0])
    if n != meta.rows:
        raise invalid("metadata.rows", f"is {meta.rows}, but the npz holds {n} rows", "mismatch")
    if n:
        on_board = int(unpack_spatial(arrays["binaryInputNCHWPacked"][0])[0].sum())
        if on_board != meta.board_x_size * meta.board_y_size:
            raise invalid(
                "npz",
                f"its rows are of a board of {on_board} points, not {meta.board_x_size}x{meta.board_y_size}",
                "mismatch",
            )
    return arrays


def check_selfplay_game(
    rec: GameRecord, rules: Rules, rows: dict, game_id: str, result: str, settings: SelfPlaySettings
) -> Game:
    """A self-play game's own checks, once its record and rows were read: the replay with its rows
    held against it, the declared result, the draws against the settings. Returns the replayed game."""
    draws = drawn.selfplay_draws(rec)
    start = draws.info.start
    mode = GAME_MODE_FORK if start.fork is not None else GAME_MODE_ASYM if start.playouts is not None else None
    check = RowsAgainstGame(
        rows,
        rec.x_size,
        rec.y_size,
        rec.moves,
        game_id,
        rec.handicap,
        settings.draw_equivalent_wins,
        mode,
        start.pda_black,
    )
    game = _replay(rec, check.visit)
    try:
        sides = draws.side_positions(rec)
    except IllegalMoveError as e:
        raise invalid("sgf", f"{e}", "illegal_move") from None
    _check_result(
        game, result, settings.end_when_all_pass_alive, settings.max_moves, resign_allowed=False, game_id=game_id
    )
    drawn.check_selfplay(draws, rec, settings, result)
    try:
        # the replay's komi: the record's, which the replay checked (or the rules' when it names none)
        check.finish(game, result, game.komi, rules, draws.info.move_limit_reached)
        _rows_of_searches(check, draws, settings)
        check.check_side_positions(sides, draws.info.move_limit_reached)
    except RowMismatch as e:
        raise invalid("npz", f"the training rows are not this game's: {e}", "rows_not_of_game") from None
    return game


def _rows_of_searches(check: RowsAgainstGame, draws: drawn.SelfPlayDraws, settings: SelfPlaySettings) -> None:
    """Rows come from full searches only, with their visits, and no more of them than those searches'
    weights give."""
    full = draws.full_turns()
    first = check.first_recorded_turn
    if first is not None and first != draws.info.start.opening_moves:
        raise RowMismatch(
            f"their first recorded turn is {first}, but the game's opening had {draws.info.start.opening_moves} moves"
        )
    for turn in check.turns:
        if turn.turn not in full:
            raise RowMismatch(
                f"row {turn.first_row} is of turn {turn.turn}, which was not a full search (the "
                "record's note for that move)"
            )
        if turn.visits != full[turn.turn]:
            raise RowMismatch(
                f"row {turn.first_row} says its search had {turn.visits} visits; the record says {full[turn.turn]}"
            )
    check.check_count(drawn.full_weight(draws, settings), len(full))


# --- storing -------------------------------------------------------------------------------------
def _existing(model: type[GameRow], game_id: str, user):
    try:
        game = model._default_manager.get(client_game_id=game_id)
    except model.DoesNotExist:
        return None
    if game.user_id != user.pk:
        raise Conflict(
            f"game id {game_id!r} was used by another contributor; make a new one",
            code="game_id_taken",
            field="metadata.game_id",
        )
    return game


def _referenced(name: str) -> bool:
    return (
        TrainingGame.objects.filter(sgf=name).exists()
        or TrainingGame.objects.filter(npz=name).exists()
        or RatingGame.objects.filter(sgf=name).exists()
    )


def _store(model: type[GameRow], task: Task, user, fields: dict, files: dict[str, tuple[bytes, str]]):
    """Insert the row, write its files (named by their content), count it on its task, tell the apps
    above (``signals.game_stored``, in the same transaction), commit; or leave nothing."""
    stored = StoredFiles()
    try:
        with transaction.atomic():
            game = model(task=task, user=user, run=task.run, settings_version=task.settings_version, **fields)
            digests = {name: sha256_of(data) for name, (data, _) in files.items()}
            for name, (_, suffix) in files.items():
                setattr(game, f"{name}_sha256", digests[name])
                getattr(game, name).name = content_name(name, digests[name], suffix)
            # The row first: a concurrent upload of the same game id fails here, before writing anything.
            game.save(force_insert=True)
            for name, (data, suffix) in files.items():
                expected = getattr(game, name).name
                if name == "npz":  # kept from a packer that drops packed games' files until this commits
                    hold_rows_file(expected)
                saved = stored.put(name, data, suffix, sha256=digests[name])
                if saved != expected and not stored.storage.exists(expected):
                    raise RuntimeError(f"storage kept the {name} file under another name than {expected}")
            counted = Task.objects.filter(pk=task.pk, games_received__lt=F("games")).update(
                games_received=F("games_received") + 1
            )
            if not counted:
                raise invalid("task", f"task {task.pk} has all its {task.games} games already", "task_complete")
            signals.game_stored.send(sender=model, game=game)
            if model is TrainingGame:
                request_packing(task.run)
        return game, True
    except IntegrityError:
        stored.discard(_referenced)
        existing = _existing(model, fields["client_game_id"], user)
        if existing is None:
            raise
        return existing, False
    except BaseException:
        stored.discard(_referenced)
        raise


def _begin(upload: Upload, user, metadata_cls: type, model: type[GameRow], kind: str):
    """The checks every upload starts with: the request, the metadata, a retry (the stored game is
    returned, the task not checked), then the task. Returns (metadata, stored game or None, task)."""
    _require(upload, ("task", "metadata", "sgf") + (("npz",) if model is TrainingGame else ()))
    _check_sizes(upload)
    meta = _metadata(upload, metadata_cls)
    existing = _existing(model, meta.game_id, user)
    if existing is not None:
        return meta, existing, None
    return meta, None, _task(upload, user, kind)


def take_training_game(user, upload: Upload) -> tuple[TrainingGame, bool]:
    """Check and store a self-play game; returns it and whether it is new (False: the user's retry)."""
    meta, existing, task = _begin(upload, user, TrainingGameMetadata, TrainingGame, Task.Kind.SELFPLAY)
    if existing is not None:
        return existing, False
    if meta.network != task.network.name:
        raise invalid(
            "metadata.network", f"is {meta.network!r}, but the task's network is {task.network.name!r}", "mismatch"
        )
    _check_settings_version(meta, task)
    selfplay: SelfPlaySettings = task.settings_version.settings.selfplay
    npz, sgf = _given(upload.npz), _given(upload.sgf)
    arrays = _rows(npz, meta)
    rec = _record(sgf)
    rules = _check_record(rec, meta, selfplay.draws_board, selfplay.rules)
    if rec.handicap != meta.handicap:
        raise invalid("sgf", f"handicap {rec.handicap} differs from the metadata's {meta.handicap}", "mismatch")
    _players(rec, task.network.name, task.network.name)
    game = check_selfplay_game(rec, rules, arrays, meta.game_id, meta.result, selfplay)
    fields = dict(
        client_game_id=meta.game_id,
        network=task.network,
        board_x_size=rec.x_size,
        board_y_size=rec.y_size,
        komi=rec.komi,
        rules=rules.to_dict(),
        handicap=rec.handicap,
        result=meta.result,
        moves=len(rec.moves),
        rows=meta.rows,
        **_outcome(meta.result, game),
    )
    return _store(
        TrainingGame,
        task,
        user,
        fields,
        {"sgf": (sgf, ".sgf"), "npz": (npz, ".npz")},
    )


def take_rating_game(user, upload: Upload) -> tuple[RatingGame, bool]:
    """Check and store a rating game; returns it and whether it is new."""
    meta, existing, task = _begin(upload, user, RatingGameMetadata, RatingGame, Task.Kind.RATING)
    if existing is not None:
        return existing, False
    names = {task.network_a.name, task.network_b.name}
    if meta.black_network == meta.white_network or {meta.black_network, meta.white_network} != names:
        raise invalid(
            "metadata.black_network",
            f"the game is {meta.black_network!r} (black) against "
            f"{meta.white_network!r} (white); the task's networks are "
            f"{sorted(names)}",
            "mismatch",
        )
    _check_settings_version(meta, task)
    rating: MatchSettings = task.settings_version.settings.rating
    sgf = _given(upload.sgf)
    rec = _record(sgf)
    rules = _check_record(rec, meta, rating.draws_board, rating.rules)
    drawn.check_rating(rec, rating, meta.result)
    if rec.komi != rating.komi:
        raise invalid("sgf", f"komi {rec.komi} is not the rating games' {rating.komi}", "not_in_settings")
    if rec.handicap:
        raise invalid("sgf", "rating games have no handicap", "not_in_settings")
    _players(rec, meta.black_network, meta.white_network)
    game = _replay(rec)
    _check_result(
        game, meta.result, rating.end_when_all_pass_alive, rating.max_moves, resign_allowed=True, game_id=meta.game_id
    )
    by_name = {task.network_a.name: task.network_a, task.network_b.name: task.network_b}
    fields = dict(
        client_game_id=meta.game_id,
        black_network=by_name[meta.black_network],
        white_network=by_name[meta.white_network],
        board_x_size=rec.x_size,
        board_y_size=rec.y_size,
        komi=rec.komi,
        rules=rules.to_dict(),
        handicap=0,
        result=meta.result,
        moves=len(rec.moves),
        **_outcome(meta.result, game),
    )
    return _store(RatingGame, task, user, fields, {"sgf": (sgf, ".sgf")})


def _storable(text: str, most: int) -> str:
    """Text as a column holds it: an error may quote what was uploaded, NUL (which PostgreSQL
    refuses) included, so NUL is written as the escape \\x00; cut to ``most`` characters."""
    return text.replace("\x00", "\\x00")[:most]


def record_refusal(kind: str, user: User | None, error: Refused) -> UploadRefusal:
    """Keep a refused upload's error (``kind``: training or rating; ``user`` None when not signed in)."""
    return UploadRefusal.objects.create(
        kind=kind,
        user=user,
        code=_storable(error.code, 32),
        field=_storable(error.field or "", 32),
        message=_storable(error.message, 300),
    )


def warm_up() -> None:
    """Run the checks' compiled kernels once (replaying, scoring, holding rows against the game) so that
    they are loaded before the first upload; a server calls this before its workers start, which then
    share them and compile none (``server.operations.warmup``)."""
    import numpy as np

    from common.data.schema import GT_TURN_INDEX, empty_rows
    from common.go.geometry import loc_of
    from common.go.rules import Rules

    game = Game(9, 9, Rules(ko="POSITIONAL", suicide=False), 7.0)
    for x, y in ((2, 2), (6, 6), (2, 6), (6, 2)):
        game.play(loc_of(x, y))
    game.end_if_all_pass_alive()
    game.score()
    record = parse_collection(b"(;GM[1]FF[4]SZ[9]KM[7];B[cc];W[gg])")
    record_from_tree(record[0]).to_game()
    # A self-play game's rows: each recorded turn's position encoded as a row holds it while the
    # record replays, then the end's ownership both ways (the rows' values need not match here).
    played = record_from_tree(parse_collection(b"(;GM[1]FF[4]SZ[7]KM[7];B[cc];W[ee];B[ce];W[ec];B[];W[])")[0])
    rows = empty_rows(len(played.moves))
    rows["globalTargetsNC"][:, GT_TURN_INDEX] = np.arange(len(played.moves))
    check = RowsAgainstGame(rows, played.x_size, played.y_size, played.moves, "warm-up", 0, 0.0)
    ended = played.to_game(visit=check.visit)
    ended.ownership("scoring")
    ended.ownership("katago")
