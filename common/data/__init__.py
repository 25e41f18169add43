"""Training rows in KataGo's npz layout: the arrays and their channels (``schema``), how often each turn
becomes a row (``weights``), the game records (``records``), the writer (``rows``), and the validator the client
and the server both use (``validate``).

Only numpy is needed here; nothing imports torch.
"""

from common.data.records import GameRecord, GameResult, NetValues, SearchValues, TurnRecord
from common.data.rows import game_to_rows, policy_surprise_and_entropy, save_rows, write_game_rows
from common.data.schema import (
    ARRAY_NAMES,
    KATAGO_FORMAT_VERSION,
    MAX_ROWS_PER_FILE,
    REQUIRED_ARRAYS,
    SCHEMA,
    SENTE_ROWS_VERSION,
    ArraySpec,
)
from common.data.validate import RowValidationError, ValidationReport, load_rows, validate_rows
from common.data.weights import frequency_weights

__all__ = [
    "ARRAY_NAMES",
    "KATAGO_FORMAT_VERSION",
    "MAX_ROWS_PER_FILE",
    "REQUIRED_ARRAYS",
    "SCHEMA",
    "SENTE_ROWS_VERSION",
    "ArraySpec",
    "GameRecord",
    "GameResult",
    "NetValues",
    "RowValidationError",
    "SearchValues",
    "TurnRecord",
    "ValidationReport",
    "frequency_weights",
    "game_to_rows",
    "load_rows",
    "policy_surprise_and_entropy",
    "save_rows",
    "validate_rows",
    "write_game_rows",
]
