"""The serving engines of catalog/engines.yaml (vLLM, SGLang, TensorRT-LLM): each one's batch cap, KV
memory share, the layouts it runs and the stacks it runs on, with sources, and the rules that give a
GPU and model their default engine. Checked here as the catalog loads; numbers.calibration reads them
(engine_for, Calibration.for_engine).
"""
from __future__ import annotations

from pathlib import Path

from advisor.base import yamlio
from advisor.base.errors import Collector
from advisor.inputs.figures import is_number
from advisor.inputs.parallel import LAYOUT_FIELDS

ENGINE_FILE = "engines.yaml"
#: the serving engines a workload may name (engines.yaml holds their properties)
ENGINES = ("vllm", "sglang", "trtllm")
ENGINE_LAYOUTS = LAYOUT_FIELDS       # the declared dimensions (advisor.inputs.parallel)


def _check_engine(col: Collector, cited, eng: dict, eid, software: tuple[str, ...]) -> None:
    """One engine of engines.yaml: its name, max_batch, kv_share, layouts, the optional prefill and
    kv_allocation, and runs_on, each of the shape calibration reads and cited (errors go to `col`; apart
    from load_engines, which also checks the defaults and the speculative table)."""
    e = eng[eid]
    line = yamlio.line_of(eng, eid, 1)
    if eid not in ENGINES:
        col.add(f"unknown engine (known: {', '.join(ENGINES)})", line, f"engines.{eid}")
        return
    if not isinstance(e, dict) or not isinstance(e.get("name"), str):
        col.add("must be a mapping with a name", line, f"engines.{eid}")
        return
    mb = e.get("max_batch")
    v = mb.get("v") if isinstance(mb, dict) else None
    big = mb.get("large_cards") if isinstance(mb, dict) else None
    if not isinstance(v, int) or isinstance(v, bool) or v < 1 or (
            big is not None and not (isinstance(big, dict) and isinstance(big.get("v"), int) and big["v"] >= 1
                                     and is_number(big.get("min_memory_gb")))) or mb.get("per", "micro_batch") != "micro_batch":
        col.add("max_batch must be {v: SEQUENCES >= 1, large_cards: {min_memory_gb, v}, per: micro_batch, src: [...]}",
                yamlio.line_of(e, "max_batch", line), f"engines.{eid}.max_batch")
    cited(mb, yamlio.line_of(e, "max_batch", line), f"engines.{eid}.max_batch")
    kv = e.get("kv_share")
    shares = [kv.get("v"), *((kv.get("by_tp") or {}).values())] if isinstance(kv, dict) and isinstance(kv.get("by_tp") or {}, dict) else [None]
    if not all(is_number(x) and 0 < x <= 1 for x in shares) or kv.get("of") not in ("card", "free"):
        col.add("kv_share must be {v: SHARE in (0, 1], of: card | free, by_tp: {TP: SHARE}, src: [...]}",
                yamlio.line_of(e, "kv_share", line), f"engines.{eid}.kv_share")
    cited(kv, yamlio.line_of(e, "kv_share", line), f"engines.{eid}.kv_share")
    lay = e.get("layouts")
    dims = lay.get("v") if isinstance(lay, dict) else None
    if not isinstance(dims, list) or not set(dims) <= set(ENGINE_LAYOUTS) or "tp" not in dims:
        col.add(f"layouts must be {{v: [tp, ...], src: [...]}} of {', '.join(ENGINE_LAYOUTS)}",
                yamlio.line_of(e, "layouts", line), f"engines.{eid}.layouts")
    cited(lay, yamlio.line_of(e, "layouts", line), f"engines.{eid}.layouts")
    pf = e.get("prefill")      # optional: how a new prompt's prefill is scheduled (numbers.queueing)
    if pf is not None:
        if not isinstance(pf, dict) or pf.get("v") not in ("mixed", "separate"):
            col.add("prefill must be {v: mixed | separate, src: [...]}", yamlio.line_of(e, "prefill", line), f"engines.{eid}.prefill")
        else:
            cited(pf, yamlio.line_of(e, "prefill", line), f"engines.{eid}.prefill")
    ka = e.get("kv_allocation")      # optional: how a running sequence holds its KV (numbers.queueing)
    if ka is not None:
        if not isinstance(ka, dict) or ka.get("v") not in ("on_demand", "reserved"):
            col.add("kv_allocation must be {v: on_demand | reserved, src: [...]}", yamlio.line_of(e, "kv_allocation", line),
                    f"engines.{eid}.kv_allocation")
        else:
            cited(ka, yamlio.line_of(e, "kv_allocation", line), f"engines.{eid}.kv_allocation")
    ro = e.get("runs_on")
    if not isinstance(ro, dict) or not isinstance(ro.get("software"), list) or not set(ro["software"]) <= set(software):
        col.add(f"runs_on must be {{software: [...], src: [...]}} of {', '.join(software)}",
                yamlio.line_of(e, "runs_on", line), f"engines.{eid}.runs_on")
    cited(ro, yamlio.line_of(e, "runs_on", line), f"engines.{eid}.runs_on")


def _check_defaults(col: Collector, cited, data: dict, eng: dict) -> list:
    """The defaults list (which engine a GPU and model get, and why): each rule names an engine above and
    only the conditions calibration.engine_for knows, with its sources; returns the rules (none when the
    list is missing or empty, after an error in `col`)."""
    rules = data.get("defaults")
    if not isinstance(rules, list) or not rules:
        col.add("defaults must be a list of {engine, when, because, src}", yamlio.line_of(data, "defaults", 1), "defaults")
        rules = []
    for i, r in enumerate(rules):
        line = yamlio.line_of(rules, i, 1)
        if not isinstance(r, dict) or r.get("engine") not in eng or not isinstance(r.get("when", {}), dict) \
                or not isinstance(r.get("because"), str):
            col.add("must be {engine: an engine above, when: {...}, because: TEXT, src: [...]}", line, f"defaults[{i}]")
            continue
        unknown = set(r.get("when") or {}) - {"mla", "software", "vendor", "gpu_class", "generations"}
        if unknown:
            col.add(f"unknown condition {sorted(unknown)[0]!r} (known: mla, software, vendor, gpu_class, generations)", line,
                    f"defaults[{i}].when")
        cited(r, line, f"defaults[{i}]")
    return rules


def _check_speculative(col: Collector, cited, data: dict) -> dict:
    """The speculative table (speculative.mtp: model -> drafted tokens N -> accepted length in [1, N + 1]),
    cited; returns the mtp mapping (empty when there is none)."""
    spec = data.get("speculative") or {}
    mtp = spec.get("mtp") if isinstance(spec, dict) else None
    for model, table in (mtp or {}).items():
        line = yamlio.line_of(mtp, model, 1)
        for n, f in (table or {}).items() if isinstance(table, dict) else [(None, None)]:
            if not isinstance(n, int) or isinstance(n, bool) or n < 1 or not isinstance(f, dict) \
                    or not is_number(f.get("v")) or not 1 <= f["v"] <= n + 1:
                col.add("must map drafted tokens N to {v: ACCEPTED LENGTH in [1, N + 1], src: [...]}", line,
                        f"speculative.mtp.{model}")
                continue
            cited(f, line, f"speculative.mtp.{model}.{n}")
    return mtp or {}


def load_engines(path: Path, sources: dict, software: tuple[str, ...]) -> dict:
    """engines.yaml: {engines: {id: {name, runs_on, max_batch, kv_share, layouts}}, defaults: [{engine,
    when, because, src}]}, checked for what calibration.engine_for and Calibration.for_engine read; every
    figure cites a source the catalog knows; `software`: the stacks gpus.yaml may name."""
    col = Collector(str(path))
    data = yamlio.load(path)
    if not isinstance(data, dict) or not isinstance(data.get("engines"), dict):
        col.add("expected a mapping with 'engines' and 'defaults'", 1, "engines")
        col.raise_if_any()
    eng = data["engines"]

    def cited(f, line, where):
        """An error in `col` for a figure `f` that cites no source or one the catalog does not know."""
        for s in (f.get("src") or []) if isinstance(f, dict) else []:
            if s not in sources:
                col.add(f"unknown source '{s}'", line, f"{where}.src")
        if not isinstance(f, dict) or not f.get("src"):
            col.add("needs its sources (src: [...])", line, where)

    for eid in eng:
        _check_engine(col, cited, eng, eid, software)
    rules = _check_defaults(col, cited, data, eng)
    mtp = _check_speculative(col, cited, data)
    col.raise_if_any()
    return {"engines": {k: dict(v) for k, v in eng.items()}, "defaults": [dict(r) for r in rules],
            "speculative": {"mtp": {m: dict(t) for m, t in mtp.items()}}}
