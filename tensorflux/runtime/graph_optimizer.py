"""Graph optimizations on each cached step graph (whitepaper §5.1).

`optimize` runs the passes that OptimizerOptions selects. Only the entry point exists so far:
common subexpression elimination, constant folding and dead-code elimination arrive with the
multi-device issue (#7), and until then every step graph runs as built.
"""

from __future__ import annotations

from tensorflux.runtime.step_graph import StepGraph


def optimize(sg: StepGraph, options=None) -> None:
    """Rewrites `sg` in place according to `options` (an OptimizerOptions proto or None)."""
    del sg, options
