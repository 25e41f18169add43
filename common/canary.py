"""The canary: fixed positions a network is evaluated on, and the agreement its outputs must keep.

A broken GPU, a bad driver or a reduced precision the network does not survive plays games that
look legal but come from a network other than the one they name (KataGo's client checks its
backend against reference outputs for the same reason). The canary is :data:`POSITIONS`: twenty
positions of several board sizes (19x19, 13x13, 9x9, 7x7 and a 13x9 rectangle), rules and komi,
some with captures, a ko ban, handicap stones or passes, built from move lists by the Go code
(:mod:`common.go`) and encoded by the features code (:mod:`common.encoding.features`).
:func:`common.nn.canary.evaluate_canary` runs a network on them on a device, in fp32 or under an
autocast precision, one batch per board size cropped as the search crops it (this module does not
load torch, so that a server checking a fingerprint never does); :func:`compare` holds the
outputs against a reference (the server's fp32 CPU outputs) with :data:`FP32_TOLERANCE` or :data:`REDUCED_TOLERANCE`.

The thresholds are those of KataGo's own backend test (``Tests::runFP16Test`` in
cpp/tests/testnnevalcanary.cpp): for each position the winrate error (half the change in
win minus loss), the score error (the lead, in points), the change of the reference's top policy
move and the policy's KL divergence from the reference; the 99th percentile and the maximum over the
positions must each stay within a bound. KataGo allows an fp32 evaluation 0.45% / 0.225 points /
0.45% / 0.0006 at the 99th percentile and 1.35% / 0.9 points / 1.35% / 0.0012 at most (batched
against unbatched fp32), and its fp16 path 1.5% / 0.75 / 1.5% / 0.002 and 4.5% / 3.0 / 4.5% / 0.004
against fp32. Ownership, which KataGo's test leaves out, is held to the winrate's bounds (the
mean over the board of half the change of each point's ownership).

:func:`fingerprint` is the sha256 of the positions' definitions and of their encoded inputs, so
a client and a server agree on exactly what was evaluated (a change of the positions or of the
features code changes it).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from common.encoding.features import NN_AREA, NN_LEN, POLICY_LEN, Encoder, new_batch
from common.go.game import Game
from common.go.geometry import PASS, loc_of
from common.go.rules import Rules

CANARY_VERSION = 1


@dataclass(frozen=True)
class CanaryPosition:
    """One canary position: a board, rules (a preset name), komi, fixed handicap stones and the
    moves played from there (SGF coordinates, ``pass`` for a pass), colours alternating."""

    name: str
    x_size: int
    y_size: int
    rules: str
    komi: float
    moves: str = ""
    handicap: int = 0

    def game(self) -> Game:
        game = Game(self.x_size, self.y_size, rules=Rules.from_text(self.rules), komi=self.komi)
        if self.handicap:
            game.place_fixed_handicap(self.handicap)
        for word in self.moves.split():
            if word == "pass":
                game.play(PASS)
            else:
                game.play(loc_of(ord(word[0]) - 97, ord(word[1]) - 97))
        return game


_OPENING_19 = "pd dp pp dd fq qf nc jd cf ch qn nq cn"
_KO = "ba ca ab db bc cc {elsewhere} bb cb"  # black takes a ko at the corner: white may not retake at once

POSITIONS: tuple[CanaryPosition, ...] = (
    CanaryPosition("19-empty", 19, 19, "tromp-taylor", 7.5),
    CanaryPosition("19-opening", 19, 19, "chinese", 7.0, _OPENING_19),
    CanaryPosition("19-opening-komi-minus-7", 19, 19, "chinese", -7.0, _OPENING_19),
    CanaryPosition("19-opening-komi-21", 19, 19, "chinese", 21.0, _OPENING_19),
    CanaryPosition("19-corner-capture", 19, 19, "tromp-taylor", 7.5, "pd aa ba dp ab pp"),
    CanaryPosition("19-ko", 19, 19, "aga", 7.5, _KO.format(elsewhere="pp")),
    CanaryPosition("19-handicap-4", 19, 19, "aga", 0.5, "qn nq pj", handicap=4),
    CanaryPosition("19-after-pass", 19, 19, "bga", 6.5, "pd dp pp pass"),
    CanaryPosition(
        "19-scattered",
        19,
        19,
        "tromp-taylor",
        7.5,
        "ld hp nb sg ed kn gm sm sr ik pf lc mn oa rk cm dr ba mm lh kg rq sc cj ra ma qa rs qp fa "
        "el ig km bb op og en ro nq dh",
    ),
    CanaryPosition(
        "13-scattered",
        13,
        13,
        "new-zealand",
        7.0,
        "bb lb jb eh hd eg df gm ge im ja bm fd dj gi mk bi kl jj al lf ka ha di hk ch ki lj fm ld",
    ),
    CanaryPosition(
        "13-stone-scoring",
        13,
        13,
        "stone-scoring",
        7.0,
        "ie jl kk hc fh dm hj lm ll db im da jj ff hl le ae ak il am ck fi cd bf",
    ),
    CanaryPosition("9-empty", 9, 9, "chinese", 7.0),
    CanaryPosition(
        "9-scattered",
        9,
        9,
        "tromp-taylor",
        7.0,
        "dd de eb if ch cc cb ia ca fg ii ie ab id hi dg af bd fh ha fc bc ba di gg ci ic fi cd ec",
    ),
    CanaryPosition(
        "9-suicide-rules",
        9,
        9,
        "new-zealand",
        7.0,
        "hi fd bf gh da ig gd ha ec hb ag hh be dg gb de ba id hd fc fb gi di eh ae eb",
    ),
    CanaryPosition("9-ko", 9, 9, "chinese", 7.0, _KO.format(elsewhere="ee")),
    CanaryPosition("9-button", 9, 9, "aga-button", 7.0, "ee cc gg"),
    CanaryPosition("7-empty", 7, 7, "tromp-taylor", 9.0),
    CanaryPosition(
        "7-scattered", 7, 7, "tromp-taylor", 9.0, "gc cb gd cg da fa ef bb be eg ea gf ec ca eb df cf db bc ga de ed"
    ),
    CanaryPosition("7-capture", 7, 7, "chinese-ogs", 9.0, "dd aa ba cc ab"),
    CanaryPosition(
        "13x9-scattered",
        13,
        9,
        "tromp-taylor",
        7.0,
        "he bg id ic eb lb mi bh aa jd gf bf jg la kd eg ch bi ga hi fe ac gi ff",
    ),
)


@lru_cache(maxsize=1)
def positions() -> tuple[CanaryPosition, ...]:
    return POSITIONS


def games() -> list[Game]:
    """The canary positions as games (new objects on each call)."""
    return [p.game() for p in positions()]


def encode(game_list: list[Game]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    spatial, glob, legal = new_batch(len(game_list))
    Encoder().encode(game_list, spatial, glob, legal)
    return spatial, glob, legal


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """sha256 (hex) of the version, the positions and their encoded inputs."""
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            {"version": CANARY_VERSION, "positions": [asdict(p) for p in positions()]},
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
    )
    for array in encode(games()):
        digest.update(np.ascontiguousarray(array, dtype="<f4").tobytes())
    return digest.hexdigest()


# --- a network's outputs -----------------------------------------------------------------------------
@dataclass
class CanaryOutputs:
    """A network's outputs on the canary positions, from the side to move (row i: position i).
    ``policy`` [n, 362] (the 19x19 grid row-major, pass last; 0 off board and for illegal moves),
    ``value`` [n, 3] (win, loss, no result), ``lead`` and ``score_mean`` [n] (points),
    ``ownership`` [n, 361] (0 off board)."""

    policy: np.ndarray
    value: np.ndarray
    lead: np.ndarray
    score_mean: np.ndarray
    ownership: np.ndarray
    fingerprint: str

    ARRAYS = ("policy", "value", "lead", "score_mean", "ownership")

    def to_npz(self) -> bytes:
        out = io.BytesIO()
        np.savez_compressed(
            out,
            version=np.array(CANARY_VERSION),
            fingerprint=np.array(self.fingerprint),
            **{k: getattr(self, k) for k in self.ARRAYS},
        )
        return out.getvalue()

    @classmethod
    def from_npz(cls, data: bytes, source: str = "canary reference") -> CanaryOutputs:
        """Outputs from :meth:`to_npz` bytes; a ValueError naming ``source`` and the problem when they
        are not that, or are of another canary."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                arrays = {k: np.asarray(z[k]) for k in cls.ARRAYS}
                version, fp = int(z["version"]), str(z["fingerprint"])
        except Exception as e:  # a damaged or foreign file: numpy raises several kinds
            raise ValueError(f"{source}: not canary outputs ({type(e).__name__}: {e})") from None
        n = len(positions())
        if version != CANARY_VERSION or fp != fingerprint():
            raise ValueError(
                f"{source}: outputs of canary version {version} (fingerprint {fp[:12]}), not of this "
                f"client's version {CANARY_VERSION} (fingerprint {fingerprint()[:12]})"
            )
        shapes = {
            "policy": (n, POLICY_LEN),
            "value": (n, 3),
            "lead": (n,),
            "score_mean": (n,),
            "ownership": (n, NN_AREA),
        }
        for k, shape in shapes.items():
            if arrays[k].shape != shape:
                raise ValueError(f"{source}: {k} has shape {list(arrays[k].shape)}, expected {list(shape)}")
        return cls(
            fingerprint=fp,
            **{
                k: arrays[k].astype(np.float64 if k in ("value", "lead", "score_mean") else np.float32)
                for k in cls.ARRAYS
            },
        )


# --- comparing ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tolerance:
    """Bounds on the errors (winrate and top policy move in probability, score in points, KL in
    nats, ownership as the winrate) at the 99th percentile and at most over the positions."""

    name: str
    winrate: tuple[float, float]
    score: tuple[float, float]
    top_policy: tuple[float, float]
    policy_kl: tuple[float, float]

    @property
    def ownership(self) -> tuple[float, float]:
        return self.winrate


FP32_TOLERANCE = Tolerance("fp32", (0.0045, 0.0135), (0.225, 0.9), (0.0045, 0.0135), (0.0006, 0.0012))
REDUCED_TOLERANCE = Tolerance("reduced precision", (0.015, 0.045), (0.75, 3.0), (0.015, 0.045), (0.002, 0.004))

MEASURES = ("winrate", "score", "top_policy", "policy_kl", "ownership")
_WORDS = {
    "winrate": "winrate",
    "score": "score (lead)",
    "top_policy": "top policy move",
    "policy_kl": "policy KL divergence",
    "ownership": "ownership",
}


@dataclass
class CanaryResult:
    """How outputs compared with a reference: per measure the 99th percentile and the maximum over the
    positions (``errors[m] = (p99, max, worst position)``), and what went beyond the tolerance."""

    tolerance: Tolerance
    errors: dict[str, tuple[float, float, str]]
    failures: list[str]

    @property
    def passed(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        """The measures in a line (what the log keeps of a passing check)."""
        return ", ".join(f"{_WORDS[m]} {_fmt(m, e[1])}" for m, e in self.errors.items())

    def describe(self) -> str:
        """What differed, by how much, and the bound it broke, in plain words."""
        return "; ".join(self.failures) if self.failures else f"within {self.tolerance.name} tolerance"


def _fmt(measure: str, value: float) -> str:
    if not math.isfinite(value):
        return "not a number"
    if measure in ("winrate", "top_policy", "ownership"):
        return f"{100 * value:.3g}%"
    if measure == "score":
        return f"{value:.3g} points"
    return f"{value:.3g}"


def errors_per_position(reference: CanaryOutputs, got: CanaryOutputs) -> dict[str, np.ndarray]:
    """Each measure's error on each position (NaN outputs give an infinite error)."""
    ref_wl = reference.value[:, 0] - reference.value[:, 1]
    got_wl = got.value[:, 0] - got.value[:, 1]
    winrate = np.abs(0.5 * (ref_wl - got_wl))
    score = np.abs(reference.lead - got.lead)
    top = np.argmax(reference.policy, axis=1)
    rows = np.arange(len(top))
    top_policy = np.abs(reference.policy[rows, top].astype(np.float64) - got.policy[rows, top])
    p = reference.policy.astype(np.float64)
    q = got.policy.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 1e-30, p * (np.log(np.where(p > 1e-30, p, 1.0)) - np.log(q)), 0.0)
    policy_kl = terms.sum(axis=1)
    on_board = np.array(
        [
            [1.0 if (i % NN_LEN) < pos.x_size and (i // NN_LEN) < pos.y_size else 0.0 for i in range(NN_AREA)]
            for pos in positions()
        ]
    )
    own = 0.5 * np.abs(reference.ownership.astype(np.float64) - got.ownership) * on_board
    ownership = own.sum(axis=1) / on_board.sum(axis=1)
    out = {"winrate": winrate, "score": score, "top_policy": top_policy, "policy_kl": policy_kl, "ownership": ownership}
    return {k: np.where(np.isfinite(v), v, np.inf) for k, v in out.items()}


def compare(reference: CanaryOutputs, got: CanaryOutputs, tolerance: Tolerance = FP32_TOLERANCE) -> CanaryResult:
    """Hold ``got`` against ``reference`` (both of this canary) with ``tolerance``."""
    for outputs, what in ((reference, "reference"), (got, "outputs")):
        if outputs.fingerprint != fingerprint():
            raise ValueError(f"canary {what} are of fingerprint {outputs.fingerprint[:12]}, not {fingerprint()[:12]}")
    names = [p.name for p in positions()]
    errors: dict[str, tuple[float, float, str]] = {}
    failures: list[str] = []
    for measure, values in errors_per_position(reference, got).items():
        ordered = np.sort(values)
        p99 = float(ordered[(len(ordered) - 1) * 99 // 100])
        worst = int(np.argmax(values))
        top = float(values[worst])
        errors[measure] = (p99, top, names[worst])
        bound99, bound_max = getattr(tolerance, measure)
        if not top <= bound_max:
            failures.append(
                f"{_WORDS[measure]} differs by up to {_fmt(measure, top)} (at position {names[worst]}; "
                f"{tolerance.name} allows {_fmt(measure, bound_max)})"
            )
        elif not p99 <= bound99:
            failures.append(
                f"{_WORDS[measure]} differs by {_fmt(measure, p99)} at the 99th percentile of the "
                f"positions ({tolerance.name} allows {_fmt(measure, bound99)})"
            )
    return CanaryResult(tolerance, errors, failures)


def tolerance_for(device: str, dtype: object | None) -> Tolerance:
    """The tolerance of an evaluation on ``device`` (a torch device or its name) under autocast to
    ``dtype`` (None: fp32): fp32's on the CPU in fp32; reduced precision's under autocast and on GPUs,
    whose fp32 convolutions may run in TF32 (10 mantissa bits, as fp16)."""
    if dtype is None and str(device).partition(":")[0] == "cpu":
        return FP32_TOLERANCE
    return REDUCED_TOLERANCE
