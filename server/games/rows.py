"""A self-play game's training rows (its npz file's bytes), wherever they are: in the game's own
file until it is packed, in its shard after. A packed game is always read from its shard (one ranged
read), whether its own file is still there or not (``SENTE_SHARD_DROP_GAME_FILES`` deletes it), so
that the one way rows are read after the drop is the way they are read every day before it.

Every reader of a game's rows reads them here: the audit, the filtered export, the packer."""

from __future__ import annotations

from dataclasses import dataclass

from server.files import read_file, read_range

# The fields of a TrainingGame that say where its rows are (for ``values_list``), in Place's order.
FIELDS = ("npz", "shard__file", "shard_offset", "shard_length")


@dataclass(frozen=True)
class Place:
    """Where a game's rows are: its own file's name (content-addressed: also the rows' identity,
    kept when the file is dropped), and when it is packed, its shard's file and the range in it."""

    npz: str
    shard: str | None = None
    offset: int | None = None
    length: int | None = None

    @classmethod
    def of(cls, game) -> Place:
        """The place of a TrainingGame (its shard read with it: ``select_related("shard")``)."""
        if game.shard_id is None:
            return cls(game.npz.name)
        return cls(game.npz.name, game.shard.file.name, game.shard_offset, game.shard_length)


def read_rows(place: Place) -> bytes:
    """The game's npz bytes. FileNotFoundError when the file they are read from is not in storage;
    ValueError when its shard ends before the game's range does (a shard that is not the one recorded)."""
    if place.shard is None or place.offset is None or place.length is None:
        return read_file(place.npz)
    data = read_range(place.shard, place.offset, place.length)
    if len(data) != place.length:
        raise ValueError(
            f"shard {place.shard} ends before bytes {place.offset}-{place.offset + place.length - 1} of "
            f"the game whose rows are {place.npz}"
        )
    return data


def game_rows(game) -> bytes:
    """A TrainingGame's npz bytes (see :func:`read_rows`)."""
    return read_rows(Place.of(game))
