"""Stand-ins for a network with just enough behaviour for a test to know what the search must find."""

from __future__ import annotations

import numpy as np

from client.search.engine import NullEvaluator


class KomiAwareEvaluator(NullEvaluator):
    """The null network (a uniform policy, even chances) whose score, for a position with black to
    move, says white leads by white's komi minus ``fair``: its fair komi is ``fair``. No result gets
    no weight, so the score is not scaled down by it."""

    def __init__(self, fair: float) -> None:
        super().__init__()
        self.fair = fair

    def forward_raw(self, spatial: np.ndarray, glob: np.ndarray, width: int):
        policy, value, misc = (a.copy() for a in super().forward_raw(spatial, glob, width))
        value[:, 2] = -30.0
        # glob[:, 5] is the komi of the player to move / 20; black's lead is fair - white's komi.
        misc[:, 0] = glob[:, 5] + self.fair / 20.0
        return policy, value, misc
