"""One plan per GPU for image or video generation: the replica's form (one card; CFG-parallel on two or
Ulysses sequence-parallel over 2-8 only when the latency target asks for it, or when one card cannot
hold the activations), the replicas the rate or the requests in flight need, the hourly price of those
cards and the cost per 1,000 images or per clip.

Practice (xDiT, diffusers, Wan and HunyuanVideo's own multi-GPU scripts): a diffusion model is served
as whole replicas, one per card, for throughput; tensor parallelism is not used (the denoiser fits a
card, and splitting its matmuls only adds all-reduces); sequence parallelism buys a clip's latency.
"""
from __future__ import annotations

import math
from dataclasses import replace

from advisor.inputs.catalog import GPU, Catalog
from advisor.inputs.parallel import Layout
from advisor.inputs.workload import Workload
import advisor.kinds.diffusion.speed as dspeed
from advisor.kinds.diffusion.ledger import per_card_bytes
from advisor.kinds.diffusion.shape import Shape, clip_seconds
from advisor.kinds.diffusion.cost import DiffusionCost, priced
from advisor.numbers.cardmemory import Memory
from advisor.numbers.cost import plan_cost
from advisor.numbers.ledger import Ledger
from advisor.numbers.plan import Plan
from advisor.numbers.terms import GB

#: replicas sized for a rate are kept at most this busy, so that requests seldom queue behind another
#: (an M/D/1 queue at 80% load waits on average twice the service time; an assumption, stated in the memo)
TARGET_BUSY = 0.8
SP_DEGREES = (1, 2, 4, 8)


def forms(s: Shape, gpu: GPU) -> list[tuple[int, int]]:
    """(cfg, sp) forms of one replica inside a node, fewest cards first; at the same cards CFG parallelism
    first (it exchanges one noise prediction per step, sequence parallelism four all-to-alls per block)."""
    cfgs = (1, 2) if s.passes == 2 else (1,)
    out = [(c, p) for c in cfgs for p in SP_DEGREES if c * p <= max(gpu.gpus_per_node, 1)]
    return sorted(out, key=lambda f: (f[0] * f[1], -f[0]))


def plan_for(w: Workload, s: Shape, led: Ledger, gpu: GPU, catalog: Catalog) -> Plan:
    video = s.frames > 1
    fitting = [f for f in forms(s, gpu) if per_card_bytes(led, f[1]) <= gpu.memory_gb * GB]
    if not fitting:
        need = per_card_bytes(led, max(SP_DEGREES))
        return Plan(gpu, False, reason=(f"needs {led.bytes('total_gb') / GB:,.1f} GB on one card ({need / GB:,.1f} GB with its "
                                        f"activations split over {max(SP_DEGREES)} cards: the weights are whole on each); "
                                        f"the card has {gpu.memory_gb:g} GB"))
    timed = [(f, *dspeed.replica_seconds(w, s, gpu, catalog, f)) for f in fitting]
    target = getattr(w, w.kind_spec.time_field, None)
    meeting = [t for t in timed if target is None or t[1] <= target * (1 + 1e-9)]
    if target is None:
        chosen = timed[0]                         # the fewest cards: parallelism only adds communication
        why_form = "one card per replica: nothing asks for a faster image" if chosen[0] == (1, 1) else \
            f"the fewest cards that hold the activations ({chosen[0][0] * chosen[0][1]})"
    elif meeting:
        chosen = meeting[0]
        why_form = (f"the fewest cards per replica that meet the {target:g} s target" if chosen[0] != (1, 1)
                    else f"one card per replica meets the {target:g} s target")
    else:
        chosen = min(timed, key=lambda t: t[1])
        why_form = f"the fastest form tried; none meets the {target:g} s target"
    (cfg, sp), seconds, parts, how = chosen
    if cfg * sp == 1 and per_card_bytes(led, 1) * 2 <= gpu.memory_gb * GB:
        # memory would hold two copies, compute would not: the denoiser keeps the card busy at batch 1
        why_form += (f" (the card's memory would hold {int(gpu.memory_gb * GB // per_card_bytes(led, 1))} copies, but a "
                     "second copy on it shares the same compute and adds no throughput)")
    per_request = seconds * (1 if video else s.images)
    replicas, why_replicas = replicas_for(w, s, per_request)
    count = replicas * cfg * sp
    if w.constraints.max_gpus and count > w.constraints.max_gpus:
        replicas = max(1, w.constraints.max_gpus // (cfg * sp))
        count = replicas * cfg * sp
        why_replicas += f"; capped at {replicas} by max_gpus {w.constraints.max_gpus}"
    per_card = per_card_bytes(led, sp)
    lay = Layout(tp=1, pp=1, dp=replicas, per_card_bytes=per_card, cfg=cfg, sp=sp)
    capacity_units_s = replicas / per_request * (1 if video else s.images)     # images (clips) per second at full use
    served = (w.requests_per_s * (1 if video else s.images)) if w.requests_per_s else capacity_units_s
    sp_ = speed_of(w, s, seconds, parts, how, replicas, count, capacity_units_s, served, video)
    nodes = math.ceil(count / gpu.gpus_per_node)
    cost = priced(plan_cost(gpu, catalog, count, nodes, cfg * sp, w), sp_, w, s, clip_seconds(s, w.model))
    missed = None
    if target is not None and seconds > target * (1 + 1e-9):
        missed = f"{seconds:,.1f} s per {'clip' if video else 'image'}, over the {target:g} s target"
    if w.requests_per_s and capacity_units_s < w.requests_per_s * (1 if video else s.images) * (1 - 1e-9):
        missed = (missed + "; " if missed else "") + f"capacity {capacity_units_s / (1 if video else s.images):,.2f} requests/s < {w.requests_per_s:g} requested"
    why = {"layout": f"{why_form}; {why_replicas}",
           "per_card_gb": f"weights {led.bytes('weights_gb') / GB:,.1f} GB + runtime {led.bytes('overhead_gb') / GB:g} GB + activations "
                          f"{led.bytes('activations_gb') / GB:,.1f} GB" + (f" / SP {sp}" if sp > 1 else ""),
           **sp_.why, **cost.why}
    return Plan(gpu, True, lay, Memory(per_card / GB, gpu.memory_gb - per_card / GB), sp_, cost,
                compute_precision=dspeed.compute_precision(w, gpu), misses=missed, min_count=fitting[0][0] * fitting[0][1],
                layouts_considered=len(timed), why=why)


def replicas_for(w: Workload, s: Shape, per_request_s: float) -> tuple[int, str]:
    """Replicas for the workload's rate (each kept at most TARGET_BUSY busy) or, without one, one per
    request in flight (each request's images batched on its replica)."""
    if w.requests_per_s:
        n = max(1, math.ceil(w.requests_per_s * per_request_s / TARGET_BUSY - 1e-9))
        return n, (f"{n} replica{'s' if n > 1 else ''} for {w.requests_per_s:g} requests/s x {per_request_s:,.2f} s each "
                   f"at most {TARGET_BUSY:.0%} busy")
    n = max(1, w.concurrency)
    return n, f"{n} replica{'s' if n > 1 else ''}: one per request in flight (concurrency {w.concurrency})"


def speed_of(w, s: Shape, seconds: float, parts: dict, how: str, replicas: int, count: int, capacity: float,
             served: float, video: bool) -> dspeed.DiffusionSpeed:
    why = {("seconds_per_clip" if video else "seconds_per_image"): how}
    explained = {"latent_patches": s.how["latent_patches"], "step_flops": s.how["step_flops"], "passes": s.how["passes"],
                 **{k: round(v, 4) for k, v in parts.items()}}
    common = dict(concurrency=replicas, capacity_requests_per_s=capacity / (1 if video else s.images),
                  latent_patches=s.tokens, speed_explained=explained, why=why)
    if video:
        per_hour = served * 3600
        return dspeed.DiffusionSpeed(seconds_per_clip=seconds, clips_per_hour_per_gpu=3600 / seconds / (count / replicas),
                                     clips_per_hour=per_hour, hours_per_unit=1 / per_hour, **common)
    return dspeed.DiffusionSpeed(seconds_per_image=seconds, images_per_s_per_gpu=1 / seconds / (count / replicas),
                                 images_per_s=served, hours_per_unit=1000 / (served * 3600), **common)


def with_misses(p: Plan, text: str | None) -> Plan:
    return replace(p, misses=text)
