"""The limits a plan's search ran into, as the record's `limits` entries (issue 21: no hidden limit): a
GPU ceiling (`max_gpus`, the planner's default, a workstation's box) and a global batch (stated, or the
planner's bound on tokens per step) that feeds fewer data-parallel replicas than a deadline needs. Each says the figure that bound and its source.
"""
from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache
from math import isqrt

from advisor.inputs.workload import Workload
from advisor.numbers.cardmemory import kv_replication
from advisor.inputs.parallel import notation
from advisor.numbers.terms import _gb


def batch_bound(w: Workload, max_tokens: float = 0.0) -> int | None:
    """Sequences per optimizer step the planner's own global batch may take when the workload states
    none: `max_tokens` (efficiency.yaml training_batch, LLAMA3_BATCH) over the sequence length, at least
    one micro-batch; None with a stated global batch (taken as given) or no bound."""
    if not w.training or w.global_batch or not max_tokens:
        return None
    return max(w.micro_batch, int(max_tokens // w.context_tokens))


def batch_source(w: Workload) -> tuple[str, str]:
    """Whose batch the planner's bound is (the memo's words) and its source key: a MoE model's is
    DeepSeek-V3's (efficiency.yaml max_tokens_per_step_moe), a dense model's Llama 3 405B's."""
    if w.model.num("experts") and w.model.num("experts_per_token"):
        return "DeepSeek-V3's largest batch", "DEEPSEEK_V3_BATCH"
    return "Llama 3 405B's largest batch", "LLAMA3_BATCH"


def replica_cap(w: Workload, max_tokens: float = 0.0) -> int | None:
    """A training step gives each data-parallel replica at least one micro-batch: at most global_batch /
    micro_batch replicas, the stated global batch's or the planner's bound's (batch_bound; None: neither)."""
    if w.training and w.global_batch:
        return w.global_batch // w.micro_batch
    bound = batch_bound(w, max_tokens)
    return bound // w.micro_batch if bound else None


def batch_replicas(w: Workload, d: int, max_tokens: float = 0.0) -> int | None:
    """The fewest data-parallel replicas, at least `d`, that the global batch splits into whole
    micro-batches: global_batch / micro_batch must be a multiple of them (Megatron-LM's
    num_microbatches_calculator asserts global_batch % (micro_batch x DP) == 0, MEGATRON_MICROBATCHES);
    the stated batch, or with `max_tokens` the planner's bound (batch_bound); None past the cap; `d`
    itself when neither applies."""
    rc = replica_cap(w, max_tokens)
    if rc is None:
        return d
    divs = _divisors(rc)
    i = bisect_left(divs, max(1, d))
    return divs[i] if i < len(divs) else None


@lru_cache(maxsize=64)
def _divisors(n: int) -> tuple[int, ...]:
    """Every divisor of `n`, ascending (none for n < 1): the planner asks batch_replicas for the same cap
    thousands of times in one search (a 16,000-GPU pre-training), so a count up to it is found by
    bisection, not by trying each count in turn."""
    small = [k for k in range(1, isqrt(n) + 1) if n % k == 0] if n > 0 else []
    return tuple(sorted(set(small) | {n // k for k in small}))


def batch_limit(w: Workload, needed: int, max_tokens: float = 0.0, tp: int = 1) -> dict:
    """The `limits` entry of a global batch too small for the replicas a deadline needs: the stated one,
    or the planner's bound on tokens per step (batch_bound), which with a full pipeline (a micro-batch
    per stage per replica) feeds at most TP x its sequences / micro_batch GPUs."""
    cap = replica_cap(w, max_tokens)
    if w.global_batch:
        return {"limit": "global_batch", "value": w.global_batch, "needed_replicas": needed, "source": "global_batch in the workload",
                "text": (f"global_batch {w.global_batch:,} / micro_batch {w.micro_batch} feeds at most {cap:,} "
                         f"data-parallel replicas; meeting the deadline needs about {needed:,} replicas of this layout")}
    bound = batch_bound(w, max_tokens)
    whose, key = batch_source(w)
    return {"limit": "global_batch", "value": bound, "needed_replicas": needed, "max_gpus_full_pipeline": tp * cap,
            "source": f"catalog/efficiency.yaml training_batch.max_tokens_per_step{'_moe' if key != 'LLAMA3_BATCH' else ''} ({key})",
            "text": (f"the planner's global batch is at most {max_tokens / 1e6:,.1f}M tokens per step ({bound:,} sequences of "
                     f"{w.context_tokens:,}, {whose}): with a micro-batch per pipeline stage for each "
                     f"replica it feeds at most {tp * cap:,} GPUs at TP {tp}, and more replicas or stages leave stages idle; "
                     "state global_batch to train with a larger one")}


def max_gpus_limit(w: Workload, max_gpus: int, needed: int, box: str | None = None, on_demand: bool = False) -> dict:
    """The `limits` entry of a GPU ceiling that kept the planner from a plan meeting the target (`box`:
    why a workstation holds no more, or with `on_demand`, what one listing rents at once: numbers.longjob)."""
    if box:
        kind, src = (("on_demand_capacity", "catalog/capacity.yaml (numbers/cost.py on_demand_gpus, review 16 F4)") if on_demand
                     else ("workstation", "numbers/power.py workstation_cards (K02, NEC_15A, C14)"))
        return {"limit": kind, "value": max_gpus, "needed_gpus": needed, "source": src,
                "text": f"{box}: meeting the target needs about {needed:,} GPUs"}
    given = w.constraints.max_gpus is not None
    return {"limit": "max_gpus", "value": max_gpus, "needed_gpus": needed,
            "source": "constraints.max_gpus in the workload" if given else "the planner's ceiling (numbers/layouts.py MAX_GPUS)",
            "text": (f"max_gpus {max_gpus:,} ({'the workload' if given else 'the planner default'}) binds: "
                     f"meeting the target needs about {needed:,} GPUs")}


def budget_limit(w: Workload, tried: list) -> dict | None:
    """The `limits` entry of a budget per hour that kept the planner from a plan meeting the target (the
    cheapest per hour of the plans tried that meet it, each over the budget), or None (review 12: a 13B
    run within $50/h said only "no GPU meets the deadline")."""
    b = w.constraints.budget_usd_per_hour
    meets = [t for t in tried if b and not t[2].misses and t[2].usd_per_hour is not None and t[2].usd_per_hour > b]
    if not meets:
        return None
    m = min(meets, key=lambda t: (t[0], t[1]))[2]         # the one the planner would choose without the budget
    return {"limit": "budget_usd_per_hour", "value": b, "needed_gpus": m.count, "needed_usd_per_hour": round(m.usd_per_hour, 2),
            "source": "constraints.budget_usd_per_hour in the workload",
            "text": f"the ${b:,.2f}/h budget binds: meeting the target needs {m.count:,} x {m.gpu.id} at ${m.usd_per_hour:,.2f}/h"}


def no_layout_reason(w: Workload, led, gpu, max_gpus: int, engine=None, need: float | None = None) -> str:
    """Why no layout of the planner holds the workload on this GPU (a given layout the engine does not run
    or that splits wider than a node, pools that do not fit, or the memory), with the figure."""
    if w.layout and engine is not None and not engine.runs(w.layout):
        return f"{engine.name} does not run the given layout ({notation(w.layout)}; it runs {', '.join(sorted(engine.layouts))}, catalog/engines.yaml)"
    if w.layout and w.layout.split_width > gpu.gpus_per_node:
        width = w.layout.split_width
        what = f"TP {width} spans" if width == w.layout.tp else f"layout splits attention or an expert over {width} GPUs,"
        return (f"the given {what} more than the {gpu.gpus_per_node} GPUs of one node; "
                "tensor parallelism stays inside a node (K14)")
    if w.pools:
        # a pool whose TP cards each keep a copy of every sequence's cache (MLA's one latent head, or fewer
        # KV heads than cards) is the usual cause: said with the fix (review 19, F4)
        copies = [(name, pool.tp, kv_replication(led, pool)) for name, pool in (("prefill", w.pools.prefill), ("decode", w.pools.decode))]
        why = "".join(f"; the {name} pool's TP {tp} keeps {rep:g} copies of each sequence's KV cache (the model has "
                      f"{led.kv.kv_heads} KV head{'s' if led.kv.kv_heads > 1 else ''}): attention_dp {tp} with ep {tp} splits the "
                      f"sequences over its cards instead" for name, tp, rep in copies if rep > 1)
        return (f"the given disaggregated layout ({notation(w.stated_layout)}) does not hold its work on {gpu.memory_gb:g} GB "
                f"cards: each pool must hold the weights and its KV cache (the decode pool every sequence's) with "
                f"tensor splits inside one {gpu.gpus_per_node}-GPU node (K14), and the model's KV size must be known{why}")
    given = (notation(w.layout) if w.layout else f"at most {max_gpus}"
             + (" (constraints.max_gpus)" if w.constraints.max_gpus == max_gpus else ""))
    return (f"needs {_gb(need if need is not None else led.bytes('total_gb'))} and no layout of {given}"
            f" x {gpu.memory_gb:g} GB (TP <= {gpu.gpus_per_node} per node) holds it")
