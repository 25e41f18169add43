"""The network's inputs from a game: KataGo's features (inputs version 7) and the ladder search
they need, compiled with numba; and a row of its outputs read back for the search (``readout``).
No torch here: the client's search, the server's checks and the trainer all encode positions; only
``common.nn`` runs the network."""
