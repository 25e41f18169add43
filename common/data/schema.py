"""KataGo's npz layout for training rows: the arrays, their dtypes and shapes, and which channel holds
what.

Layout (KataGo cpp/dataio/trainingwrite.cpp, reference ``katago-client-and-data.md`` §2). Every row is
on the 19x19 data grid; a smaller board sits in the top-left corner (position ``y * 19 + x``, pass is
361). N is the number of rows.

=====================  =====  ==============  ==========================================================
array                  dtype  shape           content
=====================  =====  ==============  ==========================================================
binaryInputNCHWPacked  u1     [N, 22, 46]     the 22 spatial input planes, each bit-packed big-endian
                                              within a byte and padded to whole bytes
globalInputNC          f4     [N, 19]         the 19 global inputs
policyTargetsNCMove    i2     [N, 2, 362]     C0 this turn's policy target, C1 the next turn's; a
                                              missing target is all ones with weight 0
globalTargetsNC        f4     [N, 80]         value targets, weights and metadata (``GT_*`` below)
scoreDistrN            i1     [N, 842]        final score as percent over buckets, bucket i is the
                                              score ``i - 421 + 0.5``
valueTargetsNCHW       i1     [N, 5, 19, 19]  C0 final ownership, C1 seki, C2/C3 the board 8 and 32
                                              turns on, C4 scoring x 120 (all from the side to move)
qValueTargetsNCMove    i2     [N, 3, 362]     optional: per move win-loss x 32000, score x 60, visits
=====================  =====  ==============  ==========================================================

Versions. globalTargetsNC channel 63 holds KataGo's format version, 3. Our own schema version,
:data:`SENTE_ROWS_VERSION`, is globalTargetsNC channel 79 (:data:`GT_SENTE_VERSION`). It is a channel
rather than an extra array because KataGo's ``python/shuffle.py`` asserts that a file holds exactly
the six required arrays plus, optionally, qValueTargetsNCMove (``assert_keys``); any extra array makes
it fail. Channels 69-79 are zero in KataGo's format 3 and its tools read channels by index, so
channel 79 is ignored by them; a channel also travels with its row through shuffling, which a
per-file marker would not. Rows KataGo wrote have 0 there. A future KataGo format that used the
channel would also change channel 63, which the validator checks first.

Which channel holds what, and where the value comes from, is in the ``GT_*`` comments; the formulas
follow KataGo's trainingwrite.cpp (``TrainingWriteBuffers::addRow``, ``fillValueTDTargets``) and
cpp/program/play.cpp (the final value targets, value surprise and the frequency weights). Channels
that the writer (:mod:`common.data.rows`) does not fill stay zero, and the targets they would carry
have weight zero.

Only numpy is needed here; the training loss (:mod:`common.nn.loss`) reads its channels from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# --- Grid and array sizes ----------------------------------------------------------------------------
DATA_LEN = 19  # KataGo's dataBoardLen: every row is on the 19x19 grid
DATA_AREA = DATA_LEN * DATA_LEN
POLICY_LEN = DATA_AREA + 1
PASS_POS = DATA_AREA
NUM_SPATIAL_INPUTS = 22  # inputs version 7
NUM_GLOBAL_INPUTS = 19
PACKED_LEN = (DATA_AREA + 7) // 8  # 46 bytes per packed plane
NUM_POLICY_TARGETS = 2
NUM_GLOBAL_TARGETS = 80
NUM_VALUE_SPATIAL = 5
NUM_QVALUE = 3
EXTRA_SCORE_DISTR_RADIUS = 60
SCORE_DISTR_LEN = 2 * DATA_AREA + 2 * EXTRA_SCORE_DISTR_RADIUS  # 842
SCORE_DISTR_MID = DATA_AREA + EXTRA_SCORE_DISTR_RADIUS  # bucket SCORE_DISTR_MID is the score +0.5
SCORE_TARGET_CAP = float(DATA_AREA + EXTRA_SCORE_DISTR_RADIUS)  # KataGo caps score and lead targets here
POLICY_TARGET_MAX = 30000  # play.cpp extractPolicyTarget: the largest entry is scaled down to this
POLICY_TARGET_MIN_MAX = 10.0  # play.cpp: getPlaySelectionValues(scaleMaxToAtLeast = 10)
SCORING_SCALE = 120  # valueTargetsNCHW C4 holds scoring x 120
QVALUE_WINLOSS_SCALE = 32000.0
QVALUE_SCORE_SCALE = 60.0
QVALUE_MAX = 32000

KATAGO_FORMAT_VERSION = 3  # globalTargetsNC channel 63 (KataGo v1.17, 80 channels)
# globalTargetsNC channel 79: our schema version (0 = not written by Sente). 2: the seki target
# (valueTargetsNCHW C1), the bonus points to come (channel 61) and territory scoring's encore are
# filled; version 1 rows have zeros there. 3: side positions say so in channel 78.
SENTE_ROWS_VERSION = 3
MAX_ROWS_PER_FILE = 10000  # KataGo's maxRowsPerTrainFile in selfplay1.cfg

# KataGo's FinishedGameData modes (globalTargetsNC channel 55).
GAME_MODE_NORMAL = 0
GAME_MODE_CLEANUP_TRAINING = 1
GAME_MODE_FORK = 2
GAME_MODE_HANDICAP = 3
GAME_MODE_SGFPOS = 4
GAME_MODE_HINTPOS = 5
GAME_MODE_HINTFORK = 6
GAME_MODE_ASYM = 7
NUM_GAME_MODES = 8

# --- globalTargetsNC channels (all values from the side to move of the row) ----------------------------
# Meaning, and how the writer fills it; KataGo's trainingwrite.cpp (addRow) writes them all.
GT_WIN = 0  # 0-3: final win, loss, no result, score (fillValueTDTargets with nowFactor 0)
GT_LOSS = 1
GT_NO_RESULT = 2
GT_SCORE = 3
GT_VALUE = slice(GT_WIN, GT_NO_RESULT + 1)  # the final win, loss, no result: the value target
GT_TD_LONG = 4  # 4-7: TD blend of search values, nowFactor 1/(1+area*0.176)
GT_TD_MEDIUM = 8  # 8-11: nowFactor 1/(1+area*0.056)
GT_TD_SHORT = 12  # 12-15: nowFactor 1/(1+area*0.016)
GT_MCTS_VALUE = 16  # 16-19: this turn's search value (nowFactor 1)
GT_FINAL_SCORE = 20  # final score, draw-adjusted, capped; 0 when there is no ownership target
GT_LEAD = 21  # the search's lead on turns that estimated one (weight 29)
GT_VARIANCE_TIME = 22  # sum over later turns of (turns ahead) x (change of win-loss)^2
GT_UNUSED_23 = 23
GT_ONE_MINUS_TD_WEIGHT = 24  # 1 - TD value weight (0: full weight)
GT_ROW_WEIGHT = 25  # the game's training weight (1)
GT_POLICY_WEIGHT = 26  # 1 when C0 of policyTargetsNCMove holds a target
GT_OWNERSHIP_WEIGHT = 27  # ownership, seki, final score and score distribution weight
GT_NEXT_POLICY_WEIGHT = 28  # 1 when C1 holds the next turn's target
GT_OPPONENT_POLICY_WEIGHT = GT_NEXT_POLICY_WEIGHT  # the name common.nn.loss uses
GT_LEAD_WEIGHT = 29
GT_POLICY_SURPRISE = 30  # KL(target || root prior)
GT_POLICY_ENTROPY = 31  # entropy of the root prior the search used
GT_SEARCH_ENTROPY = 32  # entropy of the policy target
GT_FUTURE_BOARD_WEIGHT = 33  # weight of valueTargetsNCHW C2, C3
GT_SCORING_WEIGHT = 34  # weight of valueTargetsNCHW C4
GT_ONE_MINUS_VALUE_WEIGHT = 35  # 1 - value weight (0: full weight)
GT_HISTORY_MASKS = slice(36, 41)  # history kept for the last 1..5 moves, each with p=0.98, chained
GT_HISTORY_MASK_FIRST = 36
GT_GAME_HASH = slice(41, 47)  # the 128-bit game hash in 22/22/20-bit chunks of each 64-bit half
GT_GAME_HASH_FIRST = 41
GT_SELF_KOMI = 47  # komi from the side to move (KataGo's currentSelfKomi)
GT_AREA_SCORING = 48  # 1 under area scoring and in the encore's second phase
GT_EARLIER_NET = 49  # 1 when a newer network took over during the game
GT_NETS_BEHIND = 50  # how many network switches came after this turn
GT_TURN_INDEX = 51  # moves made before this turn
GT_HIT_TURN_LIMIT = 52
GT_FIRST_TRAINING_TURN = 53  # moves made before the first recorded turn
GT_EXTRA_BLACK = 54  # extra black (handicap) stones
GT_GAME_MODE = 55  # GAME_MODE_*
GT_INITIAL_TURN = 56  # the turn number the game history started at
GT_RAW_WIN_LOSS = 57  # raw network win - loss
GT_RAW_SCORE = 58  # raw network score mean
GT_RAW_POLICY_ENTROPY = 59  # entropy of the raw network policy
GT_UNREDUCED_VISITS = 60  # root visits of the search
GT_BONUS_POINTS = 61  # bonus points still to come (the button; territory scoring's stone points)
GT_GAME_FINISHED = 62  # 1 when the game ended (not by the turn limit) and the row is not a side position
GT_FORMAT_VERSION = 63  # KATAGO_FORMAT_VERSION
GT_REANALYZED = 64  # 64-67: reanalysis of cheap searches (KataGo v1.17): left 0
GT_PASS_ALIVE_SUICIDE = 68  # 1 if pass-alive inputs assumed suicide legal; 0: ours follow the game's rule
# 1 on a side position's row (game branching, paper section 6.2.2: a move off the game's line, searched
# once): its value targets are that search's, and it has no outcome, ownership, later-board or next
# policy target. KataGo marks such rows only by channel 62 being 0.
GT_SIDE_POSITION = 78
GT_SENTE_VERSION = 79  # SENTE_ROWS_VERSION (KataGo leaves 69-79 zero)

# valueTargetsNCHW channels.
VT_OWNERSHIP = 0
VT_SEKI = 1
VT_FUTURE_8 = 2
VT_FUTURE_32 = 3
VT_SCORING = 4
FUTURE_BOARD_TURNS = (8, 32)

RowArrays = dict[str, np.ndarray]


# --- Schema ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArraySpec:
    """One npz array: its name, dtype (little-endian, as KataGo writes) and per-row shape."""

    name: str
    dtype: np.dtype
    row_shape: tuple[int, ...]
    required: bool = True

    def shape(self, num_rows: int) -> tuple[int, ...]:
        return (num_rows, *self.row_shape)


SCHEMA: tuple[ArraySpec, ...] = (
    ArraySpec("binaryInputNCHWPacked", np.dtype("u1"), (NUM_SPATIAL_INPUTS, PACKED_LEN)),
    ArraySpec("globalInputNC", np.dtype("<f4"), (NUM_GLOBAL_INPUTS,)),
    ArraySpec("policyTargetsNCMove", np.dtype("<i2"), (NUM_POLICY_TARGETS, POLICY_LEN)),
    ArraySpec("globalTargetsNC", np.dtype("<f4"), (NUM_GLOBAL_TARGETS,)),
    ArraySpec("scoreDistrN", np.dtype("i1"), (SCORE_DISTR_LEN,)),
    ArraySpec("valueTargetsNCHW", np.dtype("i1"), (NUM_VALUE_SPATIAL, DATA_LEN, DATA_LEN)),
    ArraySpec("qValueTargetsNCMove", np.dtype("<i2"), (NUM_QVALUE, POLICY_LEN), required=False),
)
SCHEMA_BY_NAME: dict[str, ArraySpec] = {spec.name: spec for spec in SCHEMA}
REQUIRED_ARRAYS: tuple[str, ...] = tuple(spec.name for spec in SCHEMA if spec.required)
OPTIONAL_ARRAYS: tuple[str, ...] = tuple(spec.name for spec in SCHEMA if not spec.required)
ARRAY_NAMES: tuple[str, ...] = tuple(spec.name for spec in SCHEMA)


def empty_rows(num_rows: int) -> RowArrays:
    """Zeroed arrays of every schema array for ``num_rows`` rows."""
    return {spec.name: np.zeros(spec.shape(num_rows), dtype=spec.dtype) for spec in SCHEMA}


# --- Packed input planes --------------------------------------------------------------------------------
def pack_spatial(spatial: np.ndarray) -> np.ndarray:
    """[22, 361] 0/1 planes -> [22, 46] bytes, big-endian bits, each plane padded with zero bits."""
    planes = np.asarray(spatial)
    if planes.shape != (NUM_SPATIAL_INPUTS, DATA_AREA):
        raise ValueError(f"spatial inputs have shape {planes.shape}; expected ({NUM_SPATIAL_INPUTS}, {DATA_AREA})")
    if not np.all((planes == 0) | (planes == 1)):
        raise ValueError("spatial inputs hold values other than 0 and 1")
    return np.packbits(planes.astype(np.uint8), axis=1, bitorder="big")


def unpack_spatial(packed: np.ndarray) -> np.ndarray:
    """[..., 22, 46] packed bytes -> [..., 22, 361] uint8 planes."""
    return np.unpackbits(np.asarray(packed, dtype=np.uint8), axis=-1, bitorder="big")[..., :DATA_AREA]
