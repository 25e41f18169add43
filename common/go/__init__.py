"""Go: the rules engine (numba kernels over flat arrays, wrapped by ``Game``), rules as data,
handicap placement and SGF.

- ``geometry``: locations, colours, coordinate formats
- ``board``: stones, chains, liberties, captures, simple ko, Zobrist hashes
- ``gamestate``: superko, passes, the button, the end of the game and its score
- ``area``: Benson's pass-alive analysis, area scoring, seki and group tax
- ``playout``: the random player's policy and whole random games
- ``game``: the ``Game`` class over those kernels
- ``rules``, ``handicap``, ``sgf``: rules as data, handicap placements, SGF files
"""
