"""The Go Text Protocol: the engine (``engine``), its players (``players``) and a referee that
plays two engines against each other (``twogtp``)."""
