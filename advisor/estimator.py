"""The numeric estimator: puts the numbers together for a workload and every candidate GPU.

The memory ledger (`numbers.ledger`), the layout (`numbers.plan`), the speed (`numbers.speed`) and
the cost (`numbers.cost`) each live in a module of their own; this one sizes every candidate with
them and holds the result. Pure functions over a Workload and the Catalog; no I/O, and no decisions
(rules decide). Every figure carries how it was computed, so that a memo can say "why 65 GB".
GB means 10^9 bytes throughout.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

from advisor.catalog import GPU, Catalog
from advisor.numbers import cost, plan, speed
from advisor.numbers.cost import job_cost  # noqa: F401  (re-exported)
from advisor.numbers.ledger import LEDGER_KEYS, Ledger, inference_ledger, training_ledger
from advisor.numbers.terms import GB, Term, _gb, _r  # noqa: F401  (re-exported)
from advisor.workload import Workload

@dataclass(eq=False)
class Candidate:
    """One GPU sized for the workload: count, layout, speed, power and cost."""

    gpu: GPU
    fits: bool
    count: int | None = None
    nodes: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    per_card_gb: float | None = None
    headroom_gb: float | None = None
    kv_headroom_gb: float | None = None
    compute_precision: str = "bf16"
    prefill_ms: float | None = None
    decode_ms_per_token: float | None = None
    tokens_per_s: float | None = None
    tokens_per_s_per_user: float | None = None
    max_concurrency: float | None = None
    max_context_tokens: float | None = None
    training_hours: float | None = None
    power_kw_per_node: float | None = None
    usd_per_hour: float | None = None
    usd_per_million_tokens: float | None = None
    usd_per_job: float | None = None
    price: dict | None = None
    price_unknown: str | None = None
    tco: dict | None = None            # on premises: rent versus buy (numbers.cost.own)
    reason: str | None = None
    concurrency: int | None = None             # sequences served at once (resolved when `max`)
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    tokens_per_s_per_gpu: float | None = None
    training_tokens_per_s: float | None = None
    mfu: float | None = None
    training_hours_range: list | None = None   # the fit's residual spread around training_hours
    speed_explained: dict = field(default_factory=dict)
    zero_stage: int | None = None                 # training: the ZeRO stage of the layout (3 = FSDP)
    activation_checkpointing: bool | None = None  # training: activations recomputed in this plan
    min_count: int | None = None                  # the fewest cards any layout needs (the seeds' figure)
    layouts_considered: int | None = None
    misses: str | None = None                     # the stated deadline or service level it misses, with the figure
    hours_per_million_tokens: float | None = None  # hours the plan takes per million tokens (trained or generated)
    ideal: dict = field(default_factory=dict)
    why: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = {"gpu": self.gpu.id}
        for k in ("count", "nodes", "tp", "pp", "dp", "per_card_gb", "headroom_gb", "kv_headroom_gb", "fits",
                  "compute_precision", "prefill_ms", "decode_ms_per_token", "tokens_per_s", "tokens_per_s_per_user",
                  "max_concurrency", "max_context_tokens", "training_hours", "power_kw_per_node", "usd_per_hour",
                  "usd_per_million_tokens", "usd_per_job", "price", "price_unknown", "tco", "reason", "ideal", "why",
                  "concurrency", "ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "training_tokens_per_s", "mfu",
                  "training_hours_range", "speed_explained", "zero_stage", "activation_checkpointing", "min_count",
                  "layouts_considered", "misses", "hours_per_million_tokens"):
            v = getattr(self, k)
            if isinstance(v, list):
                d[k] = [_r(x) for x in v]
            elif isinstance(v, dict):
                d[k] = {a: (_r(b) if not isinstance(b, dict) else {x: _r(y) for x, y in b.items()}) for a, b in v.items()}
            else:
                d[k] = _r(v)
        d["memory_gb"] = self.gpu.memory_gb
        return d


def unit_of_work(w: Workload) -> str:
    """What the cost is counted per: the training job (C16), a million output tokens for batch
    serving (T07), else the hour of serving the workload (every plan serves the same users)."""
    if w.training:   # without a token budget, per million training tokens: what the job costs whatever its size
        return "job" if w.training_tokens else "million_training_tokens"
    return "million_tokens" if w.latency == "batch" else "hour"


UNIT_FIELD = {"job": "usd_per_job", "million_tokens": "usd_per_million_tokens",
              "million_training_tokens": "usd_per_million_tokens", "hour": "usd_per_hour"}


def unit_cost(c: Candidate, unit: str) -> float | None:
    return getattr(c, UNIT_FIELD[unit])


def knob_variants(w: Workload, led: Ledger) -> list[tuple[Workload, Ledger]]:
    """The workload as given, and with activation checkpointing on when the user left it to the
    planner (C06: most activation memory saved for ~30% more compute)."""
    out = [(w, led)]
    if w.training and "activation_checkpointing" in w.defaults and not w.activation_checkpointing:
        wc = replace(w, activation_checkpointing=True)
        out.append((wc, training_ledger(wc)))
    return out


def _misses(w: Workload, c: Candidate) -> str | None:
    """The stated deadline or service level this plan misses, with the figure that missed."""
    if w.training:
        dl = w.constraints.deadline_hours
        if dl and c.training_hours is not None and c.training_hours > dl * (1 + 1e-9):
            return f"{c.training_hours:,.1f} h, over the {dl:g} h deadline"
        return None
    ttft, tpot = c.ttft_ms, c.tpot_ms
    whose = f" ({w.service_level_source}; state latency: to set your own)" if w.service_level_source else ""
    if w.ttft_ms and ttft is not None and ttft > w.ttft_ms * (1 + 1e-9):
        return f"time to first token {ttft:,.0f} ms, over the {w.ttft_ms:g} ms target{whose}"
    if w.tpot_ms and tpot is not None and tpot > w.tpot_ms * (1 + 1e-9):
        return f"time per output token {tpot:,.1f} ms, over the {w.tpot_ms:g} ms target{whose}"
    return None


def _evaluate(w: Workload, led: Ledger, gpu: GPU, catalog: Catalog, lay: plan.Layout, cp: str, rate: Term) -> Candidate:
    """One layout priced and timed: power and price (cost), speed (speed)."""
    c = Candidate(gpu, fits=True, compute_precision=cp)
    c.count, c.tp, c.pp, c.dp = lay.count, lay.tp, lay.pp, lay.dp
    c.nodes = lay.nodes(gpu)
    c.zero_stage = lay.zero_stage
    c.activation_checkpointing = w.activation_checkpointing if w.training else None
    c.per_card_gb = lay.per_card_bytes / GB
    c.headroom_gb = gpu.memory_gb - c.per_card_gb
    gpn = gpu.gpus_per_node
    cost.power(c, gpu)
    # K13/K14: a model replica's cards share an instance; a training job's cards share one node (ZeRO
    # and gradient traffic on NVLink) and span whole nodes beyond it
    group = min(c.count, gpn) if w.training else min(lay.tp * lay.pp, gpn)
    cost.price(c, gpu, catalog, group=group, w=w)
    if w.training:
        if lay.zero_stage is not None and lay.zero_stage != w.zero_stage:
            w = replace(w, zero_stage=lay.zero_stage)     # the stage the planner chose times the plan (FSDP gathers, share)
        speed.training_time(w, led, c, rate, cal=speed.calibration(catalog))
        if w.training_tokens and c.training_hours is not None:
            c.hours_per_million_tokens = c.training_hours * 1e6 / w.training_tokens
        elif not w.training_tokens:
            probe = copy.copy(c)        # the same plan timed on one million tokens: hours and cost per million
            probe.why = {}
            speed.training_time(replace(w, training_tokens=1e6), led, probe, rate, cal=speed.calibration(catalog))
            c.hours_per_million_tokens = probe.training_hours
            if probe.usd_per_job is not None:
                c.usd_per_million_tokens = probe.usd_per_job
                c.why["usd_per_million_tokens"] = (f"{probe.training_hours:,.3g} h per million training tokens x "
                                                   f"${c.usd_per_hour:,.2f}/h (C16)")
    else:
        speed.inference_speed(w, led, c, gpu, rate, catalog.efficiency["hbm_share"]["v"], cal=speed.calibration(catalog))
        c.hours_per_million_tokens = 1e6 / (c.tokens_per_s * 3600) if c.tokens_per_s else None
    return _done(w, c)


def _done(w: Workload, c: Candidate) -> Candidate:
    c.misses = _misses(w, c)
    return c


def _money(c: Candidate, unit: str, rate_per_gpu_hour: float | None):
    """(cost per unit of work, priced?): the plan's own price, or, to compare one GPU's layouts only,
    its cards at the cheapest per-GPU rate of the GPU's own quotes (never shown as a price)."""
    v = unit_cost(c, unit)
    if v is not None or rate_per_gpu_hour is None:
        return v, v is not None
    per_hour = rate_per_gpu_hour * c.count
    if unit == "hour":
        return per_hour, False
    if unit == "job":
        return (per_hour * c.training_hours if c.training_hours is not None else None), False
    return (per_hour * c.hours_per_million_tokens if c.hours_per_million_tokens else None), False


def _key(w: Workload, c: Candidate, lay: plan.Layout, unit: str, rate: float | None):
    """How the planner orders one GPU's layouts by the objective: a plan that misses a stated target
    last, then the objective (cost: the fewest GPUs rented, then the cost per unit of work), a priced
    plan before an unpriced one, no idle rented GPUs, fewer cards, the least model parallelism
    (pipeline bubbles, TP traffic), the lowest ZeRO stage (C12)."""
    money, priced = _money(c, unit, rate)
    if money is not None:
        money = float(f"{money:.9g}")   # equal costs compare equal whatever the float rounding
    idle = (c.price or {}).get("idle_gpus") or 0
    gpn = c.gpu.gpus_per_node
    if c.price is None and w.training and c.count > gpn:
        idle = -c.count % gpn        # unpriced: a multi-node job still takes whole nodes (K14)
    inf = math.inf
    if w.objective == "time":
        t = c.training_hours if w.training else c.tpot_ms
        first = (t if t is not None else inf, money if money is not None else inf)
    elif w.objective == "cards":
        first = (c.count, money if money is not None else inf)
    else:
        # the smallest rental that holds the job first: more replicas only pay under perfect scaling,
        # which experts do not count on (T03, C18); a deadline or service level adds them
        rented = c.count + idle
        first = (rented, money if money is not None else inf)
    return (c.misses is not None,) + first + (not priced, idle, c.count, lay.tp * lay.pp, lay.zero_stage or 0, lay.tp, lay.pp)


MAX_CARD_FACTOR = 2      # a plan may use at most this multiple of the fewest cards, unless a deadline or service level needs more


def _deadline_cards(tried) -> int:
    """Twice the fewest cards of the plans that meet the deadline or service level (all when none does)."""
    ok = [t[2].count for t in tried if not t[2].misses]
    return min(ok) * MAX_CARD_FACTOR if ok else max(t[2].count for t in tried)


def _dp_options(w: Workload, gpu: GPU, base: plan.Layout, sizes: list[int], max_gpus: int) -> list[int]:
    """Replica counts worth trying for a base layout: the fewest memory allows, enough to fill the
    instances they are rented in (K13), and, with `objective: time`, as many as max_gpus allows."""
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
    if w.objective == "time" and w.constraints.max_gpus:
        out.add(max(base.min_dp, w.constraints.max_gpus // m))
    cap = max_gpus // m
    if not w.training:
        cap = min(cap, max(base.min_dp, w.concurrency))
    return sorted(d for d in out if d <= cap) or [base.min_dp]


UNIT_LABELS = {"job": "per job", "million_tokens": "per million output tokens",
               "million_training_tokens": "per million training tokens", "hour": "per hour"}


def _target_replicas(w: Workload, lay: plan.Layout, c: Candidate, max_gpus: int) -> list[int]:
    """Replica counts to try when a plan misses a stated target: for a deadline, the count that
    finishes in time by compute (and a few more, for a speed model that does not scale linearly);
    for a service level, doublings up to one replica per sequence (each serving fewer users, T06)."""
    m = lay.tp * lay.pp
    if w.training:
        if not c.training_hours:
            return []
        need = math.ceil(c.count * c.training_hours / w.constraints.deadline_hours / m - 1e-9)
        out = [need + extra for extra in range(4)]
    else:
        out, d = [], lay.dp
        while d < w.concurrency:
            d = min(w.concurrency, d * 2)
            out.append(d)
    return [d for d in out if d * m <= max_gpus]


def plan_candidate(w: Workload, led: Ledger, gpu: GPU, catalog: Catalog, variants=None) -> Candidate:
    """Size one GPU for the workload: every layout the planner offers (plan), each priced (cost) and
    timed (speed), the best by the workload's objective kept, with why."""
    max_gpus = w.constraints.max_gpus or plan.MAX_GPUS
    s = led.sized
    cp = speed.compute_precision(w, gpu, s)
    rate = speed.achievable_tflops(catalog, gpu, cp)
    stages = plan.ZERO_STAGES if "zero_stage" in w.defaults else (w.zero_stage,)
    sizes = cost.instance_sizes(gpu, catalog, w)
    gpu_rate = min((p.usd_per_hour / p.gpus_per_instance for p in cost.offers(gpu, catalog, w)), default=None)
    unit = unit_of_work(w)
    tried: list[tuple] = []
    fewest = None
    for wv, lv in variants or knob_variants(w, led):
        wider: list = []
        if w.layout:
            one = plan.given_layout(wv, lv, gpu, stages)
            bases = [one] if one else []
        elif w.training:
            bases = plan.training_layouts(wv, lv, gpu, max_gpus, stages)
        else:
            bases = plan.inference_layouts(wv, lv, gpu, max_gpus)
            if bases and w.objective == "cost" and (w.service_level_source or not (w.ttft_ms or w.tpot_ms)):
                # tensor parallelism to hold the model in the fewest cards, replicas to serve the users (C12,
                # K14): a wider TP is tried for a stated service level or `objective: time`; under the
                # interactive default only when the narrowest plans miss it (replicas never shorten a prefill)
                least = min((b.count, b.tp) for b in bases)
                if w.service_level_source:
                    wider = [b for b in bases if (b.count, b.tp) != least]
                bases = [b for b in bases if (b.count, b.tp) == least]
        n = plan.min_cards(bases)
        fewest = n if fewest is None or (n is not None and n < fewest) else fewest
        seen = set()          # (cards, TP, PP): the lowest ZeRO stage that fits a count is tried first

        def attempt(base, dp, wv=wv, lv=lv, seen=seen):
            lay = base if dp == base.dp else plan.with_replicas(wv, lv, gpu, base, dp)
            sig = (lay.count, lay.tp, lay.pp)
            if lay.per_card_bytes > gpu.memory_gb * GB or sig in seen:
                return None
            seen.add(sig)
            c = _evaluate(wv, lv, gpu, catalog, lay, cp, rate)
            tried.append((_key(wv, c, lay, unit, gpu_rate), len(tried), c, lay, wv, lv))
            return c, lay

        def search(bases, wv=wv, attempt=attempt):
            for base in bases:
                for dp in ([base.dp] if w.layout else _dp_options(wv, gpu, base, sizes, max_gpus)):
                    got = attempt(base, dp)
                    if not got or not got[0].misses or w.layout:
                        continue
                    # a deadline or service level sets the replicas; then fill the instances they take
                    for d2 in _target_replicas(w, got[1], got[0], max_gpus):
                        more = attempt(base, d2)
                        if more and not more[0].misses:
                            for d3 in _dp_options(wv, gpu, more[1], sizes, max_gpus):
                                if d3 > d2:
                                    attempt(base, d3)
                            break

        start = len(tried)
        search(bases)
        if wider and all(t[2].misses for t in tried[start:]):
            search(wider)
    if tried and fewest and not (w.layout or w.objective == "time"):
        # per-job figures assume perfect scaling, which experts do not trust across many nodes (T03,
        # C18): beyond MAX_CARD_FACTOR x the fewest cards (whole instances), only a target adds cards
        limit = MAX_CARD_FACTOR * max(fewest, max(sizes, default=1), gpu.gpus_per_node if fewest > gpu.gpus_per_node else 1)
        targeted = w.constraints.deadline_hours or w.ttft_ms or w.tpot_ms
        kept = [t for t in tried if t[2].count <= limit or (targeted and t[2].count <= _deadline_cards(tried))]
        tried = kept or tried
    if not tried:
        c = Candidate(gpu, fits=False, compute_precision=cp)
        speed.ideal_figures(c, s, gpu, cp)
        need = led.bytes("total_gb")
        if w.layout and w.layout[0] > gpu.gpus_per_node:
            c.reason = (f"the given TP {w.layout[0]} spans more than the {gpu.gpus_per_node} GPUs of one node; "
                        "tensor parallelism stays inside a node (K14)")
            return c
        c.reason = (f"needs {_gb(need)} and no layout of {'TP {} x PP {} x DP {}'.format(*w.layout) if w.layout else f'at most {max_gpus}'}"
                    f" x {gpu.memory_gb:g} GB (TP <= {gpu.gpus_per_node} per node) holds it")
        return c
    tried.sort(key=lambda t: (t[0], t[1]))
    if w.objective == "cost" and unit != "million_training_tokens":
        # the best plan of each checkpointing setting, then the cheaper of those: a setting that saves
        # cards but costs more per unit of work (C06: ~30% recompute) must pay for itself
        best: dict[bool, tuple] = {}
        for t in tried:
            best.setdefault(t[4].activation_checkpointing, t)
        money = {k: _money(t[2], unit, gpu_rate)[0] for k, t in best.items()}
        pick = min(best, key=lambda k: (best[k][0][0], money[k] if money[k] is not None else math.inf, best[k][0], best[k][1]))
        chosen = best[pick]
    else:
        chosen = tried[0]     # a job of unknown size gets the smallest rental that holds it (T03, C18)
    _, _, c, lay, wv, lv = chosen
    speed.ideal_figures(c, s, gpu, cp)
    c.min_count = fewest
    c.layouts_considered = len(tried)
    _explain_plan(w, c, lay, wv, unit, len(tried))
    return c


def _explain_plan(w: Workload, c: Candidate, lay: plan.Layout, wv: Workload, unit: str, tried: int) -> None:
    """The `why` of the chosen plan: its memory split, layout, ZeRO stage, checkpointing, idle GPUs."""
    c.why["per_card_gb"] = (f"ledger split over TP {lay.tp} x PP {lay.pp}" + (f" with KV heads replicated x{lay.rep:g}" if lay.rep > 1 else "")
                            + (f", sequences over DP {lay.dp}" if lay.dp > 1 and not w.training else "")
                            + (f", ZeRO-{lay.zero_stage} shards over DP {lay.dp}" if w.training and lay.zero_stage and lay.dp > 1 else "")
                            + (", activations checkpointed" if w.training and wv.activation_checkpointing else ""))
    objective = {"cost": f"the lowest cost {UNIT_LABELS[unit]}", "time": "the shortest time", "cards": "the fewest cards"}[w.objective]
    c.why["layout"] = (f"{'the layout given in the workload' if w.layout else f'{objective} of {tried} layouts tried'}: "
                       f"TP {lay.tp} inside a node (K14, C12)" + (f", PP {lay.pp} across nodes" if lay.pp > 1 else "")
                       + (f", DP {lay.dp} ({lay.min_dp} for memory" + (f", {lay.dp - lay.min_dp} more" if lay.dp > lay.min_dp else "") + ")"
                          if lay.dp > 1 else ""))
    if w.training and "zero_stage" in w.defaults and lay.zero_stage is not None:
        c.why["zero_stage"] = (f"ZeRO-{lay.zero_stage} chosen by the planner: the lowest stage that fits this layout"
                               + (" (3 = FSDP full sharding)" if lay.zero_stage == 3 else ""))
    if w.training and "activation_checkpointing" in w.defaults:
        c.why["activation_checkpointing"] = ("on, chosen by the planner: it saves most activation memory for ~30% more compute (C06)"
                                             if wv.activation_checkpointing else "off: the plan fits without recomputing activations")
    idle = (c.price or {}).get("idle_gpus") or 0
    if idle:
        c.why["idle_gpus"] = (f"{idle} rented GPU(s) idle: a replica of TP {lay.tp} x PP {lay.pp} = {lay.tp * lay.pp} cards does not fill "
                              f"the {c.price['gpus_per_instance']}-GPU instances, "
                              + ("and the workload fixes the layout (K13)" if w.layout else "and every smaller or fuller plan costs more (K13)"))
    if c.misses:
        c.why["misses"] = f"no layout meets the target: the best misses it ({c.misses})"


SUGGEST_SAVING = 0.25   # a fixed knob is named when the plan is at least 25% dearer than with it turned (decision._suggestions)


def knob_alternatives(w: Workload) -> list[tuple[str, Workload]]:
    """The settings the user fixed that an expert would try turning, each with the workload turned:
    activation checkpointing off (C06), a micro-batch above 1 (C06, C13), 16-bit training on a card
    with native FP8 (T02, K10), a fixed ZeRO stage (the planner chooses one)."""
    if not w.training:
        return []
    out = []
    if "activation_checkpointing" not in w.defaults and not w.activation_checkpointing:
        out.append(("activation_checkpointing: true", replace(w, activation_checkpointing=True)))
    if "concurrency" not in w.defaults and w.concurrency > 1:
        out.append((f"micro-batch (concurrency) 1 instead of {w.concurrency}, with gradient accumulation",
                    replace(w, concurrency=1)))
    if "zero_stage" not in w.defaults:
        out.append((f"zero_stage chosen by the planner instead of {w.zero_stage}",
                    replace(w, defaults=tuple(w.defaults) + ("zero_stage",))))
    if w.method == "full" and training_ledger_precision(w) in ("bf16", "fp16"):
        out.append(("precision: fp8 (on a card with native FP8)", replace(w, precision="fp8")))
    return out


def training_ledger_precision(w: Workload) -> str:
    from advisor.numbers.ledger import training_precision
    return training_precision(w)


# --- the whole estimate -----------------------------------------------------------------------------

@dataclass(eq=False)
class Estimate:
    """The estimator's output for a workload: the ledger, the FLOPs and every candidate."""

    workload: Workload
    ledger: Ledger
    candidates: list[Candidate]
    compute: dict[str, Term]
    kv_bytes_per_token: float | None
    notes: list[str]
    #: what one copy of the job needs with the settings the planner may choose at their leanest
    #: (checkpointing on when the workload leaves it open): the need rules judge card sizes by
    need_bytes: float | None = None

    def candidate(self, gpu_id: str) -> Candidate:
        return next(c for c in self.candidates if c.gpu.id == gpu_id)

    def as_dict(self) -> dict:
        led = self.ledger
        return {
            "units": "GB = 10^9 bytes; card capacities are the vendors' labels, read as 10^9 bytes",
            "workload": self.workload.inputs(),
            "ledger": {k: _r(led.terms[k].value / GB) for k in LEDGER_KEYS},
            "ledger_explained": {k: {**led.terms[k].as_dict(), "value": _r(led.terms[k].value / GB)} for k in LEDGER_KEYS},
            "alternative_accounting": {k: {**t.as_dict(), "value": _r(t.value / GB)} for k, t in led.alt.items()},
            "kv_bytes_per_token": _r(self.kv_bytes_per_token),
            "kv_fallback": led.kv_fallback,
            "weights_precision": led.sized.precision_label,
            "active_weight_gb_per_token": _r(led.sized.active_bytes / GB),
            "compute": {k: _r(t.value) for k, t in self.compute.items()},
            "compute_explained": {k: t.as_dict() for k, t in self.compute.items()},
            "candidates": [c.as_dict() for c in self.candidates],
            "notes": list(self.notes),
            "need_gb": _r(self.need_bytes / GB) if self.need_bytes is not None else None,
        }


def candidate_gpus(w: Workload, catalog: Catalog, only: list[str] | None = None) -> list[GPU]:
    ids = only or list(w.constraints.gpus) or list(catalog.gpus)
    return [catalog.gpus[i] for i in ids]


def estimate(w: Workload, catalog: Catalog, only: list[str] | None = None) -> Estimate:
    led = training_ledger(w) if w.training else inference_ledger(w)
    s = led.sized
    compute = {
        "forward_flops_per_token": Term(2 * s.active, f"2 x {s.active / 1e9:,.2f}B active parameters", ("K04", "K01")),
        "train_flops_per_token": Term(6 * s.active, f"6 x {s.active / 1e9:,.2f}B active parameters", ("K08", "W04")),
    }
    if w.training:
        flops, per_param = speed.train_flops_per_token(w, led)
        compute["job_flops_per_token"] = Term(
            flops, f"{per_param} x {s.active / 1e9:,.2f}B active"
            + (" x 1.3 (activation checkpointing, C06)" if w.activation_checkpointing else "")
            + (" x 2 (policy and value models, C09)" if w.task == "rlhf" else "")
            + (" (LoRA: no weight gradients for the frozen base)" if per_param == 4 else ""), ("K08", "C06"))
    kv_per_token = None
    if led.kv:
        kv_per_token = led.kv.bytes_per_sequence(w.context_tokens) / w.context_tokens
    variants = knob_variants(w, led)
    cands = [plan_candidate(w, led, g, catalog, variants) for g in candidate_gpus(w, catalog, only)]
    need = min(lv.bytes("total_gb") for _, lv in variants)
    notes = list(led.notes)
    if need < led.bytes("total_gb"):
        notes.append(f"The job needs {_gb(led.bytes('total_gb'))} as given and {_gb(need)} with activation checkpointing, "
                     "which the planner turns on where it pays (C06); the rules judge card sizes by the latter.")
    return Estimate(w, led, cands, compute, kv_per_token, notes, need)


#: Heuristics that live in the estimator (arithmetic) rather than in a rule, and where.
KNOWLEDGE = {
    "K01": "size_model: total parameters set the weights' memory, active parameters the FLOPs and bytes per token",
    "K03": "catalog: every TFLOPS figure is dense (sparse/2) and compute uses the rate of one precision",
    "K04": "estimate: forward FLOP/token = 2 x active parameters; ideal figures at spec peaks beside efficiency-scaled ones",
    "K05": "inference_ledger: KV cache falls back to 50% of the weights when the architecture is unknown; kv_headroom_gb",
    "K06": "numbers.speed.inference_speed / ideal_figures: decode time = bytes read per token / bandwidth, max'd with compute",
    "K07": "numbers.speed.inference_speed: prefill is compute-bound (FLOPs / rate), decode bandwidth-bound",
    "K08": "numbers.speed.train_flops_per_token: 6 x active; numbers.ledger.training_ledger: the 18 B/param accounting shown as the alternative",
    "K13": "numbers.cost.pick_price + plan_candidate: whole instances, a replica (training: a node) inside one; rented GPUs become replicas, idle ones are explained",
    "K16": "inference_ledger: weights (2X GB bf16, /2 8-bit, /4 4-bit), +20% overhead, +KV; ideal time = weights / bandwidth",
    "K17": "catalog/prices.yaml: A100 80 GB $2.5/h, H200 $5/h, 8x H200 $40/h (HF Inference Endpoints, Sept 2026)",
    "K19": "plan_candidate ideal: weights / VRAM and active weights / bandwidth",
    "K21": "catalog: every figure carries its source and date (docs/catalog.md)",
    "C01": "catalog/gpus.yaml: H200 = H100 compute with 141 GB at 4.8 TB/s, 700 W",
    "C05": "size_model + planner: 70B FP16 = 140 GB, two H200 (examples/llama-70b-fp16-serving.yaml, W10)",
    "C06": "training_ledger: weights, gradients, Adam 8 B + 4 B master, activations (checkpointing ~30% compute), x1.2",
    "C12": "numbers.plan.inference_layouts/training_layouts: TP over 1, 2, 4, 8 within a node (dividing KV heads), ZeRO-0..3, replicas; plan_candidate picks by the objective",
    "C14": "plan_candidate: power per node = cards x TDP x 1.25 (8 x 700 W <-> 6-8 kW)",
    "C16": "job_cost and usd_per_job: hours x price x cards (+ expected rerun); ranking: training with a token budget is ranked per job",
    "T07": "usd_per_million_tokens; ranking: batch serving is ranked by cost per million output tokens",
    "A01": "catalog/gpus.yaml: H100 vs A100 figures (FP8, bandwidth, NVLink 4 900 GB/s)",
}
