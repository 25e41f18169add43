"""The self-play games in play, saved to disk so that they outlive the client.

Every ``checkpoint_seconds`` (and never in the middle of a search: after a move is played) each
self-play game in play is written to ``DATA/inplay/<worker>/<game id>.ckpt``: the game as it stands
(its moves, the searches' records from which its training rows are made, its random generator),
without the search's tree, with the task it belongs to; a finished game's file is deleted. When the
client ends without finishing its games (killed, a crash, the machine rebooted, Ctrl-C twice), the
files stay; at the next start the supervisor gathers them into ``DATA/inplay/resume/`` (and so
before it starts a crashed worker again, for that worker's files), and the workers claim them one
by one, each by moving the file into its own folder (a move only one of them can make), and play
the games on with the network they were played with, in a session of their own. A volunteer who
reboots loses the moves since the last checkpoint, not whole games.

A game played on searches its next move with a new tree, and the engine's other random draws
(shared by the games of one search engine) are not the ones the first run would have made: its
later moves, and so its rows, may differ from those the game would have had without the break;
its rows up to the checkpoint are the same. A file another build of the client wrote, or that
cannot be read, is set aside in ``DATA/inplay/unreadable/`` with a line in the log; one whose
network is no longer cached is dropped the same way.

The files are Python pickles: the client reads only those it wrote itself, in its own data folder.
"""

from __future__ import annotations

import logging
import os
import pickle
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.build import BUILD
from common.files import atomic_write

log = logging.getLogger(__name__)

SUFFIX = ".ckpt"
DEFAULT_CHECKPOINT_SECONDS = 30.0
RESUME = "resume"
UNREADABLE = "unreadable"


@dataclass
class Saved:
    """A game read back: the task it belongs to and the game (with its random generator)."""

    task: Any  # client.contribute.tasks.Task
    game: Any  # client.selfplay.game.SelfPlayGame
    path: Path


class InPlay:
    """One worker's saved games (see the module docstring)."""

    def __init__(self, data_dir: str | os.PathLike[str], worker: int) -> None:
        self.root = Path(data_dir) / "inplay"
        self.directory = self.root / str(worker)
        self.directory.mkdir(parents=True, exist_ok=True)

    def path_of(self, game_id: str) -> Path:
        return self.directory / f"{game_id}{SUFFIX}"

    def save(self, task, game) -> None:
        payload = {"build": BUILD, "task": task, "game": game}
        atomic_write(self.path_of(game.game_id), zlib.compress(pickle.dumps(payload, protocol=5), 6))

    def drop(self, game_id: str) -> None:
        self.path_of(game_id).unlink(missing_ok=True)

    def kept_by_task(self) -> dict[str, int]:
        """The games of this worker saved and not finished, by task id (a game's id begins with its
        task's, as the worker names them)."""
        counts: dict[str, int] = {}
        for path in self.directory.glob(f"*{SUFFIX}"):
            task_id = str(uuid.UUID(path.stem.split("-")[0]))
            counts[task_id] = counts.get(task_id, 0) + 1
        return counts

    def claim_all(self) -> list[Saved]:
        """Every game waiting to be played on (see :func:`gather`) this worker could take: moved into
        its own folder, read back. Unreadable ones, and those of another build, are set aside."""
        waiting = self.root / RESUME
        claimed = []
        for path in sorted(waiting.glob(f"*{SUFFIX}")):
            mine = self.directory / path.name
            try:
                os.replace(path, mine)  # only one worker moves it
            except OSError:  # another worker took it (or, on Windows, holds it open)
                continue
            saved = self._read(mine)
            if saved is not None:
                claimed.append(saved)
        return claimed

    def set_aside(self, path: Path, why: str) -> None:
        log.warning("the saved game %s cannot be played on: %s; it is set aside", path.stem, why)
        aside = self.root / UNREADABLE
        aside.mkdir(parents=True, exist_ok=True)
        os.replace(path, aside / path.name)

    def _read(self, path: Path) -> Saved | None:
        try:
            payload = pickle.loads(zlib.decompress(path.read_bytes()))
        except Exception as e:  # anything a damaged or foreign file raises
            self.set_aside(path, f"it cannot be read ({type(e).__name__}: {e})")
            return None
        if not isinstance(payload, dict) or payload.get("build") != BUILD:
            build = payload.get("build") if isinstance(payload, dict) else None
            self.set_aside(path, f"it was saved by another build of the client ({build}, this one is {BUILD})")
            return None
        return Saved(payload["task"], payload["game"], path)


def gather(data_dir: str | os.PathLike[str], worker: int | None = None) -> int:
    """Move the saved games of one worker (None: of all) into the folder the workers claim them
    from: at the client's start, and before a crashed worker starts again. The number moved."""
    root = Path(data_dir) / "inplay"
    waiting = root / RESUME
    waiting.mkdir(parents=True, exist_ok=True)
    folders = [root / str(worker)] if worker is not None else [p for p in root.iterdir() if p.name.isdigit()]
    moved = 0
    for folder in folders:
        for path in folder.glob(f"*{SUFFIX}"):
            os.replace(path, waiting / path.name)
            moved += 1
    return moved
