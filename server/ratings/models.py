"""Ratings of networks, as the last fit of their run's rating games left them (``server.ratings.fit``
does the fitting, ``server.ratings.services`` the storing)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Rating(models.Model):
    """A network's Elo (its run's first network at 0), the standard error, and its rating games."""

    network = models.OneToOneField(
        "networks.Network", primary_key=True, on_delete=models.CASCADE, related_name="rating"
    )
    elo = models.FloatField(null=True, blank=True, help_text="null: not connected to the run's first network")
    elo_se = models.FloatField(null=True, blank=True, help_text="standard error of elo")
    games = models.PositiveIntegerField(default=0, help_text="rating games played")
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.network_id}: {self.elo}"


class RatingFit(models.Model):
    """The last fit of a run: when, over how many games, and how long it took."""

    run = models.OneToOneField("runs.Run", primary_key=True, on_delete=models.CASCADE, related_name="rating_fit")
    fitted_at = models.DateTimeField(default=timezone.now)
    games = models.PositiveIntegerField(default=0)
    networks = models.PositiveIntegerField(default=0)
    iterations = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    pending = models.BooleanField(default=False, help_text="a refit is queued (new rating games came)")

    def __str__(self) -> str:
        return f"{self.run_id} fitted at {self.fitted_at:%Y-%m-%d %H:%M}"


class Gating(models.Model):
    """A candidate's gating: its games against the accepted network it must beat, and the verdict of
    the run's rule (``server.ratings.gating``) once it settled. Under the rule ``none`` it is decided
    as it begins: the record of the network it replaced."""

    candidate = models.OneToOneField(
        "networks.Network", primary_key=True, on_delete=models.CASCADE, related_name="gating"
    )
    opponent = models.ForeignKey(
        "networks.Network",
        on_delete=models.PROTECT,
        related_name="gatings_faced",
        help_text="the accepted network when the gating began",
    )
    rule = models.CharField(max_length=8, help_text="fixed, sprt or none (accepted at once, replacing the opponent)")
    wins = models.PositiveIntegerField(default=0, help_text="counted games (server.ratings.tally)")
    draws = models.PositiveIntegerField(default=0, help_text="draws and games without result")
    losses = models.PositiveIntegerField(default=0)
    tally = models.JSONField(
        null=True, blank=True, help_text="the last count: games played, excluded, beyond a share, accounts, cap"
    )
    decision = models.CharField(max_length=8, default="continue", help_text="continue, accept or reject")
    verdict = models.JSONField(null=True, blank=True, help_text="the rule's numbers at the last game")
    started_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    rollback_looks = models.PositiveIntegerField(default=0, help_text="rollback tests made since acceptance")
    in_doubt = models.BooleanField(
        default=False, help_text="the rule would not take its decision on the games that count now"
    )
    doubt = models.JSONField(
        null=True, blank=True, help_text="the decision's games counted again after some stopped or started counting"
    )
    settings = models.JSONField(
        null=True, blank=True, help_text="the run's gating settings it was counted with (last: decided with)"
    )

    def __str__(self) -> str:
        return f"{self.candidate_id} vs {self.opponent_id}: {self.decision}"


class NetworkEvent(models.Model):
    """Something that changed a network's standing: a gating verdict, a rollback, a staff decision."""

    class Kind(models.TextChoices):
        GATING_STARTED = "gating_started", "gating started"
        ACCEPTED = "accepted", "accepted by the run's gating rule"
        REJECTED = "rejected", "rejected by its gating"
        ROLLED_BACK = "rolled_back", "rolled back: found worse than its predecessor"
        FORCED_ACCEPT = "forced_accept", "accepted by staff"
        FORCED_REJECT = "forced_reject", "rejected by staff"
        RELEASED = "released", "released by staff"
        RETIRED = "retired", "retired by staff"
        GATED_AGAIN = "gated_again", "sent back to gating by staff"
        CONFIRMED = "confirmed", "its decision confirmed by staff, in doubt as it was"

    network = models.ForeignKey("networks.Network", on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    note = models.TextField(blank=True)
    data = models.JSONField(null=True, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.network_id}: {self.kind}"


class Anchor(models.Model):
    """A fixed player whose strength means something to people (GNU Go at a level), rated with the
    networks (``server.ratings.anchors``) so that the Elo chart can show it as a line."""

    name = models.CharField(max_length=64, unique=True, help_text="e.g. GNU Go level 10")
    program = models.CharField(max_length=16, default="gnugo")
    level = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["program", "level"]
        constraints = [models.UniqueConstraint(fields=["program", "level"], name="anchor_program_level")]

    def __str__(self) -> str:
        return self.name


class AnchorMatch(models.Model):
    """Games of one network against an anchor, colours alternating, as one record: what the fit needs."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="anchor_matches")
    network = models.ForeignKey("networks.Network", on_delete=models.CASCADE, related_name="anchor_matches")
    anchor = models.ForeignKey(Anchor, on_delete=models.PROTECT, related_name="matches")
    games = models.PositiveIntegerField()
    wins = models.PositiveIntegerField(help_text="the network's")
    draws = models.PositiveIntegerField(default=0, help_text="draws and games without result")
    board_size = models.PositiveSmallIntegerField()
    komi = models.FloatField()
    visits = models.PositiveIntegerField(help_text="the network's search per move")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["run", "anchor"], name="anchormatch_run_anchor")]

    def __str__(self) -> str:
        return f"{self.network_id} vs {self.anchor}: {self.wins}/{self.games}"

    @property
    def losses(self) -> int:
        return self.games - self.wins - self.draws


class AnchorRating(models.Model):
    """An anchor's Elo in a run, as the run's last fit left it (the run's first network at 0)."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="anchor_ratings")
    anchor = models.ForeignKey(Anchor, on_delete=models.CASCADE, related_name="ratings")
    elo = models.FloatField(null=True, blank=True)
    elo_se = models.FloatField(null=True, blank=True)
    games = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["anchor__level"]
        constraints = [models.UniqueConstraint(fields=["run", "anchor"], name="anchorrating_run_anchor")]

    def __str__(self) -> str:
        return f"{self.anchor} in {self.run_id}: {self.elo}"
