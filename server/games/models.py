"""Uploaded games. Each names the task it was played for and the client's own game id (unique: a
retried upload finds the game it made). Files are stored by content hash (``server.files``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Winner(models.TextChoices):
    BLACK = "B", "black"
    WHITE = "W", "white"
    DRAW = "0", "draw"
    NONE = "-", "no result"


class Game(models.Model):
    client_game_id = models.CharField(max_length=64, unique=True)
    task = models.ForeignKey("distribution.Task", on_delete=models.PROTECT, related_name="%(class)ss")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="%(class)ss")
    run = models.ForeignKey("runs.Run", on_delete=models.PROTECT, related_name="%(class)ss")
    settings_version = models.ForeignKey("runs.RunSettingsVersion", on_delete=models.PROTECT, related_name="%(class)ss")
    board_x_size = models.PositiveSmallIntegerField()
    board_y_size = models.PositiveSmallIntegerField()
    komi = models.FloatField()
    rules = models.JSONField(help_text="KataGo's rules JSON")
    handicap = models.PositiveSmallIntegerField(default=0)
    result = models.CharField(max_length=16, help_text="as in SGF: B+3.5, W+R, 0, Void")
    winner = models.CharField(max_length=1, choices=Winner.choices)
    score = models.FloatField(null=True, blank=True, help_text="white minus black, when counted")
    resigned = models.BooleanField(default=False)
    moves = models.PositiveIntegerField()
    sgf = models.FileField(max_length=200)
    sgf_sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    disabled = models.BooleanField(default=False, help_text="kept out of training and ratings")

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.client_game_id


class TrainingGame(Game):
    network = models.ForeignKey("networks.Network", on_delete=models.PROTECT, related_name="training_games")
    rows = models.PositiveIntegerField()
    # The rows' file, named by their content: the name stays when the file is dropped once the game
    # is packed (its shard's game_files_dropped), as the rows' identity, read from the shard.
    npz = models.FileField(max_length=200)
    npz_sha256 = models.CharField(max_length=64)
    # The shard its rows were packed into, and where its npz file lies in it (None: not packed yet).
    shard = models.ForeignKey("games.Shard", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    shard_offset = models.BigIntegerField(null=True, blank=True)
    shard_length = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["network", "created_at"], name="tgame_network_created"),
            models.Index(fields=["user", "created_at"], name="tgame_user_created"),
            models.Index(fields=["run", "created_at"], name="tgame_run_created"),
            # the games the packer has yet to pack, oldest first
            models.Index(
                fields=["run", "created_at", "id"], name="tgame_unpacked", condition=models.Q(shard__isnull=True)
            ),
            # the disabled games of a shard, which a daily npz archive lists for its downloaders to skip
            models.Index(fields=["shard"], name="tgame_disabled_packed", condition=models.Q(disabled=True)),
            # whether a game not packed yet names an npz file (which is then kept)
            models.Index(fields=["npz"], name="tgame_unpacked_npz", condition=models.Q(shard__isnull=True)),
        ]


class Shard(models.Model):
    """Many self-play games' training rows in one stored file (``server.games.shards``): an
    uncompressed tar of their npz files, ``<game id>.npz``, named by its content's sha256. Its games
    are of one run and one UTC day, oldest first, and all held out of training or none; each game
    row says where its file lies in it."""

    run = models.ForeignKey("runs.Run", on_delete=models.PROTECT, related_name="shards")
    file = models.FileField(max_length=200)
    sha256 = models.CharField(max_length=64, unique=True)
    size_bytes = models.BigIntegerField()
    rows = models.PositiveIntegerField()
    games = models.PositiveIntegerField()
    day = models.DateField(help_text="the UTC day its games were stored")
    held_out = models.BooleanField(default=False, help_text="its games are held out of training")
    game_files_dropped = models.BooleanField(
        default=False, help_text="its games' own npz files were deleted (SENTE_SHARD_DROP_GAME_FILES)"
    )
    first_game = models.ForeignKey(
        TrainingGame, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="its oldest game"
    )
    last_game = models.ForeignKey(
        TrainingGame, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="its newest game"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-day", "-id"]
        indexes = [models.Index(fields=["run", "day"], name="shard_run_day")]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.day}/{self.sha256[:12]}"


class RatingGame(Game):
    black_network = models.ForeignKey("networks.Network", on_delete=models.PROTECT, related_name="rating_games_black")
    white_network = models.ForeignKey("networks.Network", on_delete=models.PROTECT, related_name="rating_games_white")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["black_network", "white_network"], name="rgame_pair"),
            models.Index(fields=["user", "created_at"], name="rgame_user_created"),
            models.Index(fields=["run", "created_at"], name="rgame_run_created"),
        ]


class UploadRefusal(models.Model):
    """An upload the server refused after reading it (bad files, a wrong task, ...): kept so that
    maintainers see what goes wrong and the metrics can count it."""

    kind = models.CharField(max_length=16, help_text="training or rating")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="upload_refusals"
    )
    code = models.CharField(max_length=32)
    field = models.CharField(max_length=32, blank=True)
    message = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} upload refused: {self.code}"
