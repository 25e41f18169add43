"""Which self-play games a run holds out of training: one in ``holdout_one_in``, chosen by their rows'
content (the npz file's sha256), so that the same rows uploaded twice are held out both times or
neither. The training window leaves them out (``server.training.window``) and the packer puts them
into shards of their own (``server.games.shards``)."""

from __future__ import annotations

import hashlib


def is_held_out(npz_sha256: str, holdout_one_in: int) -> bool:
    """Whether the game whose rows have this sha256 is held out (one in ``holdout_one_in``; 0: none)."""
    if holdout_one_in == 0:
        return False
    slot = int.from_bytes(hashlib.sha256(f"holdout/{npz_sha256}".encode()).digest()[:8], "big")
    return slot % holdout_one_in == 0
