"""KataGo's analysis engine protocol: JSON queries on stdin, one JSON answer per line on stdout.

A query names a game (``moves``, ``initialStones``, ``rules``, ``komi``, board size) and the turns to
analyze (``analyzeTurns``; by default the last). Each analyzed turn is one search with
:class:`client.gtp.search_player.SearchPlayer` and one answer: ``moveInfos`` (the visited moves,
best first, as :func:`client.gtp.search_player.move_infos` reports them for ``kata-analyze``),
``rootInfo``, and on request ``ownership``, per-move ``ownership`` and ``policy``. Values are from
the side to move unless ``reportAnalysisWinratesAs`` (the engine's setting, or a query's
``overrideSettings``) says BLACK or WHITE, as in KataGo, whose analysis engine also defaults to the
side to move. A bad query is answered ``{"id", "field", "error"}`` and a dubious part of one
``{"id", "field", "warning"}``; nothing in the input stops the engine.

Differences from KataGo: one position is searched at a time, highest ``priority`` first, then in
the order asked (``-analysis-threads`` is accepted and has no effect); ownership is the network's
for the root position and, per move, for the position after the move, not an average over the tree;
``avoidMoves``, ``allowMoves``, ``includePVVisits`` and the ownership deviations are not supported
(a warning says so). Territory rules (``japanese``, ``korean``) are analyzed as such, through the
encore phases; the SPIGHT ko rule, which the engine does not play, is analyzed under situational
superko with a warning (KataGo does the same for rules a network does not support).
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import json
import logging
import math
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

import numpy as np

from client.analysis.query import AnalysisConfig, QueryError, TurnRequest, is_int, parse_query
from client.gtp.search_player import MoveInfo, SearchPlayer, move_infos
from client.search.engine import SearchResult
from common import __version__, boundedjson
from common.go.game import Game
from common.go.geometry import BLACK, EMPTY, PASS, WHITE, color_letter, xy_of

log = logging.getLogger(__name__)

DEFAULT_MAX_VISITS = 20000  # the largest search a query may ask for (it sizes the search tree)
REPORT_TICK = 0.02  # seconds between checks of a search's time limit and reports during it


class AnalysisEngine:
    """Answers analysis queries with the search on `evaluator` (a network, or the null evaluator).

    :meth:`run` serves a stream (a reader thread takes the queries, so that ``terminate`` reaches a
    search under way); :meth:`handle_line` and :meth:`process_pending` do the same step by step.
    """

    def __init__(
        self,
        evaluator,
        config: AnalysisConfig | None = None,
        *,
        seed: int = 0,
        max_visits: int = DEFAULT_MAX_VISITS,
        out: TextIO | None = None,
        model_name: str = "",
    ) -> None:
        self.config = config or AnalysisConfig()
        self.model_name = model_name
        self.max_visits = max(max_visits, 1)
        self.player = SearchPlayer(
            evaluator,
            min(self.config.max_visits, self.max_visits),
            settings=self.config.search_settings(),
            seed=seed,
            max_analysis_visits=self.max_visits,
        )
        self.evaluator = evaluator if hasattr(evaluator, "evaluate") else None  # ownership comes from it
        self.out = out if out is not None else sys.stdout
        self._out_lock = threading.Lock()
        self._cv = threading.Condition()
        self._queue: list[tuple[float, int, TurnRequest | Callable[[], None]]] = []
        self._seq = itertools.count()
        self._current: TurnRequest | None = None
        self._closed = False

    # --- the stream ------------------------------------------------------------------------------
    def run(self, stdin: TextIO = sys.stdin, quit_without_waiting: bool = False) -> int:
        """Answer the queries of stdin until it ends, then finish the queued ones (or, with
        quit_without_waiting, stop the search under way and drop the rest)."""
        reader = threading.Thread(target=self._read, args=(stdin, quit_without_waiting), name="queries", daemon=True)
        reader.start()
        try:
            while (item := self._next(block=True)) is not None:
                self._process(item)
        except BrokenPipeError:  # the reader of our answers has gone: so do we
            log.info("stdout closed; stopping")
        return 0

    def _read(self, stdin: TextIO, quit_without_waiting: bool) -> None:
        try:
            for line in stdin:
                self.handle_line(line)
        except BrokenPipeError:
            pass
        except Exception:  # never expected; the queued work is still finished
            log.exception("reading the queries failed")
        finally:
            with self._cv:
                self._closed = True
                if quit_without_waiting:
                    self._queue.clear()
                    if self._current is not None:
                        self._current.stop.set()
                self._cv.notify_all()

    def process_pending(self) -> None:
        """Analyze everything queued, in priority order (for callers without a stream)."""
        while (item := self._next(block=False)) is not None:
            self._process(item)

    def _enqueue(self, priority: float, item: TurnRequest | Callable[[], None]) -> None:
        with self._cv:
            heapq.heappush(self._queue, (-priority, next(self._seq), item))
            self._cv.notify_all()

    def _next(self, block: bool) -> TurnRequest | Callable[[], None] | None:
        with self._cv:
            while True:
                while self._queue:
                    item = heapq.heappop(self._queue)[2]
                    if isinstance(item, TurnRequest):
                        if item.terminated:
                            continue
                        self._current = item
                    return item
                if not block or self._closed:
                    return None
                self._cv.wait()

    def _process(self, item: TurnRequest | Callable[[], None]) -> None:
        try:
            if isinstance(item, TurnRequest):
                self._analyze(item)
            else:
                item()
        except BrokenPipeError:
            raise
        except Exception as e:  # one failed analysis is answered as an error; the engine goes on
            log.exception("analysis failed")
            if isinstance(item, TurnRequest):
                self._emit({"id": item.id, "turnNumber": item.turn, "error": f"internal error: {e}"})
        finally:
            with self._cv:
                self._current = None

    def _emit(self, obj: dict) -> None:
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
        with self._out_lock:
            self.out.write(text + "\n")
            self.out.flush()

    # --- queries ---------------------------------------------------------------------------------
    def handle_line(self, line: str) -> None:
        """Take one input line: answer an action or an error at once, queue a query's turns."""
        text = line.strip()
        if not text:
            return
        try:
            query = boundedjson.loads(text)
        except boundedjson.JSONError as e:
            self._emit(
                {"error": f"could not parse the line as a JSON query ({e.msg} at character {e.pos + 1}): {text[:200]}"}
            )
            return
        if not isinstance(query, dict):
            self._emit({"error": f"a query must be a JSON object, not {type(query).__name__}: {text[:200]}"})
            return
        qid = query.get("id")
        if not isinstance(qid, str):
            self._emit({"field": "id", "error": 'a query needs a string "id" field'})
            return
        try:
            if "action" in query:
                self._action(qid, query)
                return
            requests, warnings, priority = parse_query(
                qid, query, self.config, self.max_visits, self.player.search.history - 2
            )
        except QueryError as e:
            self._emit({"id": qid, "field": e.field, "error": e.message})
            return
        except Exception as e:  # a query we failed to foresee is still answered
            log.exception("query %s failed", qid)
            self._emit({"id": qid, "error": f"internal error: {e}"})
            return
        for fld, message in warnings:
            self._emit({"id": qid, "field": fld, "warning": message})
        for request, p in zip(requests, priority):
            self._enqueue(p, request)

    def _action(self, qid: str, query: dict) -> None:
        action = query["action"]
        if action == "query_version":
            self._emit(dict(query, version=__version__, git_hash="<omitted>"))
        elif action == "query_models":
            model = getattr(self.evaluator, "model", None)
            self._emit(
                dict(
                    query,
                    models=[
                        {
                            "name": self.model_name,
                            "internalName": self.model_name.split(".")[0],
                            "maxBatchSize": getattr(self.evaluator, "max_batch", 0),
                            "usesHumanSLProfile": False,
                            "version": getattr(getattr(model, "config", None), "version", 0),
                            "usingFP16": "false",
                        }
                    ],
                )
            )
        elif action == "clear_cache":
            self._enqueue(math.inf, lambda: self._clear_cache(query))
        elif action in ("terminate", "terminate_all"):
            target = None
            if action == "terminate":
                target = query.get("terminateId")
                if not isinstance(target, str):
                    raise QueryError("terminateId", 'a terminate action needs a string "terminateId" field')
            turns = None
            if "turnNumbers" in query:
                turns = query["turnNumbers"]
                if not isinstance(turns, list) or not all(is_int(t) for t in turns):
                    raise QueryError("turnNumbers", "if given, must be an array of integers: the turns to terminate")
                turns = set(turns)
            self._terminate(lambda r: (target is None or r.id == target) and (turns is None or r.turn in turns))
            self._emit(query)
        else:
            raise QueryError(
                "action",
                f"unknown action {action!r}: expected query_version, query_models, "
                "clear_cache, terminate or terminate_all",
            )

    def _clear_cache(self, query: dict) -> None:
        self.player.clear_cache()
        cache = getattr(self.evaluator, "cache", None)
        if cache is not None:
            cache.clear()  # only this thread evaluates
        self._emit(query)

    def _terminate(self, match: Callable[[TurnRequest], bool]) -> None:
        with self._cv:
            for _, _, item in self._queue:
                if isinstance(item, TurnRequest) and not item.terminated and match(item):
                    item.terminated = True
                    self._emit({"id": item.id, "isDuringSearch": False, "noResults": True, "turnNumber": item.turn})
            current = self._current
            if current is not None and not current.terminated and match(current):
                current.terminated = True
                current.stop.set()  # its search ends at the next step and reports what it has

    def _analyze(self, req: TurnRequest) -> None:
        game = req.game
        if game.is_over:
            self._emit(self._finished_answer(req))
            return
        self.player.settings = req.config.search_settings()
        start = time.monotonic()
        on_report: Callable[[SearchResult], None] | None = None
        if req.report_every is not None or req.first_report is not None or req.config.max_time is not None:
            due = [req.first_report if req.first_report is not None else req.report_every]

            def report(result: SearchResult) -> None:
                elapsed = time.monotonic() - start
                if req.config.max_time is not None and elapsed >= req.config.max_time:
                    req.stop.set()
                    return
                if due[0] is not None and elapsed >= due[0] and result.visits.sum() > 0:
                    self._emit(self._answer(req, result, during=True))
                    due[0] = elapsed + req.report_every if req.report_every is not None else None

            on_report = report
        result = self.player.run_search(game, req.visits, on_report, REPORT_TICK if on_report else 0.0, req.stop)
        if result.moves.size == 0 or result.root_visits == 0:
            self._emit({"id": req.id, "isDuringSearch": False, "noResults": True, "turnNumber": req.turn})
            return
        self._emit(self._answer(req, result, during=False))

    def _answer(self, req: TurnRequest, result: SearchResult, during: bool) -> dict:
        game = req.game
        pla = result.pla
        view = pla if req.config.report_as is None else req.config.report_as
        flip = view != pla  # values are the side to move's until here
        pv_len = req.config.pv_len + 1
        infos = move_infos(result, game, self.player.principal_variation, self.player.settings)
        own_after = self._ownership_after(game, infos) if req.moves_ownership else None
        sign = -1.0 if flip else 1.0

        def rate(p: float) -> float:  # a winrate from the side to move, as reported
            return 1.0 - p if flip else p

        move_list = []
        for k, m in enumerate(infos):
            info = {
                "move": m.vertex,
                "visits": m.visits,
                "edgeVisits": m.visits,
                "weight": m.weight,
                "winrate": _r(rate(m.winrate)),
                "scoreMean": _r(sign * m.lead),
                "scoreLead": _r(sign * m.lead),
                "scoreSelfplay": _r(sign * m.score),
                "scoreStdev": _r(m.score_stdev),
                "prior": _r(m.prior),
                "utility": _r(sign * m.utility),
                "lcb": _r(rate(m.lcb)),
                "utilityLcb": _r(sign * m.utility_lcb),
                "order": m.order,
                "pv": m.pv[:pv_len],
            }
            if own_after is not None:
                info["ownership"] = _grid_list(own_after[k], view)
            move_list.append(info)
        side = sign * (1.0 if pla == WHITE else -1.0)  # the root's scores are white's; win/loss and utility pla's
        winrate, raw_winrate = rate(0.5 * (1 + result.root_winloss)), rate(0.5 * (1 + result.raw_winloss))
        utility = sign * result.root_utility
        lead, score, raw_lead, raw_score = (
            side * v for v in (result.root_lead, result.root_score, result.raw_lead, result.raw_score)
        )
        this_hash, sym_hash = position_hashes(game)
        root = {
            "visits": result.root_visits,
            "winrate": _r(winrate),
            "scoreLead": _r(lead),
            "scoreSelfplay": _r(score),
            "scoreStdev": _r(result.root_score_stdev),
            "utility": _r(utility),
            "rawWinrate": _r(raw_winrate),
            "rawLead": _r(raw_lead),
            "rawScoreSelfplay": _r(raw_score),
            "rawScoreSelfplayStdev": _r(result.raw_score_stdev),
            "currentPlayer": color_letter(pla),
            "thisHash": this_hash,
            "symHash": sym_hash,
        }
        answer = {
            "id": req.id,
            "isDuringSearch": during,
            "turnNumber": req.turn,
            "moveInfos": move_list,
            "rootInfo": root,
        }
        if req.ownership:
            answer["ownership"] = _grid_list(self._white_ownership([game])[0], view)
        if req.policy:
            answer["policy"] = self._policy(game, result)
        return answer

    def _white_ownership(self, games: list[Game]) -> list[np.ndarray]:
        """The network's ownership of each position, white's (+1: white's point); zeros without one."""
        if self.evaluator is None:
            return [np.zeros((g.y_size, g.x_size)) for g in games]
        return [ev.ownership for ev in self.evaluator.evaluate(games, perspective="white")]

    def _ownership_after(self, game: Game, infos: list[MoveInfo]) -> list[np.ndarray]:
        positions = []
        for m in infos:
            position = game.copy()
            position.play(m.loc)
            positions.append(position)
        return self._white_ownership(positions) if positions else []

    @staticmethod
    def _policy(game: Game, result: SearchResult) -> list[float]:
        """The network's prior of each point, row by row from the top left, then pass; -1: illegal."""
        area = game.x_size * game.y_size
        policy = np.full(area + 1, -1.0)
        for loc, prior in zip(result.moves, result.raw_priors):
            if loc == PASS:
                policy[area] = prior
            else:
                x, y = xy_of(int(loc))
                policy[y * game.x_size + x] = prior
        return [_r(float(v)) for v in policy]

    def _finished_answer(self, req: TurnRequest) -> dict:
        """A position after the game's end (two passes): its result instead of a search."""
        game = req.game
        pla = game.to_move
        view = pla if req.config.report_as is None else req.config.report_as
        res = game.result
        white_wins = 0.5 if res is None or res.winner == EMPTY else float(res.winner == WHITE)
        white_lead = res.score if res is not None else 0.0
        winrate = white_wins if view == WHITE else 1 - white_wins
        lead = white_lead if view == WHITE else -white_lead
        this_hash, sym_hash = position_hashes(game)
        root = {
            "visits": 0,
            "winrate": _r(winrate),
            "scoreLead": _r(lead),
            "scoreSelfplay": _r(lead),
            "scoreStdev": 0.0,
            "utility": _r(2 * winrate - 1),
            "currentPlayer": color_letter(pla),
            "thisHash": this_hash,
            "symHash": sym_hash,
        }
        answer = {"id": req.id, "isDuringSearch": False, "turnNumber": req.turn, "moveInfos": [], "rootInfo": root}
        if req.ownership:
            owners = game.ownership("katago")
            white = np.where(owners == WHITE, 1.0, np.where(owners == BLACK, -1.0, 0.0))
            answer["ownership"] = _grid_list(white, view)
        if req.policy:
            area = game.x_size * game.y_size
            answer["policy"] = [-1.0] * area + [1.0]
        return answer


def position_hashes(game: Game) -> tuple[str, str]:
    """KataGo's thisHash and symHash: 32 hex digits naming the stones, the side to move and the
    simple-ko point; symHash is the same for the 8 symmetric versions of the position."""
    grid = game.colors().astype(np.int8)
    if game.ko_loc is not None:
        x, y = xy_of(game.ko_loc)
        grid[y, x] = 3

    def digest(a: np.ndarray) -> str:
        data = np.ascontiguousarray(a).tobytes() + bytes([game.to_move, a.shape[0], a.shape[1]])
        return hashlib.blake2b(data, digest_size=16).hexdigest().upper()

    versions = [np.rot90(g, k) for g in (grid, np.fliplr(grid)) for k in range(4)]
    return digest(grid), min(digest(v) for v in versions)


def _grid_list(white_values: np.ndarray, view: int) -> list[float]:
    """A board array of white's values, row-major from the top left, from view's side."""
    values = np.nan_to_num(np.asarray(white_values, dtype=np.float64).ravel())
    if view == BLACK:
        values = -values
    return [round(float(v), 6) + 0.0 for v in values]


def _r(x: float) -> float:
    """A float as KataGo prints them (8 significant digits); never NaN or infinite (no JSON)."""
    x = float(x)
    return float(f"{x:.8g}") + 0.0 if math.isfinite(x) else 0.0


def run_analysis(
    evaluator,
    config: AnalysisConfig | None = None,
    *,
    seed: int = 0,
    max_visits: int = DEFAULT_MAX_VISITS,
    quit_without_waiting: bool = False,
    model_name: str = "",
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Serve the protocol on stdin/stdout until stdin ends (the command line's entry point)."""
    engine = AnalysisEngine(
        evaluator, config, seed=seed, max_visits=max_visits, out=stdout or sys.stdout, model_name=model_name
    )
    print("Started, ready to begin handling requests", file=sys.stderr, flush=True)
    return engine.run(stdin or sys.stdin, quit_without_waiting)
