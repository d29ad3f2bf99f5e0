"""How many data-parallel replicas the planner tries for a base layout (split from numbers.planner): the
fewest the memory allows and enough to fill the instances rented (K13), the count a deadline or service
level needs, and for a training job with a stated global batch only counts that split it evenly.
"""
from __future__ import annotations

import math

from advisor.inputs.catalog import GPU
from advisor.inputs.workload import Workload
from advisor.numbers import objective
from advisor.numbers.layouts import MAX_GPUS, Layout
from advisor.numbers.limits import batch_replicas, replica_cap
from advisor.numbers.plan import Plan
from advisor.numbers.trainspeed import planned_micro_batches

MAX_CARD_FACTOR = 2      # a plan may use at most this multiple of the fewest cards, unless a deadline or service level needs more


def deadline_cards(tried) -> int:
    """Twice the fewest cards of the plans that meet the deadline or service level (all when none does)."""
    ok = [t[2].count for t in tried if not t[2].misses]
    return min(ok) * MAX_CARD_FACTOR if ok else max(t[2].count for t in tried)


def dp_options(w: Workload, gpu: GPU, base: Layout, sizes: list[int], max_gpus: int, max_tokens: float = 0.0,
               on_demand: int | None = None) -> list[int]:
    """Replica counts worth trying for a base layout: the fewest memory allows, enough to fill the
    instances they are rented in (K13), and, with `objective: time`, as many as max_gpus allows (without
    it, as many as `on_demand` GPUs, what one listing rents at once); never more than the global batch
    feeds (the stated one, or `max_tokens` per step: limits.replica_cap)."""
    m = base.tp * base.pp
    out = {base.min_dp}
    gpn = gpu.gpus_per_node
    group = min(base.count, gpn) if w.training else min(m, gpn)
    usable = [s for s in sizes if s >= group]
    if not usable and w.training and base.count > gpn:
        usable = [gpn]               # no instance prices it: a job beyond one node still takes whole nodes (K14)
    for s in usable:
        if m > s and m % s:          # a replica spanning instances uses whole ones only
            continue
        rented = math.ceil(base.count / s) * s
        out.add(max(base.min_dp, rented // m))
    cap = max_gpus // m
    if not w.training and not w.volume:
        # (an offline batch job's replicas each run their largest batch: more of them finish its volume
        # sooner, not at a cost per job of their own, so the instances rented are filled: K13)
        cap = min(cap, max(base.min_dp, w.concurrency))
    rc = replica_cap(w, max_tokens)
    if rc is not None and base.min_dp > rc:
        return []                    # the batch cannot give each replica the memory's fewest a micro-batch
    cap = min(cap, rc) if rc is not None else cap
    # `objective: time`: as many as the stated ceiling, or the cards a budget pays for (the planner's search
    # again within them, objective.budget_cards), or else what one listing rents on demand (without a
    # ceiling the fastest plan had been the fewest cards, 8 x B200 for 1,637 h where `cost` took 663 h,
    # review 16), and the doublings below it: a price per GPU-hour grows with the count (a contract beyond
    # the on-demand listings) or has no source there, so the most cards allowed may cost more than the
    # budget, or be unpriced where fewer are not (review 12: 256 x B200 unpriced hid 128 on demand)
    ceiling = (w.constraints.max_gpus or (max_gpus if w.constraints.budget_usd_per_hour and max_gpus < MAX_GPUS else None)
               or on_demand)
    top = min(cap, ceiling // m) if ceiling else None
    if objective.minimises_time(w) and top:
        out.add(max(base.min_dp, top))
        d = base.min_dp
        while d * 2 <= top:
            d *= 2
            out.add(d)
    if w.global_batch and rc is not None:
        # the planner's own replica counts split the stated batch evenly (a given layout is as given)
        out = {b for b in (batch_replicas(w, d) for d in out) if b is not None}
    return sorted(d for d in out if d <= cap) or [base.min_dp]


#: rounds of sizing a training plan's replicas for its deadline from the last plan tried (the time does
#: not fall in proportion to the replicas when a stated global batch spreads over more of them)
TARGET_ROUNDS = 3


def target_replicas(w: Workload, lay: Layout, p: Plan, max_gpus: int, refused: dict | None = None, cal=None) -> list[int]:
    """Replica counts to try when a plan misses a stated target: for a deadline, the count that
    finishes in time by compute (and a few more, for a speed model that does not scale linearly);
    for a service level, doublings up to one replica per sequence (each serving fewer users, T06).
    A count beyond `max_gpus` is not tried: the fewest GPUs it would need goes into `refused`."""
    m = lay.tp * lay.pp
    tokens = cal.batch_tokens(w) if cal is not None else 0.0
    rc = replica_cap(w, tokens)      # (called for every plan that misses: the figures it reads are read once)
    if w.training:
        if not p.training_hours:
            return []
        count, deadline, stated = p.count, w.constraints.deadline_hours, w.goodput
        cards = count * p.training_hours / deadline
        if cal is not None and p.step_hours and p.goodput:
            # the goodput falls as the cluster grows (more interruptions per hour): solve for it; the plan's
            # per-step overhead share (calibration.goodput's step term) does not change with the replicas
            # (with a stated global batch it grows as the steps shorten: the planner sizes again from the plan)
            per_step, step_hours = p.goodput / cal.goodput(count, stated=stated, explain=False)[0], p.step_hours
            for _ in range(4):
                cards = count * step_hours / deadline / (
                    per_step * cal.goodput(max(1, round(cards)), stated=stated, explain=False)[0])
        need = math.ceil(cards / m - 1e-9)
        wanted = need * m        # the GPUs the deadline needs, whatever the batch bound lets the planner try
        out = [need + extra for extra in range(4)]
        # the planner's own batch binds once 4 micro-batches per stage of `need` replicas exceed it: then,
        # as with a stated batch, counts that split it evenly (whole micro-batches per replica, a multiple
        # of a power-of-two pipeline's stages, so the interleaved schedule runs)
        even = w.global_batch or (rc is not None and lay.pp > 1 and planned_micro_batches(lay.pp) * need > rc)
        if rc is not None and need <= rc and even:
            # counts that split the batch evenly: the first at or past the need, and the next
            first = batch_replicas(w, need, tokens)
            nxt = batch_replicas(w, first + 1, tokens)
            out = [first] + ([nxt] if nxt is not None else [])
        if rc is not None and even and lay.pp > 1:
            # and the most replicas that still give each one a micro-batch per stage (a full interleaved
            # pipeline: Llama 3 405B's DP 128 x PP 16 at 2,048 sequences): the closest plan when more miss
            full = batch_replicas(w, max(1, rc // lay.pp), tokens)
            out = sorted(set(out) | ({full} if full and full < out[0] else set()))
        if rc is not None and need > rc:
            # the global batch (stated, or the planner's bound) feeds at most rc replicas: the closest plan
            # takes them all; a deeper pipeline (another base layout) may meet the deadline within it
            out = [rc]
            if refused is not None:
                refused["batch"] = max(refused.get("batch", 0), need)
    elif w.volume:
        # an offline batch job's deadline: its replicas each run their largest batch, so its hours fall in
        # proportion to them (numbers.batchjob); the count that finishes in time, and one more for the
        # speed model's rounding
        if not p.job_hours or not w.constraints.deadline_hours:
            return []
        need = math.ceil(lay.dp * p.job_hours / w.constraints.deadline_hours - 1e-9)
        wanted = need * m
        out = [need, need + 1]
    else:
        # with an arrival rate, up to the replicas that would each hold one sequence of the
        # rate x output x TPOT in flight (Little's law at this plan's TPOT: more than enough)
        bound = w.concurrency
        if w.requests_per_s and p.tpot_ms:
            bound = max(bound, math.ceil(w.requests_per_s * w.output_tokens * p.tpot_ms / 1e3))
        out, d = [], lay.dp
        while d < bound:
            d = min(bound, d * 2)
            out.append(d)
    over = [d * m for d in out if d * m > max_gpus]
    if over and refused is not None:
        # a deadline's need is its own count, not the batch-capped one tried for the closest plan (review 13:
        # "needs about 2,048 GPUs" for a job that needs 13,096 in its hour)
        refused["needed"] = min(refused.get("needed", math.inf), max(wanted, max_gpus + 1) if w.kind_spec.job else min(over))
    within = [d for d in out if d * m <= max_gpus and (rc is None or d <= rc)]
    most = max_gpus // m
    if over and most > max(within, default=lay.dp) and (rc is None or most <= rc):
        # the target needs more than max_gpus: the most replicas within it come closest (a second
        # review's 8B in 72 h within 40 H100: 8 cards at 316 h were kept beside a 41-card need)
        within.append(most)
    return within


def kept_targets(kept: dict, w: Workload, lay: Layout, p: Plan, max_gpus: int, refused: dict, cal=None) -> list[int]:
    """target_replicas, asked once per layout and ceiling of one GPU's search and workload variant (`kept`: the
    search's, whose layouts each have one plan: planner._search_layouts): a search run again (deeper pipelines,
    a budget's cards) asks again of the same plans. What it wrote into `refused` is written again each time."""
    got = kept.get((lay, max_gpus))
    if got is None:
        mine: dict = {}
        got = kept[lay, max_gpus] = (target_replicas(w, lay, p, max_gpus, mine, cal), mine)
    out, mine = got
    if "batch" in mine:
        refused["batch"] = max(refused.get("batch", 0), mine["batch"])
    if "needed" in mine:
        refused["needed"] = min(refused.get("needed", math.inf), mine["needed"])
    return out


def fewer_replicas_missed(w: Workload, tried: list, lay: Layout) -> Plan | None:
    """Of the plans tried in the chosen serving layout's shape (TP, PP, EP, attention DP) with fewer
    replicas than it, the one with the most that missed the service level (None: none did)."""
    if w.training or lay.pools or lay.dp <= lay.min_dp:
        return None
    shape = lay.form
    missed = [t[2] for t in tried if t[2].misses and t[2].layout is not None and not t[2].layout.pools
              and t[2].layout.form == shape and t[2].layout.dp < lay.dp]
    return max(missed, key=lambda p: p.layout.dp, default=None)
