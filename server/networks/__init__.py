"""Networks: the files (safetensors, identified by their sha256), lineage, training progress and the
state each network is in (candidate, rating, accepted, rejected, retired)."""
