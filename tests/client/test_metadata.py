"""Upload metadata read off the games themselves, in the form the server parses."""

from __future__ import annotations

import pytest

from client.contribute.metadata import rating_metadata, training_metadata
from common.protocol import MetadataError, RatingGameMetadata, TrainingGameMetadata, parse_metadata
from tests.server import helpers


def test_training_and_rating_metadata_agree_with_the_games(tmp_path):
    game = helpers.selfplay_games(tmp_path / "sp", helpers.RANDOM_NET, count=1)[0]
    meta = training_metadata(game.sgf, game.npz, helpers.RANDOM_NET, "g-1", 3)
    assert parse_metadata(TrainingGameMetadata, meta.to_dict()) == meta
    assert (meta.board_x_size, meta.settings_version, meta.rows) == (7, 3, game.metadata["rows"]) and meta.rows > 0
    assert meta.moves == game.metadata["moves"] and meta.result == game.metadata["result"]
    assert training_metadata(game.sgf, None, helpers.RANDOM_NET, "g-1", 3).rows == 0
    match = helpers.rating_games(tmp_path / "rt", "net-a", "net-b", count=1)[0]
    rmeta = rating_metadata(match.sgf, "r-1", 2)
    assert parse_metadata(RatingGameMetadata, rmeta.to_dict()) == rmeta
    assert (rmeta.black_network, rmeta.white_network) == ("net-a", "net-b")


def test_a_bad_name_is_refused_naming_the_field(tmp_path):
    game = helpers.selfplay_games(tmp_path / "sp", helpers.RANDOM_NET, count=1)[0]
    with pytest.raises(MetadataError, match="network"):
        training_metadata(game.sgf, game.npz, "no such/network", "g-1", 1)
    with pytest.raises(MetadataError, match="game_id"):
        training_metadata(game.sgf, game.npz, helpers.RANDOM_NET, "../g", 1)
