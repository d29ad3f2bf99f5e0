"""The plan a deploy folder launches, read from the decision record: the recommendation (or another
row of the recommended GPU's plan table, `--candidate N`), its layout as the one `Layout` value
(advisor.inputs.parallel.from_record), its GPU and offer, and the figures the memo promises. Nothing
here sizes anything: every figure is the record's."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.base.errors import InputError, Problem
from advisor.inputs import kinds
from advisor.inputs.parallel import Layout, from_record, notation
from advisor.inputs.skypilotnames import PROVIDERS, SIMPLE

#: the kinds a deploy folder is written for; the others are refused by name (exit 2)
WRITTEN_FOR = (kinds.LLM_SERVING, kinds.LLM_TRAINING)
#: catalog GPU id -> SkyPilot's accelerator name (the inverse of skypilotnames' table; H100 and A100 by size)
SKY_ACCELERATORS = {**{gid: name for name, gid in reversed(list(SIMPLE.items())) if "-" not in name or gid.startswith("h200")},
                    "h100-sxm": "H100", "h100-pcie": "H100", "a100-80gb-sxm": "A100-80GB", "a100-80gb-pcie": "A100-80GB",
                    "a100-40gb-sxm": "A100", "a100-40gb-pcie": "A100"}
#: the clouds a SkyPilot task may name (SkyPilot 0.14.1, sky/utils/schemas.py resources `cloud`; a test
#: checks this list against the installed package): a provider SkyPilot's catalog lists but its task does
#: not take (SimplePod) is left for SkyPilot to choose
TASK_CLOUDS = ("aws", "azure", "gcp", "ibm", "lambda", "scp", "oci", "kubernetes", "runpod", "vast", "vsphere", "cudo",
               "fluidstack", "paperspace", "primeintellect", "do", "nebius", "ssh", "slurm", "hyperbolic", "seeweb",
               "shadeform", "yotta", "mithril", "verda")
SKY_CLOUDS = {v: k for k, v in PROVIDERS.items() if k in TASK_CLOUDS}


@dataclass(frozen=True)
class Offer:
    provider: str | None
    cloud: str | None           # SkyPilot's cloud name when the provider is one of its clouds
    region: str | None          # a region the quote names (None: "3 regions", unknown)
    instance: str | None
    kind: str | None            # on-demand, spot, reserved
    usd_per_hour: float | None


@dataclass(frozen=True)
class Plan:
    """One plan of the record, as the deploy writers read it."""

    name: str
    kind: str                   # advisor.inputs.kinds: llm-serving or llm-training
    workload: object            # the validated Workload
    model_repo: str             # the Hugging Face repository the engines load
    gpu_id: str
    gpu_name: str
    vendor: str                 # the GPU's vendor (nvidia, amd, ...): the device plugin's resource, the image
    memory_gb: float
    gpus_per_node: int
    accelerator: str | None     # SkyPilot's name for the GPU (None: SkyPilot has none)
    layout: Layout
    count: int
    nodes: int
    engine: str | None          # the engine the plan was sized with (serving)
    engine_why: str
    row: int                    # 1-based row of the plan table (1: the recommendation's layout)
    offer: Offer
    weights_gb: float | None = None     # the record's ledger: the weights in the plan's precision
    kv_shares: dict = field(default_factory=dict)   # catalog/engines.yaml kv_share per engine (the plans' memory share)
    #: engine -> why it does not run on this GPU (catalog/engines.yaml runs_on), None where it does
    not_here: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)     # the record's figures for the memo's promise
    service_level: dict = field(default_factory=dict)

    @property
    def serving(self) -> bool:
        return self.kind == kinds.LLM_SERVING

    @property
    def notation(self) -> str:
        return notation(self.layout)

    @property
    def cards_per_node(self) -> int:
        """Cards each node runs: the plan's cards over its nodes (a node is rented whole; the last
        node of an uneven plan idles the rest)."""
        return min(self.gpus_per_node, math.ceil(self.count / max(self.nodes, 1)))


def read_plan(rec: dict, catalog, w, candidate: int | None = None) -> Plan:
    """The plan to launch: the recommendation, or row `candidate` of its GPU's plan table."""
    if w.kind not in WRITTEN_FOR:
        raise InputError(Problem(f"deploy files are not written for this kind yet ({kinds.KINDS[w.kind].label}): "
                                 f"only for {' and '.join(kinds.KINDS[k].label for k in WRITTEN_FOR)}", "deploy"))
    r = rec.get("recommendation")
    if r is None:
        raise InputError(Problem("no plan meets the workload, so there is nothing to launch "
                                 "(`gpu-advisor recommend` says what it needs)", "deploy"))
    est = next((c for c in rec["estimate"]["candidates"] if c["gpu"] == r["gpu"]), {})
    lay, count, nodes, figures, row = from_record(est or r), r["count"], r["nodes"], est, 1
    if candidate and candidate != 1:
        rows = ((rec.get("plan_tables") or {}).get(r["gpu"]) or {}).get("rows") or []
        if not 1 <= candidate <= len(rows):
            raise InputError(Problem(f"the plan table of {r['gpu']} has {len(rows)} row{'s' if len(rows) != 1 else ''}: "
                                     f"choose 1 to {len(rows)}", "--candidate"))
        chosen = rows[candidate - 1]
        lay, count, row = from_record(chosen), chosen["count"], candidate
        figures = {k: chosen.get(k) for k in ("ttft_ms", "tpot_ms", "usd_per_hour")}
        figures["unit_cost"] = chosen.get("unit_cost")
    gpu = catalog.gpus[r["gpu"]]
    nodes = lay.nodes(gpu) if row != 1 else nodes
    return Plan(name=w.name or w.model.id, kind=w.kind, workload=w, model_repo=model_repo(w.model), gpu_id=gpu.id,
                gpu_name=gpu.name, vendor=(gpu.vendor or "nvidia").lower(), memory_gb=gpu.memory_gb, gpus_per_node=gpu.gpus_per_node,
                accelerator=SKY_ACCELERATORS.get(gpu.id), layout=lay, count=count, nodes=nodes,
                engine=est.get("engine"), engine_why=(est.get("why") or {}).get("engine") or "", row=row,
                not_here=_not_here(catalog, gpu, w.model),
                kv_shares={k: e.get("kv_share") or {} for k, e in ((catalog.engines or {}).get("engines") or {}).items()},
                offer=_offer(r.get("price") or {}), weights_gb=(rec["estimate"].get("ledger") or {}).get("weights_gb"),
                figures=dict(figures or {}),
                service_level=dict(rec.get("service_level") or {}))


def _not_here(catalog, gpu, model) -> dict:
    """Each serving engine's refusal of this GPU, as the planner's engine choice reads engines.yaml."""
    from advisor.inputs.engines import ENGINES
    from advisor.numbers.calibration import engine_for
    out = {}
    for eid in ENGINES:
        e, why = engine_for(catalog, gpu, model, eid)
        out[eid] = None if e is not None else (why or "the catalog has no engines.yaml")
    return out


def model_repo(model) -> str:
    """The model's Hugging Face repository: the catalog's hf_repo (kept among its aliases), else the
    first alias written ORG/NAME, else its catalog id (the README says to replace it)."""
    return next((a for a in model.aliases if "/" in a), model.id)


def _offer(p: dict) -> Offer:
    region = p.get("region")
    if region and (region[0].isdigit() or " " in region):
        region = None                      # "1 region", "3 regions": the quote names no one region
    provider = p.get("provider")
    return Offer(provider, SKY_CLOUDS.get(provider), region, p.get("instance"), p.get("kind"), p.get("usd_per_instance_hour"))
