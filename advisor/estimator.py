"""The numeric estimator: puts the numbers together for a workload and every candidate GPU.

The memory ledger (`numbers.ledger`), the layout (`numbers.plan`), the speed (`numbers.speed`) and
the cost (`numbers.cost`) each live in a module of their own; this one sizes every candidate with
them and holds the result. Pure functions over a Workload and the Catalog; no I/O, and no decisions
(rules decide). Every figure carries how it was computed, so that a memo can say "why 65 GB".
GB means 10^9 bytes throughout.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

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
    ideal: dict = field(default_factory=dict)
    why: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = {"gpu": self.gpu.id}
        for k in ("count", "nodes", "tp", "pp", "dp", "per_card_gb", "headroom_gb", "kv_headroom_gb", "fits",
                  "compute_precision", "prefill_ms", "decode_ms_per_token", "tokens_per_s", "tokens_per_s_per_user",
                  "max_concurrency", "max_context_tokens", "training_hours", "power_kw_per_node", "usd_per_hour",
                  "usd_per_million_tokens", "usd_per_job", "price", "price_unknown", "tco", "reason", "ideal", "why",
                  "concurrency", "ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "training_tokens_per_s", "mfu",
                  "training_hours_range", "speed_explained"):
            v = getattr(self, k)
            if isinstance(v, list):
                d[k] = [_r(x) for x in v]
            elif isinstance(v, dict):
                d[k] = {a: (_r(b) if not isinstance(b, dict) else {x: _r(y) for x, y in b.items()}) for a, b in v.items()}
            else:
                d[k] = _r(v)
        d["memory_gb"] = self.gpu.memory_gb
        return d


def plan_candidate(w: Workload, led: Ledger, gpu: GPU, catalog: Catalog) -> Candidate:
    """Size one GPU for the workload: its layout (plan), power and price (cost), speed (speed)."""
    max_gpus = w.constraints.max_gpus or plan.MAX_GPUS
    best = (plan.plan_training if w.training else plan.plan_inference)(w, led, gpu, max_gpus)
    s = led.sized
    cp = speed.compute_precision(w, gpu, s)
    rate = speed.achievable_tflops(catalog, gpu, cp)
    cal = speed.calibration(catalog)
    c = Candidate(gpu, fits=best is not None, compute_precision=cp)
    speed.ideal_figures(c, s, gpu, cp)
    if best is None:
        need = led.bytes("total_gb")
        c.reason = (f"needs {_gb(need)} and no layout of at most {max_gpus} x {gpu.memory_gb:g} GB "
                    f"(TP <= {gpu.gpus_per_node} per node) holds it")
        return c
    count, _, tp, pp, dp, per_card, rep = best
    if w.training:
        factor = speed.deadline_factor(w, led, count, rate, gpu=gpu, cal=cal)
        if factor > 1:
            dp, count = dp * factor, count * factor
            c.why["dp"] = f"x{factor} data-parallel replicas to finish within {w.constraints.deadline_hours:g} h"
    c.count, c.tp, c.pp, c.dp = count, tp, pp, dp
    c.nodes = math.ceil(count / gpu.gpus_per_node)
    c.per_card_gb = per_card / GB
    c.headroom_gb = gpu.memory_gb - c.per_card_gb
    c.why["per_card_gb"] = (f"ledger split over TP {tp} x PP {pp}" + (f" with KV heads replicated x{rep:g}" if rep > 1 else "")
                            + (f", sequences over DP {dp}" if dp > 1 and not w.training else "")
                            + (f", ZeRO-{w.zero_stage} shards over DP {dp}" if w.training and w.zero_stage else ""))
    cost.power(c, gpu)
    cost.price(c, gpu, catalog, group=min(tp * pp, gpu.gpus_per_node), w=w)
    if w.training:
        speed.training_time(w, led, c, rate, cal=cal)
    else:
        speed.inference_speed(w, led, c, gpu, rate, catalog.efficiency["hbm_share"]["v"], cal=cal)
    return c


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
    cands = [plan_candidate(w, led, g, catalog) for g in candidate_gpus(w, catalog, only)]
    return Estimate(w, led, cands, compute, kv_per_token, list(led.notes))


#: Heuristics that live in the estimator (arithmetic) rather than in a rule, and where.
KNOWLEDGE = {
    "K01": "size_model: total parameters set the weights' memory, active parameters the FLOPs and bytes per token",
    "K03": "catalog: every TFLOPS figure is dense (sparse/2) and compute uses the rate of one precision",
    "K04": "estimate: forward FLOP/token = 2 x active parameters; ideal figures at spec peaks beside efficiency-scaled ones",
    "K05": "inference_ledger: KV cache falls back to 50% of the weights when the architecture is unknown; kv_headroom_gb",
    "K06": "numbers.speed.inference_speed / ideal_figures: decode time = bytes read per token / bandwidth, max'd with compute",
    "K07": "numbers.speed.inference_speed: prefill is compute-bound (FLOPs / rate), decode bandwidth-bound",
    "K08": "numbers.speed.train_flops_per_token: 6 x active; numbers.ledger.training_ledger: the 18 B/param accounting shown as the alternative",
    "K13": "numbers.cost.pick_price: you rent whole instances; a tensor-parallel group must fit in one instance",
    "K16": "inference_ledger: weights (2X GB bf16, /2 8-bit, /4 4-bit), +20% overhead, +KV; ideal time = weights / bandwidth",
    "K17": "catalog/prices.yaml: A100 80 GB $2.5/h, H200 $5/h, 8x H200 $40/h (HF Inference Endpoints, Sept 2026)",
    "K19": "plan_candidate ideal: weights / VRAM and active weights / bandwidth",
    "K21": "catalog: every figure carries its source and date (docs/catalog.md)",
    "C01": "catalog/gpus.yaml: H200 = H100 compute with 141 GB at 4.8 TB/s, 700 W",
    "C05": "size_model + planner: 70B FP16 = 140 GB, two H200 (examples/llama-70b-fp16-serving.yaml, W10)",
    "C06": "training_ledger: weights, gradients, Adam 8 B + 4 B master, activations (checkpointing ~30% compute), x1.2",
    "C12": "numbers.plan.plan_inference/plan_training: TP swept over 1, 2, 4, 8 within a node for every GPU",
    "C14": "plan_candidate: power per node = cards x TDP x 1.25 (8 x 700 W <-> 6-8 kW)",
    "C16": "job_cost and usd_per_job: hours x price x cards (+ expected rerun)",
    "T07": "usd_per_million_tokens; decision ranks batch inference by cost per million tokens",
    "A01": "catalog/gpus.yaml: H100 vs A100 figures (FP8, bandwidth, NVLink 4 900 GB/s)",
}
