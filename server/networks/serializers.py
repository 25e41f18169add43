from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from common.protocol import NETWORK_NAME_PATTERN
from server.files import public_url
from server.networks.models import Network, NetworkCanary
from server.runs.models import Run


class RatingSerializer(serializers.Serializer):
    elo = serializers.FloatField(allow_null=True, help_text="the run's first network is 0")
    elo_se = serializers.FloatField(allow_null=True, help_text="standard error of elo")
    games = serializers.IntegerField(help_text="rating games played")


class GatingSerializer(serializers.Serializer):
    opponent = serializers.CharField(
        source="opponent.name", help_text="the accepted network it played (rule none: the one it replaced)"
    )
    rule = serializers.CharField(help_text="fixed, sprt or none (accepted at once, without gating games)")
    wins = serializers.IntegerField(help_text="counted: games that count, no more of one account's than its share")
    draws = serializers.IntegerField()
    losses = serializers.IntegerField()
    tally = serializers.JSONField(
        allow_null=True,
        help_text="the last count: played (every game of the pair since the gating began), excluded (disabled or "
        "of accounts no longer counted), capped (beyond an account's share), accounts, cap",
    )
    decision = serializers.CharField(help_text="continue, accept or reject")
    verdict = serializers.JSONField(allow_null=True, help_text="the rule's numbers and reason at the last game")
    started_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    in_doubt = serializers.BooleanField(
        help_text="the decision counted games that no longer count, and the rule would not take it on those that do"
    )
    doubt = serializers.JSONField(allow_null=True, help_text="the decision's games counted again, when they changed")


class EventSerializer(serializers.Serializer):
    kind = serializers.CharField()
    note = serializers.CharField()
    # a declared field, not the serializer's data property: DRF's metaclass takes it out of the class
    data = serializers.JSONField(allow_null=True)  # type: ignore[assignment]
    created_at = serializers.DateTimeField()


class NetworkSerializer(serializers.ModelSerializer):
    run: serializers.SlugRelatedField[Run] = serializers.SlugRelatedField(slug_field="name", read_only=True)
    # a declared field, not Field.parent: DRF's metaclass takes it out of the class
    parent: serializers.SlugRelatedField[Network] = serializers.SlugRelatedField(  # type: ignore[assignment]
        slug_field="name", read_only=True
    )
    file_url = serializers.SerializerMethodField(help_text="where to download the file (null: the random network)")
    katago_file_url = serializers.SerializerMethodField(
        help_text="where to download the network in KataGo's model format, .bin.gz (null: the random network, "
        "and architectures KataGo's engine cannot run)"
    )
    rating = serializers.SerializerMethodField()
    gating = serializers.SerializerMethodField()

    class Meta:
        model = Network
        fields: tuple[str, ...] = (
            "name",
            "run",
            "parent",
            "is_random",
            "size_name",
            "architecture",
            "size_bytes",
            "sha256",
            "train_step",
            "rows_seen",
            "state",
            "released",
            "created_at",
            "file_url",
            "katago_file_url",
            "notes",
            "rating",
            "gating",
        )
        read_only_fields = fields

    def get_file_url(self, network: Network) -> str | None:
        if network.is_random or not network.file:
            return None
        return reverse("network-file", args=[network.name], request=self.context.get("request"))

    def get_katago_file_url(self, network: Network) -> str | None:
        if not network.katago_exportable:
            return None
        return reverse("network-katago-file", args=[network.name], request=self.context.get("request"))

    @extend_schema_field(RatingSerializer(allow_null=True))
    def get_rating(self, network: Network) -> dict | None:
        rating = getattr(network, "rating", None)
        return RatingSerializer(rating).data if rating is not None else None

    @extend_schema_field(GatingSerializer(allow_null=True))
    def get_gating(self, network: Network) -> dict | None:
        gating = getattr(network, "gating", None)
        return GatingSerializer(gating).data if gating is not None else None


class PickedNetworkSerializer(NetworkSerializer):
    """A network a stable link names, with why it was picked."""

    picked_as = serializers.SerializerMethodField(help_text="strongest or released")
    elo_lower_bound = serializers.SerializerMethodField(
        help_text="the lower end of the 95% interval of its Elo (null: not rated)"
    )
    min_games = serializers.SerializerMethodField(
        help_text="the rating games a network needed to be picked as strongest (null: picked as released)"
    )

    class Meta(NetworkSerializer.Meta):
        fields = (*NetworkSerializer.Meta.fields, "picked_as", "elo_lower_bound", "min_games")
        read_only_fields = fields

    def get_picked_as(self, network: Network) -> str:
        return self.context["alias"]

    def get_elo_lower_bound(self, network: Network) -> float | None:
        from server.networks.selectors import lower_bound

        rating = getattr(network, "rating", None)
        return lower_bound(rating.elo, rating.elo_se) if rating is not None else None

    def get_min_games(self, network: Network) -> int | None:
        return self.context.get("min_games")


class CanarySerializer(serializers.Serializer):
    version = serializers.IntegerField()
    fingerprint = serializers.CharField(help_text="sha256 of the canary positions and their inputs (common.canary)")
    url = serializers.SerializerMethodField(help_text="the reference outputs (npz)")
    sha256 = serializers.CharField()
    bytes = serializers.IntegerField(source="size_bytes")
    computed_at = serializers.DateTimeField()

    def get_url(self, ref) -> str:
        return reverse("network-canary", args=[ref.network.name], request=self.context.get("request"))


class NetworkDetailSerializer(NetworkSerializer):
    events = EventSerializer(many=True, read_only=True, help_text="gating verdicts, rollbacks, staff decisions")
    canary = serializers.SerializerMethodField(
        help_text="the network's fp32 CPU outputs on the canary positions, which clients check their own against "
        "(null until computed, and for the random network)"
    )

    class Meta(NetworkSerializer.Meta):
        fields = (*NetworkSerializer.Meta.fields, "events", "canary")
        read_only_fields = fields

    @extend_schema_field(CanarySerializer(allow_null=True))
    def get_canary(self, network: Network) -> dict | None:
        ref = NetworkCanary.objects.filter(network=network).first()
        return CanarySerializer(ref, context=self.context).data if ref is not None else None


def network_ref(network: Network, request) -> dict:
    """What a task says about a network: enough to fetch and check it. ``public_url``: the file at
    the public download base, tried before ``url`` (the server's own download, the fallback)."""
    has_file = not network.is_random and bool(network.file)
    return {
        "name": network.name,
        "is_random": network.is_random,
        "url": reverse("network-file", args=[network.name], request=request) if has_file else None,
        "public_url": public_url(network.file.name or "") if has_file else None,
        "sha256": network.sha256 or None,
        "bytes": network.size_bytes,
    }


class NetworkUploadSerializer(serializers.Serializer):
    name = serializers.RegexField(f"^{NETWORK_NAME_PATTERN}$", max_length=64)
    run = serializers.CharField(max_length=32)
    parent = serializers.CharField(max_length=64, required=False, allow_blank=True)  # type: ignore[assignment]  # see above
    train_step = serializers.IntegerField(min_value=0, default=0)
    rows_seen = serializers.IntegerField(min_value=0, default=0)
    sha256 = serializers.RegexField(
        r"^[0-9a-f]{64}$", required=False, help_text="the file's sha256 as the uploader computed it; checked"
    )
    notes = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="")
    file = serializers.FileField(help_text="the network file (.safetensors)")
