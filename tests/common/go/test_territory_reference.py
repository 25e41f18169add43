"""A slow, independent reference of KataGo's rules (``tests/common/go/reference_rules.py``)
against real KataGo's games."""

import json

from common.go.geometry import BLACK, WHITE
from tests.common.go.reference_rules import Geometry, RefGame, RefRules

COLUMNS = "ABCDEFGHJKLMNOPQRST"


def _golden(shared, name: str) -> list[dict]:
    path = shared / "golden" / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _point(geo: Geometry, vertex: str) -> int | None:
    if vertex == "pass":
        return None
    return geo.point(COLUMNS.index(vertex[0]), geo.y_size - int(vertex[1:]))


def _vertex(geo: Geometry, p: int) -> str:
    x, y = geo.xy(p)
    return f"{COLUMNS[x]}{geo.y_size - y}"


def _ref_rules(r: dict) -> RefRules:
    return RefRules(
        ko=r["ko"],
        scoring=r["scoring"],
        tax=r["tax"],
        suicide=r["suicide"],
        button=r["hasButton"],
        white_handicap_bonus=r["whiteHandicapBonus"],
    )


def _replay_golden(r: dict) -> RefGame:
    """Replay a golden game in the reference, checking KataGo's legal sets (and phases) each turn."""
    size = r["size"]
    geo = Geometry(size, size)
    black = [_point(geo, v) for v in r.get("setup_black", [])]
    ref = RefGame(size, size, _ref_rules(r["rules"]), r.get("komi", 7.5), black=[p for p in black if p is not None])
    phases = r.get("encore_phase_before_each_move")
    for i, (color, vertex) in enumerate(r["moves"]):
        c = BLACK if color == "B" else WHITE
        where = (r["rules"], size, i, color, vertex)
        if phases is not None:
            assert ref.phase == phases[i], where
        assert sorted(_vertex(geo, p) for p in ref.legal_moves(c)) == sorted(r["legal_before_each_move"][i]), where
        ref.play(_point(geo, vertex), c)
    return ref


def test_the_reference_replays_katagos_territory_games(shared):
    for r in _golden(shared, "katago_territory_games_sample.jsonl"):
        ref = _replay_golden(r)
        assert ref.pass_for_ko_turns == r.get("pass_for_ko_turns", []), r["sgf_rules"]
        if r["end_reason"] == "all_pass_alive_adjudicated":
            # KataGo's self-play stopped here; its GTP play ends through the encore, same result.
            adjudicated = ref.all_pass_alive_result()
            assert not ref.over and adjudicated is not None
            assert adjudicated.score == r["white_minus_black"], r["sgf_rules"]
        for color, _ in r["score_extra_passes"]:
            ref.play(None, BLACK if color == "B" else WHITE)
        assert ref.over and ref.result is not None, r["sgf_rules"]
        assert ref.result.score == r["white_minus_black"], r["sgf_rules"]


def test_the_reference_replays_katagos_area_games(shared):
    for r in _golden(shared, "katago_rules_sample.jsonl"):
        _replay_golden(r)
