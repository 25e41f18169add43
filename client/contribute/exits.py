"""How the contributing client ends: its exit statuses, and :class:`Stop`, which ends it with one
after printing why."""

from __future__ import annotations

from client.contribute.tasks import AUTH, CANARY, NETWORK, PROTOCOL, UPGRADE

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_AUTH, EXIT_UPGRADE, EXIT_UNREACHABLE, EXIT_NETWORK, EXIT_CANARY = range(8)
# A worker's fatal failure, by its kind, as the client's exit status.
EXIT_OF_KIND = {
    AUTH: EXIT_AUTH,
    UPGRADE: EXIT_UPGRADE,
    PROTOCOL: EXIT_UPGRADE,
    NETWORK: EXIT_NETWORK,
    CANARY: EXIT_CANARY,
}


class Stop(Exception):
    """End the command with this exit status after printing the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def exit_of_refusal(outcome) -> int:
    """The exit status of an upload the server refused for good: an old client (426) or a refused token."""
    return EXIT_UPGRADE if outcome.status == 426 else EXIT_AUTH
