"""Which layout: for one GPU, the tensor-, pipeline- and data-parallel split that holds the ledger."""
from __future__ import annotations

import math

from advisor.catalog import GPU
from advisor.numbers.ledger import TRAINING_SAFETY, Ledger
from advisor.numbers.terms import GB
from advisor.workload import Workload

MAX_GPUS = 4096                    # the planner's ceiling when the workload sets no max_gpus
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)


def _tp_options(gpu: GPU):
    return [t for t in TP_SIZES if t <= gpu.gpus_per_node]


def _k14(tp: int, pp: int, gpn: int) -> bool:
    """K14: tensor parallelism inside a node; a model that spans nodes fills each node with TP and
    runs pipeline stages across nodes."""
    return tp * pp <= gpn or tp == gpn


def plan_inference(w: Workload, led: Ledger, gpu: GPU, max_gpus: int):
    mem = gpu.memory_gb * GB
    fixed_total = led.bytes("weights_gb") + led.bytes("overhead_gb")
    act = led.bytes("activations_gb")
    kv_total = led.bytes("kv_cache_gb")
    kv_heads = led.kv.kv_heads if led.kv else None
    layers = int(w.model.num("layers") or 64)
    gpn = gpu.gpus_per_node
    best = None
    for tp in _tp_options(gpu):
        rep = max(1.0, tp / kv_heads) if kv_heads else 1.0
        for pp in range(1, layers + 1):
            if best and tp * pp > best[0]:
                break
            fixed = fixed_total / (tp * pp) + act / tp
            if fixed >= mem:
                continue
            kv_card = kv_total * rep / (tp * pp)
            if led.kv_fallback:   # a fixed reservation, not per-sequence: it cannot be spread over replicas
                dp = 1 if fixed + kv_card <= mem else None
            else:
                dp = max(1, math.ceil(kv_card / (mem - fixed) - 1e-9)) if kv_card > 0 else 1
                dp = min(dp, w.concurrency) if fixed + kv_card / min(dp, w.concurrency) <= mem else None
            if dp is None:
                continue
            count = tp * pp * dp
            if count > max_gpus or not _k14(tp, pp, gpn):
                continue
            nodes = math.ceil(count / gpn)
            pref = -tp if w.latency == "interactive" else tp
            key = (count, nodes, pp, pref)
            if best is None or key < best[1]:
                per_card = fixed + kv_card / dp
                best = (count, key, tp, pp, dp, per_card, rep)
    return best


def plan_training(w: Workload, led: Ledger, gpu: GPU, max_gpus: int):
    mem = gpu.memory_gb * GB / TRAINING_SAFETY
    W, G, O, A = (led.bytes(k) for k in ("weights_gb", "gradients_gb", "optimizer_gb", "activations_gb"))
    z = w.zero_stage
    sharded = (W if z >= 3 else 0) + (G if z >= 2 else 0) + (O if z >= 1 else 0)
    unsharded = W + G + O + A - sharded
    layers = int(w.model.num("layers") or 64)
    gpn = gpu.gpus_per_node
    best = None
    for tp in _tp_options(gpu):
        for pp in range(1, layers + 1):
            m = tp * pp
            if best and m > best[0]:
                break
            room = mem - unsharded / m
            if room <= 0:
                continue
            dp = 1 if sharded / m <= room else math.ceil(sharded / m / room - 1e-9)
            count = m * dp
            if count > max_gpus:
                break
            if not _k14(tp, pp, gpn):
                continue
            nodes = math.ceil(count / gpn)
            key = (count, nodes, pp, -tp)
            if best is None or key < best[1]:
                per_card = (unsharded / m + sharded / (m * dp)) * TRAINING_SAFETY
                best = (count, key, tp, pp, dp, per_card, 1.0)
    return best

