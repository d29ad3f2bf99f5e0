"""The estimate: the memory ledger, the FLOPs and one Plan per candidate GPU for a workload.

The memory ledger (`ledger`), the layouts (`layouts`), the speed (`speed`), the cost (`cost`) and
the choice among one GPU's layouts (`planner`) each live in a module of their own; this one runs them
for every candidate GPU. Pure functions over a Workload and the Catalog; no I/O, and no decisions
(rules decide). Every figure carries how it was computed, so that a memo can say "why 65 GB".
GB means 10^9 bytes throughout.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.inputs.catalog import GPU, Catalog
from advisor.numbers import cost, ownedfirst, owning, trainspeed
from advisor.numbers.ledger import LEDGER_KEYS, Ledger, inference_ledger, training_ledger
from advisor.numbers.plan import Plan
from advisor.numbers.planner import knob_variants, plan_candidate
from advisor.numbers.terms import GB, Term, _gb, rounded
from advisor.inputs.workload import Workload

@dataclass(eq=False)
class Estimate:
    """The estimator's output for a workload: the ledger, the FLOPs and every candidate."""

    workload: Workload
    ledger: Ledger
    candidates: list[Plan]
    compute: dict[str, Term]
    kv_bytes_per_token: float | None
    notes: list[str]
    #: what one copy of the job needs with the settings the planner may choose at their leanest
    #: (checkpointing on when the workload leaves it open): the need rules judge card sizes by
    need_bytes: float | None = None

    def candidate(self, gpu_id: str) -> Plan:
        return next(c for c in self.candidates if c.gpu.id == gpu_id)

    def as_dict(self) -> dict:
        if not self.workload.kind_spec.tokens:
            return self._kind_dict()
        led = self.ledger
        return {
            "units": "GB = 10^9 bytes; card capacities are the vendors' labels, read as 10^9 bytes",
            "workload": self.workload.inputs(),
            "ledger": {k: rounded(led.terms[k].value / GB) for k in LEDGER_KEYS},
            "ledger_explained": {k: {**led.terms[k].as_dict(), "value": rounded(led.terms[k].value / GB)} for k in LEDGER_KEYS},
            "alternative_accounting": {k: {**t.as_dict(), "value": rounded(t.value / GB)} for k, t in led.alt.items()},
            "kv_bytes_per_token": rounded(self.kv_bytes_per_token),
            "kv_fallback": led.kv_fallback,
            "weights_precision": led.sized.precision_label,
            "active_weight_gb_per_token": rounded(led.sized.active_bytes / GB),
            "compute": {k: rounded(t.value) for k, t in self.compute.items()},
            "compute_explained": {k: t.as_dict() for k, t in self.compute.items()},
            "candidates": [c.as_dict() for c in self.candidates],
            "notes": list(self.notes),
            "need_gb": rounded(self.need_bytes / GB) if self.need_bytes is not None else None,
        }


    def _kind_dict(self) -> dict:
        """A kind whose work is not tokens (image, video generation): its ledger's terms that hold
        something and its plans' figures that it has, no token figure."""
        led = self.ledger
        keys = [k for k in LEDGER_KEYS if led.terms[k].value or k == "total_gb"]
        return {
            "units": "GB = 10^9 bytes; card capacities are the vendors' labels, read as 10^9 bytes",
            "workload": self.workload.inputs(),
            "ledger": {k: rounded(led.terms[k].value / GB) for k in keys},
            "ledger_explained": {k: {**led.terms[k].as_dict(), "value": rounded(led.terms[k].value / GB)} for k in keys},
            "weights_precision": led.sized.precision_label,
            "compute": {k: rounded(t.value) for k, t in self.compute.items()},
            "compute_explained": {k: t.as_dict() for k, t in self.compute.items()},
            "candidates": [{k: v for k, v in c.as_dict().items() if v is not None and v != {}} for c in self.candidates],
            "notes": list(self.notes),
            "need_gb": rounded(self.need_bytes / GB) if self.need_bytes is not None else None,
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
        flops, per_param = trainspeed.train_flops_per_token(w, led)
        compute["job_flops_per_token"] = Term(
            flops, (f"(4 x {s.active / 1e9:,.2f}B frozen base + 6 x {led.adapter_params / 1e6:,.1f}M adapters)" if per_param == 4
                    else f"{per_param} x {s.active / 1e9:,.2f}B active")
            + (" x 1.3 (activation checkpointing, C06)" if w.activation_checkpointing else "")
            + (" x 2 (policy and value models, C09)" if w.task == "rlhf" else "")
            + (" (LoRA: no weight gradients for the frozen base)" if per_param == 4 else ""), ("K08", "C06"))
    kv_per_token = None
    if led.kv:
        kv_per_token = led.kv.bytes_per_sequence(w.kv_tokens) / w.kv_tokens
    variants = knob_variants(w, led)
    cands = _plans(w, led, catalog, variants, candidate_gpus(w, catalog, only))
    if w.constraints.deployment in cost.ON_PREM:
        cands = owning.rent_comparison(cands, w)
    need = min(lv.bytes("total_gb") for _, lv in variants)
    notes = list(w.notes) + list(led.notes)
    if need < led.bytes("total_gb"):
        notes.append(f"The job needs {_gb(led.bytes('total_gb'))} as given and {_gb(need)} with activation checkpointing, "
                     "which the planner turns on where it pays (C06); the rules judge card sizes by the latter.")
    return Estimate(w, led, cands, compute, kv_per_token, notes, need)


def _plans(w: Workload, led: Ledger, catalog: Catalog, variants, gpus: list[GPU]) -> list[Plan]:
    """One plan per GPU; serving with a fleet, the fleet's GPUs first, and every other GPU sized for the
    users the owned replicas leave, priced with them (numbers.ownedfirst)."""
    if not ownedfirst.applies(w):
        return [plan_candidate(w, led, g, catalog, variants) for g in gpus]
    mine = {f.gpu for f in w.fleet}
    first = {g.id: plan_candidate(w, led, g, catalog, variants) for g in gpus if g.id in mine}
    shares = ownedfirst.shares(list(first.values()), w)
    if not shares:
        return [first.get(g.id) or plan_candidate(w, led, g, catalog, variants) for g in gpus]
    wr = ownedfirst.rest_workload(w, shares)
    lr = inference_ledger(wr)
    vr = knob_variants(wr, lr)
    return [first.get(g.id) or ownedfirst.combined(plan_candidate(wr, lr, g, catalog, vr), shares, w) for g in gpus]


#: Heuristics that live in the estimator (arithmetic) rather than in a rule, and where.
KNOWLEDGE = {
    "K01": "numbers.ledger.size_model: total parameters set the weights' memory, active parameters the FLOPs and bytes per token",
    "K03": "catalog: every TFLOPS figure is dense (sparse/2) and compute uses the rate of one precision",
    "K04": "numbers.estimate.estimate: forward FLOP/token = 2 x active parameters; ideal figures at spec peaks beside efficiency-scaled ones",
    "K05": "numbers.ledger.inference_ledger: KV cache falls back to 50% of the weights when the architecture is unknown; numbers.layouts.memory: kv_headroom_gb",
    "K06": "numbers.speed.inference_speed / ideal_figures: decode time = bytes read per token / bandwidth, max'd with compute",
    "K07": "numbers.speed.inference_speed: prefill is compute-bound (FLOPs / rate), decode bandwidth-bound",
    "K08": "numbers.trainspeed.train_flops_per_token: 6 x active; numbers.ledger.training_ledger: the 18 B/param accounting shown as the alternative",
    "K13": "numbers.cost.pick_price + numbers.replicas.dp_options: whole instances, a replica (training: a node) inside one; rented GPUs become replicas, idle ones are explained",
    "K16": "numbers.ledger.inference_ledger: weights (2X GB bf16, /2 8-bit, /4 4-bit), +20% overhead, +KV; ideal time = weights / bandwidth",
    "K17": "catalog/prices.yaml: A100 80 GB $2.5/h, H200 $5/h, 8x H200 $40/h (HF Inference Endpoints, Sept 2026)",
    "K19": "numbers.speed.ideal_figures: weights / VRAM and active weights / bandwidth",
    "K21": "catalog: every figure carries its source and date (docs/catalog.md)",
    "C01": "catalog/gpus.yaml: H200 = H100 compute with 141 GB at 4.8 TB/s, 700 W",
    "C05": "numbers.ledger.size_model + numbers.planner: 70B FP16 = 140 GB, two H200 (examples/llama-70b-fp16-serving.yaml, W10)",
    "C06": "numbers.ledger.training_ledger: weights, gradients, Adam 8 B + 4 B master, activations (checkpointing ~30% compute), x1.2",
    "C12": "numbers.layouts.inference_layouts/training_layouts: TP over 1, 2, 4, 8 within a node (dividing KV heads), ZeRO-0..3, replicas; numbers.planner picks by the objective (numbers.objective)",
    "C14": "numbers.power.power: power per node = cards x TDP x 1.25 (8 x 700 W <-> 6-8 kW)",
    "C16": "numbers.cost.job_cost and numbers.cost.per_unit (usd_per_job): hours x price x cards (+ expected rerun); ranking: training with a token budget is ranked per job",
    "T07": "numbers.cost.per_unit (usd_per_million_tokens); numbers.objective.unit_of_work: batch serving is ranked by cost per million output tokens",
    "A01": "catalog/gpus.yaml: H100 vs A100 figures (FP8, bandwidth, NVLink 4 900 GB/s)",
}
