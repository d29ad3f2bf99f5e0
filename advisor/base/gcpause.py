"""Keeping Python's cyclic garbage collector away from what the advisor loads once and keeps."""
from __future__ import annotations

import functools
import gc


def loads_for_good(fn):
    """For loaders of what lives as long as the process (the catalog, a knowledge base, its compiled
    rulesets): run `fn` with the cyclic collector off, then move everything it built into the
    collector's permanent generation (`gc.freeze`). A 5,000-rule knowledge base is some 100,000
    objects; left to the collector, which starts every 700 allocations, they are walked again and
    again during the load and after it, and nothing is ever found to free (40% of the load).
    Reference counting frees every object dropped later as usual; a loader that leaves reference
    cycles behind (parsing YAML and Jinja does) calls free_cycles() first, so that none of them is
    frozen for good. Reading a cached result back makes none."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.freeze()
            gc.enable()
    return run


def free_cycles() -> None:
    """Collect the reference cycles made since the last collection (one pass over the youngest
    generation: with the collector paused, everything made since)."""
    gc.collect(0)
