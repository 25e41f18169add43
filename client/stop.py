"""What a long run watches to know when to stop: a threading.Event, or anything with its methods."""

from __future__ import annotations

from typing import Protocol


class Stop(Protocol):
    def is_set(self) -> bool: ...

    def set(self) -> None: ...

    def wait(self, timeout: float | None = None) -> bool: ...
