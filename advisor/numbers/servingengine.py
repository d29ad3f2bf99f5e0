"""The serving engine of one GPU's plans (catalog/engines.yaml: vLLM, SGLang, TensorRT-LLM): which one
runs a GPU and model, its batch cap and KV memory share, kept per catalog tables, GPU and model. Split from
advisor.numbers.calibration, which re-exports these names.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.base.kept import Kept, fingerprint, part_key
from advisor.inputs.catalog import GPU, Catalog
from advisor.inputs.parallel import Layout


@dataclass(frozen=True)
class Engine:
    """The serving engine of one GPU's plans, with the properties catalog/engines.yaml gives it there."""

    id: str
    name: str
    max_batch: int               # sequences per replica for `concurrency: max`
    kv_share: float              # of the card (weights + KV) or, when kv_of_free, of what the weights leave
    kv_of_free: bool
    kv_by_tp: tuple              # ((tp, share), ...) where the engine sets its share by TP size
    layouts: frozenset           # parallel dimensions it runs
    why: str                     # why this engine: the workload named it, or the default rule's reason
    refs: tuple = ()             # source IDs of the choice and of its figures
    max_batch_how: str = ""
    prefill_in_step: bool = True  # engines.yaml prefill: mixed (in the decode step) or separate
    batch_per_micro_batch: bool = False   # engines.yaml max_batch per: micro_batch (a cap per pipeline micro-batch)
    kv_on_demand: bool = False   # engines.yaml kv_allocation: on_demand (KV blocks taken as a sequence grows)

    def runs(self, lay: Layout, replicas: bool = True) -> bool:
        """The engine runs this layout: every parallel dimension it uses is one the engine has
        (`replicas` false: its data-parallel replicas not counted, for a base the planner grows)."""
        used = {"tp"} | {k for k, n in lay.degrees().items() if n > 1 and (replicas or k != "dp")}
        return used <= self.layouts


def _matches(when: dict, gpu: GPU, model) -> bool:
    sw = gpu.fig("software").value
    mla = bool(model is not None and model.num("mla_kv_dim"))
    return (("mla" not in when or bool(when["mla"]) == mla)
            and ("software" not in when or sw in when["software"])
            and ("vendor" not in when or gpu.vendor == when["vendor"])
            and ("gpu_class" not in when or gpu.gpu_class == when["gpu_class"])
            and ("generations" not in when or gpu.generation in when["generations"]))


def _runs_on(ro: dict, gpu: GPU) -> bool:
    """An engine's `runs_on` (software stacks, and for CUDA the generations) admits `gpu`."""
    sw = gpu.fig("software").value
    return sw in (ro.get("software") or ()) and not ("generations" in ro and sw == "cuda" and gpu.generation not in ro["generations"])


def engine_for(catalog: Catalog, gpu: GPU, model, wanted: str | None = None) -> tuple[Engine | None, str | None]:
    """(the engine that serves `model` on `gpu`, None) or (None, why the wanted engine cannot run there):
    the workload's `engine` when it names one, else the first rule of engines.yaml `defaults` that
    matches the GPU and model. A catalog without engines.yaml gives (None, None): efficiency.yaml's
    single engine figures apply."""
    table = catalog.engines or {}
    engines = table.get("engines") or {}
    if not engines:
        return None, None
    if wanted:
        why, refs = "named in the workload (engine)", ()
        eid = wanted
    else:
        rule = next((r for r in table.get("defaults") or [] if _matches(r.get("when") or {}, gpu, model)), None)
        if rule is None:
            return None, None
        eid, why, refs = rule["engine"], f"the default: {rule['because']}", tuple(rule.get("src") or ())
    e = engines.get(eid)
    if e is None:
        return None, f"the catalog has no engine '{eid}' (catalog/engines.yaml)"
    ro = e.get("runs_on") or {}
    if not _runs_on(ro, gpu):
        # the way out the catalog gives: the engines that do run on this GPU
        others = [o["name"] for k, o in engines.items() if k != eid and _runs_on(o.get("runs_on") or {}, gpu)]
        return None, (f"{e['name']} does not run on {gpu.name}" + (f": {' and '.join(others)} {'do' if len(others) > 1 else 'does'}" if others else "")
                      + f" ({gpu.fig('software').value}, {gpu.generation}; {e['name']} runs on {', '.join(ro.get('software') or ())}"
                      + (f" of the {', '.join(ro['generations'])} generations" if ro.get("generations") else "") + ", catalog/engines.yaml)")
    mb = e["max_batch"]
    cap, how = int(mb["v"]), f"{e['name']} default batch cap {int(mb['v']):,}"
    big = mb.get("large_cards")
    if big and (gpu.memory_gb or 0) >= big["min_memory_gb"] and gpu.id not in (big.get("except") or ()):
        cap, how = int(big["v"]), f"{e['name']} default batch cap {int(big['v']):,} on a card of {big['min_memory_gb']:g} GB or more"
    kv = e["kv_share"]
    pf = e.get("prefill") or {}
    # the prefill schedule's sources stay out of the plan's refs: only a TTFT at an arrival rate reads it
    refs = refs + tuple(mb.get("src") or ()) + tuple(kv.get("src") or ()) + tuple((e.get("layouts") or {}).get("src") or ())
    return Engine(eid, e["name"], cap, float(kv["v"]), kv.get("of") == "free",
                  tuple(sorted((int(k), float(v)) for k, v in (kv.get("by_tp") or {}).items())),
                  frozenset((e.get("layouts") or {}).get("v") or ("tp",)), why, tuple(dict.fromkeys(refs)), how,
                  pf.get("v", "mixed") == "mixed", mb.get("per") == "micro_batch",
                  (e.get("kv_allocation") or {}).get("v") == "on_demand"), None


#: the catalog's efficiency table -> its Calibration


#: (the catalog's engines and efficiency tables, the GPU, the model, the named engine) -> engine_for's answer
_ENGINES = Kept("serving engine", 4096)


def kept_engine_for(catalog: Catalog, gpu: GPU, model, wanted: str | None = None) -> tuple[Engine | None, str | None]:
    """engine_for once per catalog tables, GPU, model and named engine: all it reads (the planner asks
    for every GPU of every decision)."""
    return _ENGINES.get((part_key(catalog, "engines", "efficiency"), fingerprint(gpu), fingerprint(model), wanted),
                        lambda: engine_for(catalog, gpu, model, wanted))


def kv_words(engine: Engine) -> str:
    """The engine's KV share in words, as the plan's `why` gives it."""
    share = (", ".join(f"{v:g} at TP {k}" for k, v in engine.kv_by_tp) if engine.kv_by_tp else f"{engine.kv_share:g}")
    return share + (" of the memory the weights leave" if engine.kv_of_free else " of the card for weights + KV")
