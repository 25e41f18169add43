"""The demo run of a one-machine platform: settings that show learning within minutes on a CPU, and
the accounts of the machine's owner and of its own contributing client.

The settings scale the paper's down to a small board and a small network: fewer visits, a window
that starts at a few thousand rows, quick exports and short gatings. Everything else (search,
game initialization, the loss) is the paper's.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, replace
from pathlib import Path

from django.db import transaction

from common.files import atomic_write
from common.settings import GatingSettings, MatchSettings, RunSettings, SelfPlaySettings, TrainingSettings

DEMO_RUN = "demo"
OWNER = "admin"
VOLUNTEER = "volunteer"

# KataGo's fair komi on small boards (area scoring): 7x7 is a win by 9 for black with perfect play.
FAIR_KOMI = {5: 24.0, 6: 4.0, 7: 9.0, 8: 10.0, 9: 7.0}
# Rating games and matches on the larger boards play half a point above it: a drawn game tells less
# about which network is stronger than a won one, and far from perfect play the half point favours
# neither side much. Self-play keeps KataGo's komi draws around the fair komi, integers among them,
# which teach the score head where a game is even.
DRAWLESS_BOARDS = (8, 9)
# The demo's network by board: tiny (2 blocks of 16), which shows learning within minutes on 7x7;
# on 9x9 b3c32, which at equal CPU won every game against tiny
# (docs/experiments/ablation-9x9-size-2026-12-05.md).
DEMO_ARCHITECTURES = {9: "b3c32"}
# Training samples per row by board (KataGo's 4 elsewhere): on 9x9 the trainer sat idle at 4, and
# 90 minutes at 8 won 28 of 40 against GNU Go level 1 where 4 had won 18
# (docs/experiments/9x9-2026-12-05-eight.md).
DEMO_SAMPLES_PER_ROW = {9: 8.0}


def demo_architecture(board: int) -> str:
    return DEMO_ARCHITECTURES.get(board, "tiny")


def demo_settings(board: int = 7, architecture: str | None = None) -> RunSettings:
    komi = FAIR_KOMI.get(board, 7.0)
    selfplay = SelfPlaySettings(
        board_sizes=(board,),
        board_size_weights=(1.0,),
        visits=48,
        cheap_visits=12,
        # Soft resignation cuts a full search of a decided game down to a cheap one's visits (the
        # paper's 600 to 100 is the same idea at a larger scale).
        reduced_visits_min=12,
        komi_mean=komi,
        max_moves=3 * board * board,
    )
    match_komi = komi + 0.5 if board in DRAWLESS_BOARDS else komi
    rating = MatchSettings(
        board_sizes=(board,), board_size_weights=(1.0,), visits=48, komi=match_komi, max_moves=3 * board * board
    )
    # No gating: each exported network plays self-play at once (measured against 20-game gatings on
    # 9x9 in docs/experiments/ablation-9x9-gating-2026-12-05.md). A twentieth of the tasks are rating
    # games, for the Elo chart and the rollback; a run switched to "fixed" gates with 20 games.
    gating = GatingSettings(rating_game_prob=0.05, rule="none", fixed_games=20, fixed_wins=10, account_share=1.0)
    training = TrainingSettings(
        architecture=architecture or demo_architecture(board),
        window_c=5000,
        samples_per_row=DEMO_SAMPLES_PER_ROW.get(board, 4.0),
        batch_size=128,
        learning_rate=3e-4,
        lr_decay=1e-6,
        snapshot_every=5000,
        export_every=20_000,
        validation_rows=2000,
        shuffle_rows=20_000,
    )
    return RunSettings(selfplay=selfplay, rating=rating, gating=gating, training=training)


@dataclass
class Credentials:
    """What the platform keeps in its data folder (readable by its owner only). ``owner_password`` is
    empty once the owner changed the password the platform made."""

    owner_password: str
    volunteer_token: str

    @classmethod
    def load(cls, path: Path) -> Credentials:
        try:
            data = json.loads(path.read_text())
            return cls(owner_password=str(data["owner_password"]), volunteer_token=str(data["volunteer_token"]))
        except (OSError, ValueError, KeyError):
            return cls("", "")

    def save(self, path: Path) -> None:
        atomic_write(path, json.dumps(self.__dict__, indent=2).encode(), private=True)


ONE_CONTRIBUTOR = "the platform's own client plays every rating game: its games count whole (account_share 1)"


def _one_contributor(settings: RunSettings) -> RunSettings:
    """The settings with the rating games of the one account there is counted whole, whatever a
    settings document said (a share below 1 would count none of them)."""
    return replace(settings, gating=replace(settings.gating, account_share=1.0))


def ensure_demo(path: Path, board: int = 7, architecture: str | None = None, document: dict | None = None):
    """The demo run (made with ``document``, default :func:`demo_settings`, unless a run of that name
    exists, which is used as it is), the owner's staff account (made with a new password when
    missing) and the volunteer's account with a client token, their secrets kept in ``path``.
    Returns (run, credentials); SettingsError names a bad key of ``document``."""
    from server.accounts.models import ClientToken, User, hash_token
    from server.runs.models import Run, create_run

    credentials = Credentials.load(path)
    with transaction.atomic():
        run = Run.objects.filter(name=DEMO_RUN).first()
        if run is None:
            settings = RunSettings.from_dict(document) if document is not None else demo_settings(board, architecture)
            size, net = settings.selfplay.board_sizes[0], settings.training.architecture
            run = create_run(
                DEMO_RUN,
                _one_contributor(settings).to_dict(),
                description=f"the one-machine demo: {size}x{size}, the {net} network",
            )
        current = run.current_settings()
        if current is not None and current.settings.gating.account_share < 1.0:  # a run made before the cap
            run.set_settings(_one_contributor(current.settings).to_dict(), note=ONE_CONTRIBUTOR)
        owner = User.objects.filter(username=OWNER).first()
        if owner is None:
            credentials.owner_password = secrets.token_urlsafe(12)
            User.objects.create_superuser(OWNER, "", credentials.owner_password)
        elif credentials.owner_password and not owner.check_password(credentials.owner_password):
            credentials.owner_password = ""  # changed on the website: the owner knows it
        volunteer = User.objects.filter(username=VOLUNTEER).first()
        if volunteer is None:
            volunteer = User.objects.create_user(VOLUNTEER, "", secrets.token_urlsafe(24))
        if not (
            credentials.volunteer_token
            and ClientToken.objects.filter(
                user=volunteer, key_hash=hash_token(credentials.volunteer_token), revoked_at=None
            ).exists()
        ):
            _, credentials.volunteer_token = ClientToken.issue(volunteer, "the platform's own client")
        credentials.save(path)
    return run, credentials
