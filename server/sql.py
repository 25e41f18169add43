"""Names for SQL written by hand from the models' metadata (for queries too frequent for the ORM)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import Field


def quoted_column(field: Field[Any, Any]) -> str:
    """The quoted column of a concrete field."""
    # Only fields without a column of their own (relations seen from the other side) have none.
    assert field.column is not None, f"{field.name} has no column"
    return connection.ops.quote_name(field.column)
