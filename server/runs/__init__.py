"""Runs: a training run's name, status, minimum client version and its versioned settings document
(self-play, rating games, gating)."""
