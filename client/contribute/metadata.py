"""What a client says about a finished game when it uploads it: common.protocol's metadata, read off
the game's own SGF (and training rows), so the two cannot disagree. A value the server would refuse
raises :class:`common.protocol.MetadataError` naming the key, as the server's check does."""

from __future__ import annotations

import io

import numpy as np

from common.go.sgf import read_sgf
from common.protocol import RatingGameMetadata, TrainingGameMetadata, parse_metadata


def training_metadata(
    sgf: bytes, npz: bytes | None, network: str, game_id: str, settings_version: int
) -> TrainingGameMetadata:
    """A self-play game's metadata; `npz` holds its training rows (None: the game has none)."""
    rec = read_sgf(sgf)
    rows = 0
    if npz is not None:
        with np.load(io.BytesIO(npz)) as z:
            rows = int(z["globalTargetsNC"].shape[0])
    return parse_metadata(
        TrainingGameMetadata,
        {
            "game_id": game_id,
            "network": network,
            "board_x_size": rec.x_size,
            "board_y_size": rec.y_size,
            "komi": rec.komi,
            "rules": rec.rules.to_json() if rec.rules is not None else None,
            "result": rec.result or "",
            "moves": len(rec.moves),
            "rows": rows,
            "settings_version": settings_version,
            "handicap": rec.handicap,
        },
    )


def rating_metadata(sgf: bytes, game_id: str, settings_version: int) -> RatingGameMetadata:
    """A rating game's metadata; the networks are the SGF's player names."""
    rec = read_sgf(sgf)
    return parse_metadata(
        RatingGameMetadata,
        {
            "game_id": game_id,
            "black_network": rec.black_player,
            "white_network": rec.white_player,
            "board_x_size": rec.x_size,
            "board_y_size": rec.y_size,
            "komi": rec.komi,
            "rules": rec.rules.to_json() if rec.rules is not None else None,
            "result": rec.result or "",
            "moves": len(rec.moves),
            "settings_version": settings_version,
        },
    )
