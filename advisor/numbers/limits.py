"""The limits a plan's search ran into, as the record's `limits` entries (issue 21: no hidden limit): a
GPU ceiling (`max_gpus`, the planner's default, a workstation's box) and a stated global batch that
feeds fewer data-parallel replicas than a deadline needs. Each says the figure that bound and its source.
"""
from __future__ import annotations

from advisor.inputs.workload import Workload


def replica_cap(w: Workload) -> int | None:
    """A training workload that states its global batch gives each data-parallel replica at least one
    micro-batch per step: at most global_batch / micro_batch replicas (None: no batch stated)."""
    return w.global_batch // w.micro_batch if w.training and w.global_batch else None


def batch_replicas(w: Workload, d: int) -> int | None:
    """The fewest data-parallel replicas, at least `d`, that a stated global batch splits into whole
    micro-batches: global_batch / micro_batch must be a multiple of them (Megatron-LM's
    num_microbatches_calculator asserts global_batch % (micro_batch x DP) == 0, MEGATRON_MICROBATCHES);
    None past the cap; `d` itself when no batch is stated."""
    rc = replica_cap(w)
    if rc is None:
        return d
    return next((k for k in range(max(1, d), rc + 1) if rc % k == 0), None)


def batch_limit(w: Workload, needed: int) -> dict:
    """The `limits` entry of a global batch too small for the replicas a deadline needs."""
    return {"limit": "global_batch", "value": w.global_batch, "needed_replicas": needed, "source": "global_batch in the workload",
            "text": (f"global_batch {w.global_batch:,} / micro_batch {w.micro_batch} feeds at most {replica_cap(w):,} "
                     f"data-parallel replicas; meeting the deadline needs about {needed:,} replicas of this layout")}


def max_gpus_limit(w: Workload, max_gpus: int, needed: int, box: str | None = None) -> dict:
    """The `limits` entry of a GPU ceiling that kept the planner from a plan meeting the target (`box`:
    why a workstation holds no more)."""
    if box:
        return {"limit": "workstation", "value": max_gpus, "needed_gpus": needed, "source": "numbers/power.py workstation_cards (K02, NEC_15A, C14)",
                "text": f"{box}: meeting the target needs about {needed:,}"}
    given = w.constraints.max_gpus is not None
    return {"limit": "max_gpus", "value": max_gpus, "needed_gpus": needed,
            "source": "constraints.max_gpus in the workload" if given else "the planner's ceiling (numbers/layouts.py MAX_GPUS)",
            "text": (f"max_gpus {max_gpus:,} ({'the workload' if given else 'the planner default'}) binds: "
                     f"meeting the target needs about {needed:,} GPUs")}
