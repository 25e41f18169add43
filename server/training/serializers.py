from __future__ import annotations

from rest_framework import serializers

from server.networks.models import Network
from server.training.models import TrainingLine


class TrainingLineSerializer(serializers.ModelSerializer):
    last_export: serializers.SlugRelatedField[Network] = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = TrainingLine
        fields = (
            "architecture",
            "role",
            "status",
            "status_note",
            "samples",
            "rows_total",
            "window_rows",
            "losses",
            "validation",
            "last_export",
            "exports",
            "host",
            "started_at",
            "updated_at",
        )
        read_only_fields = fields
