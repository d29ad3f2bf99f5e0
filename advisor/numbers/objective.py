"""What a plan is judged by: the unit its cost is counted per, and the order of plans under the
workload's objective (cost, time or cards). The planner, choosing among one GPU's layouts, and the
ranking, choosing among GPUs, both ask this module; no other place reads `objective`.
"""
from __future__ import annotations

import math

from advisor.numbers.layouts import rack_unit

# issue 21: with `objective: cost`, cost per job is nearly flat across data-parallel widths (the same
# GPU-hours), so the cheapest alone picks whichever width a tie-break favours; plans within this share
# of the cheapest cost per job count as equally cheap and the fastest of them wins
TIME_TOLERANCE = 0.05

UNIT_FIELD = {"job": "usd_per_job", "million_tokens": "usd_per_million_tokens",
              "million_training_tokens": "usd_per_million_tokens", "hour": "usd_per_hour",
              "thousand_images": "usd_per_thousand_images", "clip": "usd_per_clip"}
UNIT_LABELS = {"job": "per job", "million_tokens": "per million output tokens",
               "million_training_tokens": "per million training tokens", "hour": "per hour",
               "thousand_images": "per 1,000 images", "clip": "per clip"}


def unit_of_work(w) -> str:
    """What the cost is counted per: the training job (C16), else a million output tokens (T07: per
    million tokens or per thousand requests, not per card), for batch and interactive serving alike.
    Interactive plans are compared at the workload's concurrency, the sequences in flight: a plan that
    holds the service level faster finishes more of the users' requests in the hour with the same
    sequences in flight, so its hour buys more work, and ranking by the hour (as before issue 20) let a
    slower card that just holds the limit win at a higher cost per request (Llama 3.1 405B FP8 for 32
    users: 8 x A100 at $4.80 per million tokens over 8 x H100 at $3.45). The service level, not the
    ranking, keeps every user's speed."""
    if w.kind_spec.cost_unit:      # a kind counted in its own units (images, clips)
        return w.kind_spec.cost_unit
    if w.training:   # without a token budget, per million training tokens: what the job costs whatever its size
        # an RL run's volume may be its steps (rl_steps) instead of its tokens
        return "job" if w.training_tokens or getattr(w, "rl_steps", None) else "million_training_tokens"
    return "job" if w.kind_spec.job else "million_tokens"


def minimises_cost(w) -> bool:
    return w.objective == "cost"


def minimises_time(w) -> bool:
    return w.objective == "time"


def describe(w, unit: str) -> str:
    """The objective in words, as the plan's `why` gives it."""
    return {"cost": f"the lowest cost {UNIT_LABELS[unit]}", "time": "the shortest time", "cards": "the fewest cards"}[w.objective]


def unit_cost(plan, unit: str) -> float | None:
    return getattr(plan, UNIT_FIELD[unit])


def plan_time(w, plan) -> float | None:
    """The time `objective: time` minimises: the kind's time figure (training hours, a batch job's hours,
    or ms per output token)."""
    return getattr(plan, w.kind_spec.time_field, None)


def money(plan, unit: str, rate_per_gpu_hour: float | None, cards: int | None = None):
    """(cost per unit of work, priced?): the plan's own price, or, to compare one GPU's layouts only,
    its cards (`cards`, else the plan's) at the cheapest per-GPU rate of the GPU's own quotes (never
    shown as a price)."""
    v = unit_cost(plan, unit)
    if v is not None or rate_per_gpu_hour is None:
        return v, v is not None
    per_hour = rate_per_gpu_hour * (cards or plan.count)
    if unit == "hour":
        return per_hour, False
    if unit == "job":
        # the job's hours: a training run's, or an offline batch job's (only one of them is set)
        hours = plan.training_hours if plan.training_hours is not None else plan.job_hours
        return (per_hour * hours if hours is not None else None), False
    if plan.hours_per_unit is not None:       # a kind counted in its own units: the plan's hours per unit
        return per_hour * plan.hours_per_unit, False
    return (per_hour * plan.hours_per_million_tokens if plan.hours_per_million_tokens else None), False


def shortfall(w, plan) -> float:
    """How far a plan is from its stated deadline or service level: the largest ratio of its figure to
    the target (training hours to the deadline; first-token and per-token time to theirs); 1 or less
    when it meets them all, 0 when there is no target."""
    if w.kind_spec.job:
        dl, hours = w.constraints.deadline_hours, plan_time(w, plan)
        return hours / dl if dl and hours is not None else 0.0
    ratios = [fig / target for fig, target in ((plan.ttft_ms, w.ttft_ms), (plan.tpot_ms, w.tpot_ms))
              if target and fig is not None]
    target = getattr(w, w.kind_spec.time_field, None) if not w.kind_spec.tokens else None
    t = plan_time(w, plan)
    if target and t is not None:            # image or video generation: its latency target per image or clip
        ratios.append(t / target)
    if w.requests_per_s and plan.capacity_requests_per_s:
        # past its capacity a plan has no first-token time: how far the rate is beyond what it holds
        ratios.append(w.requests_per_s / plan.capacity_requests_per_s)
    return max(ratios, default=0.0)


def misses(w, sp, load=None) -> str | None:
    """The stated deadline or service level a plan of this speed (`sp`: numbers.speed.Speed) misses, with
    the figure that missed (`load`: queueing.Load, the plan at the workload's arrival rate, whose capacity
    may be below it)."""
    if w.kind_spec.job:
        dl, hours = w.constraints.deadline_hours, plan_time(w, sp)
        if dl and hours is not None and hours > dl * (1 + 1e-9):
            return f"{hours:,.1f} h, over the {dl:g} h deadline"
        return None
    # every figure that misses is named, so a plan over both limits is not read as missing one
    missed = []
    if load is not None and load.saturated:
        missed.append(f"capacity {sp.capacity_requests_per_s:,.2f} requests/s < {w.requests_per_s:g} requested")
    if w.ttft_ms and sp.ttft_ms is not None and sp.ttft_ms > w.ttft_ms * (1 + 1e-9):
        missed.append(f"time to first token {sp.ttft_ms:,.0f} ms, over the {w.ttft_ms:,.0f} ms target")
    if w.tpot_ms and sp.tpot_ms is not None and sp.tpot_ms > w.tpot_ms * (1 + 1e-9):
        missed.append(f"time per output token {sp.tpot_ms:,.1f} ms, over the {w.tpot_ms:g} ms target")
    if not missed:
        return None
    whose = f" ({w.service_level_source}; state latency: to set your own)" if w.service_level_source else ""
    return "; ".join(missed) + whose


#: plans that all miss their target and come within this share of the nearest one's shortfall are
#: equally close (a stated choice, below the speed model's own error, catalog model_error ~12%): the
#: objective then decides among them. Without it a plan 2% nearer for three times the rent won
#: (Llama 3.1 8B at tpot_ms 4: 24 x B200 disaggregated at 4.2 ms over 8 x B200 TP 8 at 4.3 ms).
CLOSE_SHARE = 0.10


def closeness(w, plan, best: float | None = None) -> float:
    """The order of plans that all miss their target: the nearest first, in steps of a tenth of the
    target, so a plan a few percent nearer but much dearer does not win on a difference smaller than
    the speed model's own error (catalog model_error, ~12%); given `best`, the nearest shortfall of the
    plans compared, a plan within CLOSE_SHARE of it ranks with it (the steps alone would split 1.04x
    from 1.06x)."""
    if plan.misses is None:
        return 0.0
    gap = shortfall(w, plan)
    if best is not None and gap <= best * (1 + CLOSE_SHARE):
        gap = best
    return round(gap, 1)


def nearest(w, plans) -> float | None:
    """The smallest shortfall of the plans that miss their target (closeness's `best`), None if none does."""
    return min((shortfall(w, p) for p in plans if p.misses is not None), default=None)


def nearest_first(w, tried: list) -> None:
    """Sort the planner's tried layouts (plantable.Tried rows) best first; when
    every plan misses its target, those within CLOSE_SHARE of the nearest shortfall rank as equally close."""
    tried.sort(key=lambda t: (t.key, t.order))
    if tried and tried[0].plan.misses is not None:
        best = nearest(w, [t.plan for t in tried])
        tried.sort(key=lambda t: ((True, closeness(w, t.plan, best)) + t.key[2:], t.order))


def plan_key(w, plan, unit: str, rate: float | None):
    """How the planner orders one GPU's layouts: a plan that misses a stated target last (the nearest
    of those first), then the
    objective (cost: the fewest GPUs rented, then the cost per unit of work), a priced plan before an
    unpriced one, no idle rented GPUs, fewer cards, the least model parallelism (pipeline bubbles, TP
    traffic), the lowest ZeRO stage (C12), then the shorter time per output token."""
    cost, priced = money(plan, unit, rate)
    if cost is not None:
        cost = float(f"{cost:.9g}")   # equal costs compare equal whatever the float rounding
    # each figure read once: a plan's figures are properties of its parts, and every layout tried is keyed
    price, lay, tpot = plan.price, plan.layout, plan.tpot_ms
    count = lay.count
    idle = (price or {}).get("idle_gpus") or 0
    gpn, rack = plan.gpu.gpus_per_node, rack_unit(plan.gpu)
    if price is None and (rack or (w.training and count > gpn)):
        idle = -count % gpn        # unpriced: a multi-node job (or any job on a rack sold whole, NVL72) takes whole nodes (K14)
    inf = math.inf
    cost_or_inf = cost if cost is not None else inf
    if w.objective == "time":
        # the fastest priced plan first: the decision ranks time among the priced options, so a faster
        # unpriced layout of the same GPU would hide it (review 12)
        t = plan_time(w, plan)
        first = (not priced, t if t is not None else inf, cost_or_inf)
    elif w.objective == "cards":
        first = (count, cost_or_inf)
    else:
        # the smallest rental that holds the job first: more replicas only pay under perfect scaling,
        # which experts do not count on (T03, C18); a deadline or service level adds them. A GPU with
        # no quote at all is costed at one rate per GPU-hour (the order of its own layouts is the same
        # at any rate): the nodes a job rents are its own, so their cards count whether it uses them or
        # not; on a rack sold whole (NVL72) only the cards it uses count, so that of the layouts on one
        # rack the one doing the work in the fewest GPU-hours comes first (DeepSeek-R1 FP4 for 4,096
        # users: DEP 32 at 4,180 tokens/s per GPU, not DEP 4 x 18 at 1,590, which had won as the
        # narrower TP with no idle cards), and a small job is not spread over the rack to fill it (a
        # LoRA of a 7B model had read 72 GB200s): whether its rack pays is the rules' call
        # (rack-scale-system-for-a-small-job, most-rented-gpus-idle)
        if cost is None and rate is None:
            cost_or_inf = money(plan, unit, 1.0, count if rack else count + idle)[0]
            cost_or_inf = inf if cost_or_inf is None else float(f"{cost_or_inf:.9g}")
        first = (count + idle, cost_or_inf)
    # last, among one TP group's expert-parallel and attention-DP forms (same cards, same price): the faster
    return ((plan.misses is not None, closeness(w, plan)) + first + (not priced, idle, count, lay.tp * lay.pp, lay.zero_stage or 0, lay.tp, lay.pp)
            + (tpot if tpot is not None else 0.0,))


def rank_key(objective: str, basis: str, option):
    """The order of GPUs in the ranking: by effective cost (cost after the rules' premiums), by time,
    or by cards; by preference (score) when no candidate has a price (judgement.ranking)."""
    inf = math.inf
    pref = (-option.score, option.count, option.gpu)
    if basis == "preference":
        if objective == "time":
            return (option.time if option.time is not None else inf,) + pref
        if objective == "cards":
            return (option.count, -option.score, option.gpu)
        return pref
    eff = option.effective if option.effective is not None else inf
    if objective == "time":
        return (option.time if option.time is not None else inf, eff, option.count, option.gpu)
    if objective == "cards":
        return (option.count, eff, option.gpu)
    return (eff, option.count, option.gpu)


def fastest_within_tolerance(w, ordered: list, unit: str, rate: float | None):
    """Among `ordered` (plantable.Tried rows, best first by plan_key) the one `objective:
    cost` keeps for a training job of known size: of the plans that meet the target and cost at most
    TIME_TOLERANCE over the cheapest per job, the fastest; of those within TIME_TOLERANCE of its time,
    the cheapest (then the first by plan_key)."""
    if not (minimises_cost(w) and w.kind_spec.job and unit == "job"):
        return ordered[0]
    pool = [t for t in ordered if not t.plan.misses]
    if not pool:
        return ordered[0]       # every plan misses: the nearest the target (plan_key), not the cheapest
    priced = [(money(t.plan, unit, rate)[0], t) for t in pool]
    priced = [(c, t) for c, t in priced if c is not None and plan_time(w, t.plan) is not None]
    if not priced:
        return ordered[0]
    cheapest = min(c for c, _ in priced)
    near = [(c, t) for c, t in priced if c <= cheapest * (1 + TIME_TOLERANCE)]
    # the fastest, unless a cheaper one finishes within the same tolerance of its time: 3% more money
    # for an hour less of 2,158 buys nothing a user would pay for
    fastest = min(plan_time(w, t.plan) for _, t in near)
    as_fast = [(c, t) for c, t in near if plan_time(w, t.plan) <= fastest * (1 + TIME_TOLERANCE)]
    return min(as_fast, key=lambda ct: (float(f"{ct[0]:.9g}"), ordered.index(ct[1])))[1]


def within_budget(w, tried: list) -> list:
    """The planner's tried plans (plantable.Tried rows) a stated budget per hour allows
    (unpriced ones cannot be held to it), or all of them when none is within it: the rule over-budget then
    excludes the GPU with the figure, instead of a bigger plan of it being excluded while a smaller one
    would have fitted the budget."""
    b, job = w.constraints.budget_usd_per_hour, w.constraints.budget_usd
    if not b and not job:
        return tried
    ok = [t for t in tried if (not b or t.plan.usd_per_hour is None or t.plan.usd_per_hour <= b)
          and (not job or t.plan.usd_per_job is None or t.plan.usd_per_job <= job)]
    return ok or tried


def budget_cards(w, tried: list, rate_per_gpu_hour: float | None, per_node: int = 1) -> int | None:
    """The cards a stated budget per hour pays for at the GPU's cheapest rate (whole nodes beyond one),
    when a target is stated and no plan tried both meets it and fits the budget (the planner then searches
    within that many: the closest plan, not a small one that misses by far), or under `objective: time`
    (the fastest plan the budget pays for); None otherwise."""
    b = w.constraints.budget_usd_per_hour
    # `objective: time` within a budget: the most cards it pays for is the fastest plan to try (review 12)
    fastest = minimises_time(w)
    if not (b and rate_per_gpu_hour and tried and (fastest or w.constraints.deadline_hours or w.ttft_ms or w.tpot_ms)):
        return None
    if not fastest and any(not t.plan.misses and t.plan.usd_per_hour is not None and t.plan.usd_per_hour <= b for t in tried):
        return None
    # the rate the plans meeting the target are priced at (beyond a listing's on-demand capacity, a
    # reservation's or contract's), not the cheapest listing's, which may only rent a few instances
    meeting = [t.plan.usd_per_hour / t.plan.count for t in tried if not t.plan.misses and t.plan.usd_per_hour and t.plan.count]
    rate_per_gpu_hour = min(meeting) if meeting and not fastest else rate_per_gpu_hour
    cards = int(b // rate_per_gpu_hour)
    return (cards // per_node * per_node if cards >= per_node else cards) or None


def times(ratio: float) -> str:
    """A shortfall as a multiple of its target: two decimals near 1 (1.04x, not "1.0x" for a plan that
    misses), one beyond."""
    return f"{ratio:.2f}x" if ratio < 1.1 else f"{ratio:.1f}x"


def lost_to(w, plan, chosen, unit: str, rate: float | None, ahead: bool = False) -> str:
    """Why the planner kept `chosen` over `plan`, two layouts of one GPU, in words: the first figure of
    its order that separates them (plan_key, within_budget, nearest_first, fastest_within_tolerance).
    `ahead`: `plan` came first by plan_key, and a tolerance or the budget chose the other."""
    if plan.misses is not None and chosen.misses is None:
        return f"misses: {plan.misses}"
    b = w.constraints.budget_usd_per_hour
    if b and plan.usd_per_hour is not None and plan.usd_per_hour > b >= (chosen.usd_per_hour or 0):
        return f"${plan.usd_per_hour:,.2f}/h, over the ${b:,.2f}/h budget"
    if plan.misses is not None:
        return f"further from the target: {plan.misses}"
    mine, theirs = unit_cost(plan, unit), unit_cost(chosen, unit)
    if ahead and minimises_cost(w) and w.training and plan.training_hours and chosen.training_hours:
        return (f"{_money(mine)} {UNIT_LABELS[unit]} in {plan.training_hours:,.1f} h; of the plans within "
                f"{TIME_TOLERANCE:.0%} of the cheapest the chosen finishes sooner: {_money(theirs)} in {chosen.training_hours:,.1f} h")
    if w.objective == "time":
        t, tc = plan_time(w, plan), plan_time(w, chosen)
        if t is not None and tc is not None and t > tc * (1 + 1e-9):
            return f"slower: {_time(w, t)} against {_time(w, tc)}"
    if w.objective == "cards" and plan.count > chosen.count:
        return f"{plan.count} cards against {chosen.count}"
    if w.objective == "cost":
        rented, chosen_rented = _rented(plan), _rented(chosen)
        if rented > chosen_rented:
            return f"rents {rented} GPUs where {chosen_rented} hold it"
    if mine is not None and theirs is not None and float(f"{mine:.9g}") > float(f"{theirs:.9g}"):
        return f"{_money(mine)} against the chosen's {_money(theirs)} {UNIT_LABELS[unit]}"
    if mine is None and theirs is not None:
        return "no price for this rental"
    idle = ((plan.price or {}).get("idle_gpus") or 0, (chosen.price or {}).get("idle_gpus") or 0)
    if idle[0] > idle[1]:
        return f"{idle[0]} of its rented GPUs idle"
    if plan.count > chosen.count:
        return f"{plan.count} cards against {chosen.count} at the same cost"
    lay, mine_lay = chosen.layout, plan.layout
    if mine_lay.tp * mine_lay.pp > lay.tp * lay.pp:
        return f"more model parallelism (TP x PP {mine_lay.tp * mine_lay.pp} against {lay.tp * lay.pp}) at the same cost"
    if (mine_lay.zero_stage or 0) > (lay.zero_stage or 0):
        return f"ZeRO stage {mine_lay.zero_stage} where stage {lay.zero_stage or 0} fits"
    if plan.tpot_ms is not None and chosen.tpot_ms is not None and plan.tpot_ms > chosen.tpot_ms:
        return f"slower per output token ({plan.tpot_ms:,.1f} ms against {chosen.tpot_ms:,.1f} ms) at the same cost"
    return "the same figures; the one tried first is kept"


def _rented(plan) -> int:
    return plan.layout.count + ((plan.price or {}).get("idle_gpus") or 0)


def _money(v: float | None) -> str:
    if v is None:
        return "unpriced"
    return f"${v:,.2f}" if v >= 10 else f"${v:.3g}"


def _time(w, t: float) -> str:
    return f"{t:,.1f} h" if w.kind_spec.job else f"{t:,.1f} ms per output token"
