"""The memo's view: a decision record turned into the ready-made strings and lists that every memo
template places (templates compute nothing; docs/memo.md lists the fields).

`view` composes one function per memo section, in the memo's order: the header, the recommendation,
why (the decisive and supporting rules), the numbers, the alternatives, risks and prerequisites, the
workload as understood, the summary (drawn from those sections), the sources and the audit. Knowledge
IDs appear only in the audit; everywhere else `Cites` names them for people, and records each one it
names for the Sources list, so the sources section runs after every section that cites.
"""
from __future__ import annotations

import re

from advisor.inputs.catalog import Catalog
from advisor.judgement.alternatives import plain_reason as _plain_reason, ratio as _ratio
from advisor.numbers.objective import UNIT_LABELS
from advisor.shell import memokind
from advisor.shell.memochart import LEDGER_LABELS, chart, cost_chart, gb as _gb
from advisor.shell.memotradeoff import tradeoff_chart
from advisor.shell.memoworkload import applies, label, workload_rows
from advisor.shell.wording import (_ID, clean_all as _clean_all, count as _count, machines as _machines, offer as _offer, plan as _plan,
                                   usd as _usd, why_lost as _why_lost, job_usd as _job_usd, small_usd as _small_usd)
from advisor.shell.memowords import field_words as _field_words, power as _power, readable_all as _readable_all
from advisor.shell.memorecord import (SEVERITY, _Record, generation_date, _num, _layout, _layout_short, _unit_cost, _cost_sentence,
                                      _money_diff, _objective, _premium, _id_order, _effect)
from advisor.shell.memosummary import _cheaper_per_token, _summary, _closest_label, _range, _ranking_cost, _speed_short

DISAGREEMENTS = [
    "Bytes per parameter for mixed-precision AdamW: this memo uses 16 (C06); another seed document counts 18 (K08), "
    "shown as the other accounting.",
    "B200 memory: this memo uses 180 GB, usable on HGX/DGX boards (K11); another seed document quotes 192 GB on the package (T04).",
    "Training FLOPs of gpt-oss-120b: the worked example counts active parameters for compute (30.6 GFLOP per token) and "
    "all parameters for memory (W04); both are followed.",
]


WHY_LABELS = {"ideal": "Best case (weights / bandwidth)", "rl_step": "RL step", "per_card_gb": "Memory per card", "power_kw_per_node": "Power of a whole node",
              "usd_per_million_tokens": "Cost per million output tokens",
              "prefill_ms": "Prefill time", "decode_ms_per_token": "Time per generated token",
              "kv_headroom_gb": "Room left for the KV cache", "usd_per_hour": "Cost per hour",
              "training_hours": "Training time", "usd_per_job": "Cost per job", "tokens_per_s": "Tokens per second",
              "ttft_ms": "Time to first token", "kv_transfer_ms": "KV transfer between pools"}


def _load_basis(c: dict, inputs: dict) -> str:
    """What load the speed figures are at (issue 46): requests arriving at a rate, which a service sees and
    whose TTFT carries the queue, or a closed loop of N users, each sending its next request when its last
    one is answered (no queue: MLPerf's Server runs show TTFT 5-20x above such a figure at a rate)."""
    n = c.get("concurrency") or inputs.get("concurrency")
    if inputs.get("requests_per_s"):
        return (f"at {inputs['requests_per_s']:g} requests/s arriving at random (Poisson; the first token includes "
                f"the wait for a free slot), {n} sequences in flight")
    return f"at a closed loop of {n} users (each sends its next request when the last is answered: no queue)"


def view(rec: dict, catalog: Catalog) -> dict:
    """Everything a memo shows, as ready-made strings and lists (templates compute nothing). The summary
    comes first, then the evidence; knowledge IDs appear only in the audit."""
    x = _Record.of(rec, catalog)
    v = _header(x)
    v.update(_recommendation(x))
    v.update(_why(x))
    v.update(_numbers(x))
    v.update(_alternatives(x))
    v.update(_risks(x))
    v.update(_workload(x))
    summary = _summary(x, v)          # before the sources: the suggestions it words cite statements
    v.update(_sources(x))
    v.update(_audit(x, {a["gpu"]: a["plain_short"] for a in v["alternatives"]}))
    v["summary"] = summary
    # legacy name kept for user templates written against the first memo
    v["seed_ids"] = v["knowledge_ids"]
    # names from price files and configs (and rule texts from --rules) are one line of visible text in
    # every format; the Markdown memo escapes them further as it renders (memo._env)
    return _clean_all(_readable_all(v))


def _header(x: _Record) -> dict:
    model = x.inputs["model"]
    model_name = x.catalog.models[model].name if isinstance(model, str) and model in x.catalog.models else \
        (model.get("name") if isinstance(model, dict) else str(model))
    title = x.inputs.get("name") or f"{model_name} {x.mode}"
    return {"title": title, "generated": generation_date(), "mode": x.mode, "model": model_name}


def _recommendation(x: _Record) -> dict:
    """The headline and the facts of the recommended plan, or the exclusions when there is none."""
    r, mode, inputs, cites = x.r, x.mode, x.inputs, x.cites
    if not r:
        headline = "No GPU can be recommended: every candidate was excluded."
        if x.rec.get("over_budget"):
            # the plans the budget alone excluded: the budget the workload needs, said first
            headline = f"No GPU can be recommended within the budget: {x.rec['over_budget']['text']}."
        elif (x.rec.get("no_plan") or {}).get("text"):
            # what the workload needs and the constraint that binds, before the exclusions (issue 42)
            headline = f"No GPU can be recommended: {x.rec['no_plan']['text']}."
        # each GPU with the reasons its rules gave (the figure that missed, the layout that cannot run), not
        # only their titles
        why = {dc["gpu"]: [cites.prose(e["reason"], e.get("source", ())) for e in dc["excluded_by"] if e.get("reason")]
               for dc in x.rec["candidates"]}
        return {"recommended": False, "headline": headline,
                "facts": [(g, "excluded: " + "; ".join(why[g]) if why.get(g) else
                           "excluded by " + ", ".join(x.rule_titles.get(k, k) for k in rules))
                          for g, rules in x.rec["no_candidate"].items()]}
    c = x.cands[r["gpu"]]
    gpu = x.catalog.gpus[r["gpu"]]
    # the layout in words here; its notation (TP, PP, DP) is defined on the Layout line below, its first use
    headline = (_closest_label(x) + f"Use {r['count']} x {gpu.name} ({_machines(r, gpu.gpus_per_node)}, "
                f"{_layout_short(r)}): {_cost_sentence(mode, c, cites)}.")
    facts = [("GPU", f"{gpu.name} ({gpu.id}), {gpu.memory_gb:g} GB at {gpu.bandwidth_tb_s:g} TB/s"),
             ("Cards", f"{r['count']} on {_machines(r, gpu.gpus_per_node)}"),
             ("Layout", _layout(r, gpu.gpus_per_node)),
             *([("Engine", c["why"]["engine"])] if (c.get("why") or {}).get("engine") else []),
             ("Memory per card", _memory_line(c, inputs, gpu)),
             ("Cost", _cost_sentence(mode, c, cites))]
    if c.get("job_hours") is not None:
        facts.append(("Job", _job_line(c, inputs)))
    if memokind.own_units(c):
        facts.append(("Speed", memokind.speed_fact(c)))
    elif mode == "inference" and c.get("job_hours") is not None:
        # an offline job: no user waits on it, so its speed is the replicas' throughput at their largest batch
        facts.append(("Speed", f"{_num(c['tokens_per_s'], 0)} output tokens/s in all at {c.get('concurrency') or inputs.get('concurrency')} "
                               "sequences in flight, each replica at its largest batch, prompts' prefill included "
                               "(expected, calibrated: docs/accuracy.md)"))
    elif mode == "inference":
        facts.append(("Speed", f"first token in {_num(c.get('ttft_ms', c['prefill_ms']))} ms for a {inputs.get('prompt_tokens', 0):,}-token prompt; "
                               f"{_num(c['tokens_per_s_per_user'], 0)} tokens/s per user, {_num(c['tokens_per_s'], 0)} tokens/s in all"
                               f" {_load_basis(c, inputs)} (expected, calibrated: docs/accuracy.md)"))
    elif c.get("training_hours") is not None:
        rng = c.get("training_hours_range") or [c["training_hours"], c["training_hours"]]
        facts.append(("Time", f"about {_num(c['training_hours'])} hours ({_num(rng[0])}-{_num(rng[1])}) for "
                              + (f"{_count(inputs['training_tokens'])} tokens" if inputs.get("training_tokens") else "the run")
                              + f" at {_num((c.get('mfu') or 0) * 100, 0)}% MFU "
                              + (f"(the whole run: {_num(c['step_hours'])} h of steps / {c['goodput']:.2f} goodput, fitted on published "
                                 "whole runs: interruptions, stalls, checkpoints, evaluation; " if c.get("step_hours") and c.get("goodput") else "(")
                              + _calibrated(c) + ")"))
    if mode != "inference" and c.get("global_batch"):
        facts.append(("Batch", f"global batch {c['global_batch']:,} sequences ({c['why'].get('global_batch') or ('as given' if inputs.get('global_batch') else 'chosen by the planner')}), "
                               f"micro-batch {c.get('micro_batch')}, {c.get('micro_batches'):,} micro-batches per replica per step"
                               + (f", pipeline bubble {c['pipeline_bubble'] * 100:.1f}% ((PP - 1) / (micro-batches"
                                  + (f" x {c['virtual_stages']} interleaved chunks" if (c.get("virtual_stages") or 1) > 1 else "") + " + PP - 1))"
                                  if c.get("pipeline_bubble") else "")))
    if c.get("power_kw_per_node") is not None:
        facts.append(("Power", f"{_power(c, gpu)} ({cites.prose(c['why'].get('power_kw_per_node', ''))})"))
    if _objective(r):
        facts.append(("Ranked by", _objective(r)))
    return {"recommended": True, "gpu_name": gpu.name, "headline": headline, "facts": facts}


def _job_line(c: dict, inputs: dict) -> str:
    """An offline batch job's whole volume: its hours at the plan's throughput, the deadline met, its
    cost (the plan's own figures and their formulas)."""
    dl = (inputs.get("constraints") or {}).get("deadline_hours")
    met = (f"within the {dl:g}-hour deadline" if isinstance(dl, (int, float)) else
           "no deadline given: the cheapest plan per job")
    cost = (f"; {_job_usd(c['usd_per_job'])} for the job ({c['why'].get('usd_per_job', '')}), "
            f"{_small_usd(c['usd_per_million_io_tokens'])} per million input + output tokens"
            if c.get("usd_per_job") is not None and c.get("usd_per_million_io_tokens") is not None else "")
    return f"about {_num(c['job_hours'])} hours, {met}: {c['why'].get('job_hours', '')}{cost}"


def _why(x: _Record) -> dict:
    """The decisive rule, and the other rules that scored for the winner."""
    d, r, cites = x.d, x.r, x.cites
    decisive = None if not d else {
        "id": d["id"], "title": d.get("title", d["id"]), "source": cites.names(d["source"]),
        "cites": [cites.full(s) for s in d["source"] if re.fullmatch(_ID, s)],
        "where": f"{d['file']}:{d['line']}" if d.get("line") else d["file"], "because": cites.prose(d["because"], d["source"])}
    supporting = []
    if r:
        for c in x.decided[r["gpu"]]["contributions"]:
            if c["weight"] > 0 and (not d or c["rule"] != d["id"]):
                t = next(t for t in x.rec["trace"] if t["rule"] == c["rule"] and t["gpu"] in (r["gpu"], None))
                supporting.append({"id": c["rule"], "title": x.rule_titles[c["rule"]], "weight": f"{c['weight']:+g}",
                                   "source": cites.names(t["source"]), "because": cites.prose(t["because"], t["source"])})
    return {"decisive": decisive, "supporting": supporting}


def _numbers(x: _Record) -> dict:
    """The memory ledger, the compute figures, the ideal divisions and how each figure was reached."""
    est, cites, r = x.est, x.cites, x.r
    led = est["ledger_explained"]
    v: dict = {"ledger": [{"term": LEDGER_LABELS[k], "gb": _gb(led[k]["value"]), "how": cites.prose(led[k]["formula"]),
                           "source": cites.names(led[k]["sources"])} for k in LEDGER_LABELS if k in led and led[k]["value"]]}
    v["total"] = _gb(est["ledger"]["total_gb"])
    v["total_how"] = cites.prose(led["total_gb"]["formula"])
    alt = est.get("alternative_accounting", {}).get("model_states_gb")
    v["alt_accounting"] = cites.prose(f"Other accounting: {alt['formula']} = {_gb(alt['value'])}.") if alt else ""
    comp = est["compute_explained"]
    own = memokind.compute_rows(comp, cites.prose)
    if own is not None:           # a kind counted in images or clips: its own compute figures
        v["compute"] = own
    else:
        v["compute"] = _token_compute(comp, cites)
    if est.get("kv_bytes_per_token") is not None:
        v["compute"].append(("KV cache per token", f"{est['kv_bytes_per_token']:,.0f} bytes",
                             f"averaged over {x.inputs.get('context_tokens', 0):,} tokens"))
    v["notes"] = [cites.prose(n) for n in est.get("notes", [])]
    v["divisions"] = _divisions(x) if not (r and memokind.own_units(x.cands[r["gpu"]])) else []
    if r:
        v["why_figures"] = [(_why_label(k, x.mode), cites.prose(text))
                            for k, text in x.cands[r["gpu"]]["why"].items() if x.mode == "inference" or k != "ideal"]
    else:
        v["why_figures"] = []
    return v


def _token_compute(comp: dict, cites) -> list:
    out = [("Forward FLOPs per token", f"{comp['forward_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                     cites.prose(comp["forward_flops_per_token"]["formula"] + " (K04)"))]
    if "job_flops_per_token" in comp:
        out.append(("Training FLOPs per token", f"{comp['job_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                    cites.prose(comp["job_flops_per_token"]["formula"])))
    else:
        out.append(("Training FLOPs per token", f"{comp['train_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                    cites.prose(comp["train_flops_per_token"]["formula"] + " (K08), if this model were trained")))
    return out


def _why_label(key: str, mode: str) -> str:
    """A figure's name in the list of how the recommended layout's figures were computed."""
    if key == "usd_per_million_tokens" and mode != "inference":
        return "Cost per million training tokens"
    return WHY_LABELS.get(key) or memokind.WHY_LABELS.get(key) or _field_words(key)


def _divisions(x: _Record) -> list[tuple[str, str, str]]:
    """The seed's ideal figures (one division each), beside the expected ones."""
    r, cites = x.r, x.cites
    if r and x.mode == "inference":
        c = x.cands[r["gpu"]]
        ideal = c["ideal"]
        k19 = cites.title("K19")
        out = [
            ("Weights / VRAM", f"{ideal['weights_over_vram']:.2f} cards' worth of memory", f"does it fit? ({k19})"),
            ("Active weights / bandwidth", f"{ideal['decode_ms_per_token']:.2f} ms per token, at most "
                                           f"{ideal['tokens_per_s_single_user']:,.0f} tokens/s for one user", f"how fast? ({k19})"),
            ("Load vs compute", f"reading weights takes {ideal['load_to_compute_ratio']:,.0f}x longer than the math",
             f"decode is bandwidth-bound ({cites.title('K06')})"),
        ]
        if c.get("tpot_ms") is not None:
            out.append(("Expected per token", f"{c['tpot_ms']:.2f} ms at {c.get('concurrency')} sequences "
                        f"(the ideal figure above, one card at its spec bandwidth: {ideal['decode_ms_per_token']:.2f} ms)",
                        "calibrated on published runs: docs/accuracy.md"))
        return out
    if r and x.cands[r["gpu"]].get("training_hours") is not None and x.cands[r["gpu"]]["ideal"].get("training_hours_at_peak"):
        c = x.cands[r["gpu"]]
        return [("Hours at the peak matmul rate", f"{c['ideal']['training_hours_at_peak']:,.1f} h (ideal: every card at its "
                 "measured peak, no stalls)", cites.title("K08")),
                ("Expected hours", f"{c['training_hours']:,.1f} h at {(c.get('mfu') or 0) * 100:.0f}% MFU",
                 "calibrated on published runs: docs/accuracy.md")]
    return []


def _alternatives(x: _Record) -> dict:
    """Every other candidate with its figures, its cost difference from the winner and why it lost."""
    r, rec, cites, mode = x.r, x.rec, x.cites, x.mode
    base = x.cands[r["gpu"]] if r else {}
    base_cost = (x.decided[r["gpu"]].get("effective_cost") if r else None)
    use_effective = base_cost is not None
    if not use_effective:
        base_cost = base.get("usd_per_hour")
    unit = (r or {}).get("unit") or ""
    alts = []
    for g in [c["gpu"] for c in rec["candidates"]]:
        if r and g == r["gpu"]:
            continue
        c, dc = x.cands[g], x.decided[g]
        gpu = x.catalog.gpus[g]
        reasons = _why_lost(g, rec, x.decided, x.rule_titles, cites)
        cost = dc.get("effective_cost") if use_effective else c.get("usd_per_hour")
        if c["fits"]:
            figures = f"{c['count']} card{'s' if c['count'] > 1 else ''}, {_plan(c)}, {_gb(c['per_card_gb'])}/card, {_cost_sentence(mode, c, cites)}"
        else:
            figures = cites.prose(c.get("reason") or "does not fit")
        diff = _money_diff(cost, base_cost) if c["fits"] and r and cost is not None else ""
        if diff and diff != "same cost":
            # the effective cost is per unit of work (per million tokens, per job), not per hour
            diff += f" effective cost {UNIT_LABELS.get(unit, 'per unit of work')}" if use_effective else " per hour"
        prem = _premium(dc.get("premium"))
        # the hour beside the unit of work: when the ranking unit is the unit of work, unit_cost repeats it
        alts.append({"unit_cost": _ranking_cost(unit, c), "hour_cost": _ranking_cost("hour", c), "work_cost": _unit_cost(mode, c) or "-",
                     "speed": _speed_short(mode, c), "layout": f"{c['count']} x {g}, {_plan(c)}" if c["fits"] else "does not fit",
                     "plain": _plain_reason(dc, reasons, x.rule_titles, _ratio(unit, c, base), x.decided[r["gpu"]] if r else None),
                     "plain_short": _plain_reason(dc, reasons, x.rule_titles, _ratio(unit, c, base), x.decided[r["gpu"]] if r else None, short=True),
                     "cost_range": _range(dc.get("cost_range"))})
        alts[-1].update({"gpu": g, "name": gpu.name, "status": "excluded" if dc["excluded"] else f"rank {dc['rank']}",
                     "rank": dc.get("rank"), "excluded": dc["excluded"], "count": str(c.get("count") or "-"),
                     "cost": _usd(c.get("usd_per_hour")) + " per hour" if c.get("usd_per_hour") is not None else "price unknown",
                     "diff": diff + (f" ({prem})" if prem else ""), "diff_short": diff,
                     "figures": figures, "reasons": reasons,
                     # an excluded alternative's plain reason is its exclusions (said once); an unpriced one with no
                     # rule against it: its plain reason (no known price) says all
                     "short": "" if dc["excluded"] else "; ".join(([diff + (f", {prem}" if prem else "")] if diff else []) + reasons)
                              or ("" if c.get("usd_per_hour") is None else "scored no rule")})
    ru = rec.get("runner_up")
    runner_up = ru and {"gpu": ru["gpu"], "name": x.catalog.gpus[ru["gpu"]].name if ru["gpu"] in x.catalog.gpus else ru["gpu"],
                        "why": "; ".join(_why_lost(ru["gpu"], rec, x.decided, x.rule_titles, cites)) if ru["gpu"] in x.decided else ""}
    return {"alternatives": alts, "runner_up": runner_up,
            "cheaper_per_token": _cheaper_per_token(x, [a for a in alts if not a["excluded"]][:5])}


def _risks(x: _Record) -> dict:
    """The rules' warnings and notes (warnings first, by severity), and what the site must provide."""
    cites = x.cites
    risks = [{"severity": w["severity"], "kind": w["kind"], "text": cites.prose(w["text"], w["source"]), "rule": w["rule"],
              "source": cites.names(w["source"]), "mitigation": cites.prose(w.get("mitigation") or "", w["source"])}
             for w in x.rec["warnings"]]
    pre = []
    r = x.r
    if r:
        gpu = x.catalog.gpus[r["gpu"]]
        c = x.cands[r["gpu"]]
        if c.get("power_kw_per_node") is not None:
            pre.append(f"Power: {_power(c, gpu)} ({gpu.num('tdp_w'):g} W per card; {cites.title('C14')}).")
        else:
            pre.append("Power: the card's TDP is unknown in the sources; ask the vendor.")
        pre.append(f"Cooling: {gpu.fig('cooling').value or 'unknown'} ({cites.prose(gpu.fig('cooling').note or gpu.fig('cooling').cite())}).")
        ic = gpu.fig("interconnect")
        pre.append(f"Interconnect: {ic.value or 'PCIe only, no NVLink'}"
                   + (f", {ic.extra.get('gb_s')} GB/s per GPU" if ic.extra.get("gb_s") not in (None, "unknown") else "")
                   + ((f"; InfiniBand between nodes ({cites.title('K14')})." if ic.value
                       else f"; between nodes only the instances' own network ({cites.title('T03')}).") if r["nodes"] > 1 else "."))
        pre.append("Import: " + ("subject to US export control" if gpu.fig("us_export_controlled").value
                                 else "not subject to US export control") + f" ({cites.title('T08')}).")
        sw = gpu.fig("software")
        pre.append(f"Software: {sw.value} ({sw.extra.get('maturity', 'unknown')} stack; {cites.prose(sw.cite())}).")
    return {"risks": sorted(risks, key=lambda k: (k["kind"] != "warn", SEVERITY.get(k["severity"], 9))), "prerequisites": pre}


def _calibrated(c: dict) -> str:
    """Whether a training plan's speed rests on measurements of its own GPU family: the share of the
    matmul rate is fitted per family, and a family without a training record borrows the lowest."""
    share = ((c.get("speed_explained") or {}).get("matmul_share") or {}).get("factor") or {}
    if share.get("fitted_for_family") is False:
        return (f"not calibrated on {c['gpu']} training: no published training run of its family, so the lowest "
                "share measured on another family is used (docs/accuracy.md)")
    return "calibrated on published runs: docs/accuracy.md"


def _workload(x: _Record) -> dict:
    """The workload as understood, and the assumptions the advisor made for fields left out."""
    inputs = x.inputs
    defaults = [label(k, x.mode) for k in x.rec.get("defaults_filled", []) if applies(k, inputs)]
    sl = x.rec.get("service_level") or {}
    if sl and not sl.get("stated"):
        defaults.append("the service level (" + " and ".join(
            s for s in (f"first token within {sl['ttft_ms']:,.0f} ms" if sl.get("ttft_ms") else "",
                        f"{sl['tpot_ms']:,.0f} ms per output token" if sl.get("tpot_ms") else "") if s)
            + f", {x.cites.prose(sl['source'])})")
    rows = workload_rows(inputs, x.catalog)
    c = x.cands.get(x.r["gpu"]) if x.r else None
    if c and inputs.get("mode") != "inference":
        # fields the workload left to the planner: show what the recommended plan uses, not the default
        chosen = {"zero_stage": (f"ZeRO-{c['zero_stage']}" if c.get("zero_stage") else "none") + " (chosen by the planner)",
                  "activation_checkpointing": ("yes" if c.get("activation_checkpointing") else "no") + " (chosen by the planner)"}
        planned = {label(k, x.mode): chosen[k] for k in chosen if k in x.rec.get("defaults_filled", []) and c.get(k) is not None}
        rows = [(name, planned.get(name, val)) for name, val in rows]
    return {"workload": rows, "defaults": defaults}


def _sources(x: _Record) -> dict:
    """The seed documents' disagreements, the catalog's sources and prices, and every knowledge statement
    the memo named (the sections before this one registered them with `cites`)."""
    cites, catalog = x.cites, x.catalog
    # a plan counted in images or clips: the seeds' disagreements about LLM accounting do not apply
    own = bool(x.r) and memokind.own_units(x.cands[x.r["gpu"]])
    v: dict = {"disagreements": [cites.prose(s) for s in DISAGREEMENTS if not own or "B200" in s], "catalog_sources": _catalog_sources(x.rec, catalog)}
    v["prices"] = sorted({f"{catalog.gpus[c['gpu']].name if c['gpu'] in catalog.gpus else c['gpu']}: {_offer(c['price'])}; "
                          f"{cites.prose(c['price']['source'])} ({c['price']['tier']})"
                          for c in x.est["candidates"] if c.get("price")})
    # every knowledge ID the trace names too, though no text above named it (the audit shows the bare IDs)
    trace_ids = {s for t in x.rec["trace"] for s in t["source"] if re.fullmatch(_ID, s)}
    for i in sorted(trace_ids):
        cites.title(i)
    v["knowledge"] = [cites.full(i) for i in sorted(cites.used, key=_id_order)]
    v["knowledge_ids"] = [(i, cites.full(i)) for i in sorted(cites.used, key=_id_order)]
    return v


def _catalog_sources(rec: dict, catalog: Catalog) -> list[str]:
    """The catalog sources behind the recommended GPU's and the model's figures, with their dates."""
    r = rec.get("recommendation")
    if not r:
        return []
    gpu = catalog.gpus[r["gpu"]]
    ids = sorted({s for f in gpu.figures.values() for s in f.sources if not re.match(r"^[KTCAW]\d\d$", s)})
    model = rec["inputs"]["model"]
    if isinstance(model, str) and model in catalog.models:
        ids += sorted({s for f in catalog.models[model].figures.values() for s in f.sources
                       if not re.match(r"^[KTCAW]\d\d$", s)} - set(ids))
    sl = rec.get("service_level") or {}
    if sl and not sl.get("stated"):      # the interactive default's source, named in the service level
        ids += [x for x in sl.get("sources") or [] if x in catalog.sources and x not in ids]
    out = []
    for sid in ids:
        if sid == "unknown_explicit":
            out.append("unverified: some catalog figures of this GPU or model were found in no consulted source "
                       "(marked unknown_explicit in catalog/)")
            continue
        s = catalog.sources.get(sid, {})
        # a source without a public address: the catalog entry is what a reader can open
        where = "" if "http" in str(s.get("what", "")) else "; no public address: catalog entry " + sid + " in catalog/sources.yaml"
        out.append(f"{sid}: {s.get('what', '?')} (published {s.get('published', 'unknown')}, retrieved {s.get('retrieved', 'unknown')}{where})")
    return out


def _audit(x: _Record, lost_because: dict[str, str]) -> dict:
    """Every firing in order with its bare IDs and file:line, the digests of the inputs, and the charts
    (`lost_because`: by GPU, why an alternative lost, written beside a cheaper plan's bar)."""
    rec = x.rec
    audit = [{"order": t["order"], "rule": t["rule"], "where": f"{t['file']}:{t['line']}" + (
                  f", replacing shipped {t['replaces']} of {t['overrides']}" if t.get("replaces") else ""),
              "source": ", ".join(t["source"]), "gpu": t["gpu"] or "workload", "effect": _effect(t["effect"])}
             for t in rec["trace"]]
    ver = rec["versions"]
    digests = [("advisor", ver["advisor"]), ("rules sha256", ver["rules_sha256"]), ("catalog sha256", ver["catalog_sha256"])]
    return {"audit": audit, "digests": digests, "chart": chart(rec, x.catalog), "cost_chart": cost_chart(rec, x.catalog, lost_because),
            "tradeoff_chart": tradeoff_chart(rec)}


def _memory_line(c: dict, inputs: dict, gpu) -> str:
    """What each card holds: with `concurrency: max` the ledger holds one sequence's KV cache and the
    engine fills its share of the rest with the batch it runs, so no "free" figure is given (review 12:
    "35.9 GB free" beside 10 sequences of 30,800 tokens)."""
    if inputs.get("concurrency") == "max" and (c.get("concurrency") or 0) > 1:
        return (f"{_gb(c['per_card_gb'])} of {gpu.memory_gb:g} GB with one sequence's KV cache; concurrency: max fills "
                f"the engine's share of the rest with the KV of {c['concurrency']:,} sequences")
    return f"{_gb(c['per_card_gb'])} of {gpu.memory_gb:g} GB ({_gb(c['headroom_gb'])} free)"
