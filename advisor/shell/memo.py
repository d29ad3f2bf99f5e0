"""Recommendation memos: the decision record turned into formatted text, rendered by Jinja templates.

All arithmetic and formatting happen here (`view`; the wording of citations, money and values in
advisor/wording.py); templates under templates/ only place the strings they are given: a one-screen
summary first, then the evidence, the sources, and the audit last (docs/memo.md). Every template,
shipped or the user's, renders in advisor/sandbox.py (plain data only; only shipped ones cached);
every value is one line of visible text, escaped as it is printed in Markdown, autoescaped in HTML.
A broken or hostile template is an InputError (exit 2).
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

from jinja2 import TemplateError
from jinja2.exceptions import SecurityError

from advisor import HOME
from advisor.inputs.catalog import Catalog
from advisor.base.errors import InputError, Problem
from advisor.base.files import note_read
from advisor.numbers.objective import UNIT_LABELS
from advisor.shell import wording
from advisor.base.sandbox import MAX_TEXT, TEMPLATE_SECONDS    # the time limit is read from here at each rendering
from advisor.shell.wording import _ID, Cites as _Cites, clean_all as _clean_all, count as _count, fmt_input as _fmt_input, gist as _gist, offer as _offer, \
    markdown_code as _markdown_code, markdown_finalize as _markdown_finalize, plain as _plain, plan as _plan, suggestion as _suggestion, usd as _usd, why_lost as _why_lost

TEMPLATES = HOME / "templates"
FORMATS = {"text": "memo.txt.j2", "md": "memo.md.j2", "html": "memo.html.j2"}
LEDGER_LABELS = {"weights_gb": "Weights", "kv_cache_gb": "KV cache", "activations_gb": "Activations",
                 "gradients_gb": "Gradients", "optimizer_gb": "Optimizer states", "overhead_gb": "Overhead / safety"}
DISAGREEMENTS = [
    "Bytes per parameter for mixed-precision AdamW: this memo uses 16 (C06); another seed document counts 18 (K08), "
    "shown as the other accounting.",
    "B200 memory: this memo uses 180 GB, usable on HGX/DGX boards (K11); another seed document quotes 192 GB on the package (T04).",
    "Training FLOPs of gpt-oss-120b: the worked example counts active parameters for compute (30.6 GFLOP per token) and "
    "all parameters for memory (W04); both are followed.",
]
HOURS_PER_MONTH = 730          # 24 x 365 / 12
SEVERITY = {"high": 0, "medium": 1, "low": 2, "info": 3}
#: workload fields as the dialogue (rules/questions.yaml) names them; a field only shows in the modes it applies to
FIELD_LABELS = {
    "mode": "What the GPUs do", "model": "Model", "precision": "Precision of the weights",
    "kv_precision": "Precision of the KV cache", "method": "Training method", "lora_rank": "LoRA rank",
    "optimizer": "Optimizer", "master_weights": "FP32 master copy of 16-bit weights", "zero_stage": "ZeRO stage (sharding)",
    "activation_checkpointing": "Recompute activations (activation checkpointing)",
    "context_tokens": "Tokens per sequence (context length)", "prompt_tokens": "Prompt tokens per request",
    "output_tokens": "Generated tokens per request", "concurrency": "Sequences at once (concurrent users or batch size)",
    "training_tokens": "Tokens in the whole job", "latency": "Interactive users or batch processing",
    "task": "Kind of job", "utilisation": "Share of the month in use",
    "import_restricted": "Barred from US export-controlled accelerators", "liquid_cooling": "Liquid cooling in the data centre",
    "power_kw_per_node": "Power available per node", "deployment": "Where the GPUs run", "load": "Load",
    "budget_usd_per_hour": "Most you will pay per hour", "max_gpus": "Most GPUs you can use",
    "deadline_hours": "Deadline for the job", "gpus": "Only these GPUs",
}
TRAINING_LABELS = {"concurrency": "Micro-batch per GPU"}
MODEL_LABELS = {"params_b": "parameters", "active_params_b": "active parameters", "expert_params_b": "expert parameters",
                "kv_heads": "KV heads", "head_dim": "head size", "mla_kv_dim": "MLA cache width",
                "max_context": "longest context"}
INFERENCE_ONLY = {"latency", "prompt_tokens", "output_tokens", "kv_precision"}
TRAINING_ONLY = {"method", "lora_rank", "optimizer", "master_weights", "zero_stage", "activation_checkpointing",
                 "training_tokens", "deadline_hours"}
FIELD_UNITS = {"context_tokens": "tokens", "prompt_tokens": "tokens", "output_tokens": "tokens",
               "training_tokens": "tokens", "power_kw_per_node": "kW", "deadline_hours": "hours"}
WHY_LABELS = {"ideal": "Best case (weights / bandwidth)", "per_card_gb": "Memory per card", "power_kw_per_node": "Power per node",
              "prefill_ms": "Prefill time", "decode_ms_per_token": "Time per generated token",
              "kv_headroom_gb": "Room left for the KV cache", "usd_per_hour": "Cost per hour",
              "training_hours": "Training time", "usd_per_job": "Cost per job", "tokens_per_s": "Tokens per second"}


def _gb(x) -> str:
    if x is None:
        return "unknown"
    return f"{x:,.1f} GB" if x < 1000 else f"{x:,.0f} GB"


def _num(x, nd=1) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def _layout(c: dict, gpus_per_node: int) -> str:
    """The layout in words: where tensor-parallel groups, pipeline stages and replicas sit."""
    parts = []
    if c["tp"] > 1:
        parts.append(f"each layer split over {c['tp']} cards (tensor-parallel, inside a node)")
    if c["pp"] > 1:
        where = "across nodes" if c["tp"] * c["pp"] > gpus_per_node else "in one node"
        parts.append(f"layers in {c['pp']} pipeline stages {where}")
    if c["dp"] > 1:
        parts.append(f"{c['dp']} replicas sharing the work (data-parallel)")
    return f"{_plan(c)}: " + ("; ".join(parts) if parts else "the whole model on one card")


def _unit_cost(mode: str, c: dict) -> str:
    if mode == "inference" and c.get("usd_per_million_tokens") is not None:
        return f"{_usd(c['usd_per_million_tokens'])} per million output tokens"
    if mode != "inference" and c.get("usd_per_job") is not None:
        return f"{_usd(c['usd_per_job'], 0)} per job"
    return ""


def _cost_sentence(mode: str, c: dict, cites: _Cites | None = None) -> str:
    if c.get("usd_per_hour") is None:
        why = c.get("price_unknown") or "no quote"
        return f"price unknown ({cites.prose(why) if cites else _plain(why)})"
    s = f"{_usd(c['usd_per_hour'])} per hour ({_offer(c['price'])})"
    unit = _unit_cost(mode, c)
    return s + (f", {unit}" if unit else "")


def generation_date() -> str:
    """Today's date, or SOURCE_DATE_EPOCH's for reproducible builds and snapshots."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        try:
            return time.strftime("%Y-%m-%d", time.gmtime(int(epoch)))
        except (OverflowError, OSError, ValueError):
            raise InputError(Problem(f"SOURCE_DATE_EPOCH={epoch[:20]}{'...' if len(epoch) > 20 else ''} is not a date "
                                     "(seconds since 1970 up to the year 9999)")) from None
    return time.strftime("%Y-%m-%d", time.localtime())


def _utilisation(inputs: dict) -> tuple[float, str]:
    """(hours per month, how they were chosen): the workload's utilisation, or 24x7 said as such."""
    u = inputs.get("utilisation")
    if isinstance(u, (int, float)) and not isinstance(u, bool) and 0 < u <= 1:
        return HOURS_PER_MONTH * u, f"at {u:.0%} utilisation ({HOURS_PER_MONTH * u:,.0f} h)"
    return HOURS_PER_MONTH, f"if run 24x7 ({HOURS_PER_MONTH} h; no utilisation given)"


def _layout_short(c: dict) -> str:
    parts = []
    if c["tp"] > 1:
        parts.append(f"each layer split over {c['tp']} cards")
    if c["pp"] > 1:
        parts.append(f"{c['pp']} pipeline stages")
    if c["dp"] > 1:
        parts.append(f"{c['dp']} replicas")
    return ", ".join(parts) or "the whole model on one card"


def _money_diff(x, base) -> str:
    if x is None or base is None:
        return ""                       # nothing to compare: the prices are shown beside it
    d = x - base
    if abs(d) < 0.005 and abs(d) <= 0.001 * max(abs(base), abs(x)):
        return "same cost"
    # a small unit cost (per million training tokens) keeps three significant figures, not two decimals
    return f"{'+' if d > 0 else '-'}{_usd(abs(d)) if abs(d) >= 0.1 else f'${abs(d):.3g}'}"


OBJECTIVES = {"cost": "Chosen for the lowest cost {unit}, after rule premiums.",
              "time": "Chosen for the shortest time, among the priced options.",
              "cards": "Chosen for the fewest cards, among the priced options."}


def _objective(r: dict) -> str:
    o = str(r.get("objective") or "")
    if not o:
        return ""
    unit = UNIT_LABELS.get(r.get("unit") or "", "")
    if o in OBJECTIVES:
        return OBJECTIVES[o].format(unit=unit).replace("cost ,", "cost,")
    return f"Chosen for the lowest {o.replace('_', ' ')}."


def _unpriced_line(unpriced: list[dict]) -> str:
    """One sentence for the summary: the unpriced GPUs likeliest to win (highest break-even) and their prices."""
    top = sorted(unpriced, key=lambda u: -(u.get("break_even_usd_per_gpu_hour") or 0))[:3]
    if not top:
        return ""
    names = [f"{u.get('count', '?')} x {u.get('gpu')}" for u in top]
    prices = [_usd(u["break_even_usd_per_gpu_hour"]) for u in top if u.get("break_even_usd_per_gpu_hour") is not None]
    more = len(unpriced) - len(top)
    who = (", ".join(names[:-1]) + " and " + names[-1]) if len(names) > 1 else names[0]
    if more > 0:
        who += f" (and {more} more)"
    if len(unpriced) == 1:
        return f"{who} has no known price" + (f"; it would be the better buy at under {prices[0]} per GPU-hour." if prices else ".")
    parts = []
    for k, u in enumerate(top):
        be = u.get("break_even_usd_per_gpu_hour")
        parts.append(names[k] + ("" if be is None else f" (would win under {_usd(be)} per GPU-hour)" if not parts else f" ({_usd(be)})"))
    listed = (", ".join(parts[:-1]) + (" and " if more <= 0 else ", ") + parts[-1]) + (f" and {more} more" if more > 0 else "")
    return f"no known price for {listed}."


def _premium(x) -> str:
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not x:
        return ""
    return f"{x:+.0%} rule premium"


def view(rec: dict, catalog: Catalog) -> dict:
    """Everything a memo shows, as ready-made strings and lists (templates compute nothing). The summary
    comes first, then the evidence; knowledge IDs appear only in the audit."""
    est = rec["estimate"]
    inputs = rec["inputs"]
    mode = inputs["mode"]
    cites = _Cites(catalog)
    cands = {c["gpu"]: c for c in est["candidates"]}
    decided = {c["gpu"]: c for c in rec["candidates"]}
    rule_titles = {t["rule"]: t.get("title", t["rule"]) for t in rec["trace"]}
    model = inputs["model"]
    model_name = catalog.models[model].name if isinstance(model, str) and model in catalog.models else \
        (model.get("name") if isinstance(model, dict) else str(model))
    title = inputs.get("name") or f"{model_name} {mode}"
    v: dict = {"title": title, "generated": generation_date(), "mode": mode, "model": model_name}
    r = rec.get("recommendation")
    d = rec.get("decisive_rule")
    hours, hours_how = _utilisation(inputs)
    summary: dict = {"cost": [], "reasons": [], "risks": [], "alternatives": [], "suggestions": [], "unpriced": [],
                     "objective": "", "api": None}
    if r:
        c = cands[r["gpu"]]
        gpu = catalog.gpus[r["gpu"]]
        v["recommended"] = True
        v["gpu_name"] = gpu.name
        v["headline"] = (f"Use {r['count']} x {gpu.name} ({r['nodes']} node{'s' if r['nodes'] > 1 else ''}, "
                         f"{_plan(r)}): {_cost_sentence(mode, c, cites)}.")
        summary["sentence"] = (f"Use {r['count']} x {gpu.name} on {r['nodes']} node{'s' if r['nodes'] > 1 else ''} "
                               f"({_layout_short(r)}).")
        if c.get("usd_per_hour") is not None:
            summary["cost"] = [("Per hour", _usd(c["usd_per_hour"])),
                               ("Per month", f"{_usd(c['usd_per_hour'] * hours, 0)} {hours_how}")]
            unit = _unit_cost(mode, c)
            if unit:
                summary["cost"].append(("Per unit of work", unit))
            summary["cost"].append(("Offer", _offer(c["price"])))
        else:
            summary["cost"] = [("Cost", _cost_sentence(mode, c, cites))]
        tco = r.get("tco")
        if isinstance(tco, dict) and tco:
            summary["cost"].append(("Buy or rent", _tco(tco)))
        summary["objective"] = _objective(r)
        summary["api"] = wording.api_line(rec.get("api_comparison"))
        v["facts"] = [("GPU", f"{gpu.name} ({gpu.id}), {gpu.memory_gb:g} GB at {gpu.bandwidth_tb_s:g} TB/s"),
                      ("Cards", f"{r['count']} on {r['nodes']} node{'s' if r['nodes'] > 1 else ''}"),
                      ("Layout", _layout(r, gpu.gpus_per_node)),
                      ("Memory per card", f"{_gb(c['per_card_gb'])} of {gpu.memory_gb:g} GB ({_gb(c['headroom_gb'])} free)"),
                      ("Cost", _cost_sentence(mode, c, cites))]
        if mode == "inference":
            v["facts"].append(("Speed", f"first token in {_num(c.get('ttft_ms', c['prefill_ms']))} ms for a {inputs.get('prompt_tokens', 0):,}-token prompt; "
                                        f"{_num(c['tokens_per_s_per_user'], 0)} tokens/s per user, {_num(c['tokens_per_s'], 0)} tokens/s in all"
                                        f" at {c.get('concurrency') or inputs.get('concurrency')} sequences (expected, calibrated: docs/accuracy.md)"))
        elif c.get("training_hours") is not None:
            rng = c.get("training_hours_range") or [c["training_hours"], c["training_hours"]]
            v["facts"].append(("Time", f"about {_num(c['training_hours'])} hours ({_num(rng[0])}-{_num(rng[1])}) for "
                                       f"{_count(inputs.get('training_tokens', 0))} tokens at {_num((c.get('mfu') or 0) * 100, 0)}% MFU "
                                       "(calibrated on published runs: docs/accuracy.md)"))
        if c.get("power_kw_per_node") is not None:
            v["facts"].append(("Power", f"about {_num(c['power_kw_per_node'])} kW per node ({cites.prose(c['why'].get('power_kw_per_node', ''))})"))
    else:
        v["recommended"] = False
        v["headline"] = "No GPU can be recommended: every candidate was excluded."
        summary["sentence"] = v["headline"]
        v["facts"] = [(g, "excluded by " + ", ".join(rule_titles.get(x, x) for x in rules)) for g, rules in rec["no_candidate"].items()]
        by_rule: dict = {}
        for g, rules in rec["no_candidate"].items():
            for x in rules:
                by_rule.setdefault(rule_titles.get(x, x), []).append(g)
        summary["reasons"] = [f"{t}: {', '.join(gs[:4])}{f' and {len(gs) - 4} more' if len(gs) > 4 else ''}."
                              for t, gs in sorted(by_rule.items(), key=lambda kv: -len(kv[1]))][:3]
    v["decisive"] = None if not d else {
        "id": d["id"], "title": d.get("title", d["id"]), "source": cites.names(d["source"]),
        "cites": [cites.full(s) for s in d["source"] if re.fullmatch(_ID, s)],
        "where": f"{d['file']}:{d['line']}" if d.get("line") else d["file"], "because": cites.prose(d["because"], d["source"])}
    supporting = []
    if r:
        for x in decided[r["gpu"]]["contributions"]:
            if x["weight"] > 0 and (not d or x["rule"] != d["id"]):
                t = next(t for t in rec["trace"] if t["rule"] == x["rule"] and t["gpu"] in (r["gpu"], None))
                supporting.append({"id": x["rule"], "title": rule_titles[x["rule"]], "weight": f"{x['weight']:+g}",
                                   "source": cites.names(t["source"]), "because": cites.prose(t["because"], t["source"])})
    v["supporting"] = supporting
    if v["decisive"]:
        first = v["decisive"]["because"]
        head = v["decisive"]["title"].split(":")[0]
        if first.startswith(head + ":"):
            first = first[len(head) + 1:].strip()
        summary["reasons"].append(f"{v['decisive']['title']}: {_gist(first, 90)}" if first else v["decisive"]["title"] + ".")
    summary["reasons"] += [s["title"] + "." for s in supporting][:3 - len(summary["reasons"])]
    # the numbers
    led = est["ledger_explained"]
    v["ledger"] = [{"term": LEDGER_LABELS[k], "gb": _gb(led[k]["value"]), "how": cites.prose(led[k]["formula"]),
                    "source": cites.names(led[k]["sources"])} for k in LEDGER_LABELS if led[k]["value"]]
    v["total"] = _gb(est["ledger"]["total_gb"])
    v["total_how"] = cites.prose(led["total_gb"]["formula"])
    alt = est.get("alternative_accounting", {}).get("model_states_gb")
    v["alt_accounting"] = cites.prose(f"Other accounting: {alt['formula']} = {_gb(alt['value'])}.") if alt else ""
    comp = est["compute_explained"]
    v["compute"] = [("Forward FLOPs per token", f"{comp['forward_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                     cites.prose(comp["forward_flops_per_token"]["formula"] + " (K04)"))]
    if "job_flops_per_token" in comp:
        v["compute"].append(("Training FLOPs per token", f"{comp['job_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                             cites.prose(comp["job_flops_per_token"]["formula"])))
    else:
        v["compute"].append(("Training FLOPs per token", f"{comp['train_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                             cites.prose(comp["train_flops_per_token"]["formula"] + " (K08), if this model were trained")))
    if est.get("kv_bytes_per_token") is not None:
        v["compute"].append(("KV cache per token", f"{est['kv_bytes_per_token']:,.0f} bytes",
                             f"averaged over {inputs.get('context_tokens', 0):,} tokens"))
    v["notes"] = [cites.prose(n) for n in est.get("notes", [])]
    if r and mode == "inference":
        c = cands[r["gpu"]]
        ideal = c["ideal"]
        k19 = cites.title("K19")
        v["divisions"] = [
            ("Weights / VRAM", f"{ideal['weights_over_vram']:.2f} cards' worth of memory", f"does it fit? ({k19})"),
            ("Active weights / bandwidth", f"{ideal['decode_ms_per_token']:.2f} ms per token, at most "
                                           f"{ideal['tokens_per_s_single_user']:,.0f} tokens/s for one user", f"how fast? ({k19})"),
            ("Load vs compute", f"reading weights takes {ideal['load_to_compute_ratio']:,.0f}x longer than the math",
             f"decode is bandwidth-bound ({cites.title('K06')})"),
        ]
        if c.get("tpot_ms") is not None:
            v["divisions"].append(("Expected per token", f"{c['tpot_ms']:.2f} ms at {c.get('concurrency')} sequences "
                                   f"(the ideal figure above, one card at its spec bandwidth: {ideal['decode_ms_per_token']:.2f} ms)",
                                   "calibrated on published runs: docs/accuracy.md"))
    elif r and cands[r["gpu"]].get("training_hours") is not None and cands[r["gpu"]]["ideal"].get("training_hours_at_peak"):
        c = cands[r["gpu"]]
        v["divisions"] = [("Hours at the peak matmul rate", f"{c['ideal']['training_hours_at_peak']:,.1f} h (ideal: every card at its "
                           "measured peak, no stalls)", cites.title("K08")),
                          ("Expected hours", f"{c['training_hours']:,.1f} h at {(c.get('mfu') or 0) * 100:.0f}% MFU",
                           "calibrated on published runs: docs/accuracy.md")]
    else:
        v["divisions"] = []
    if r:
        c = cands[r["gpu"]]
        v["why_figures"] = [(WHY_LABELS.get(k, k.replace("_", " ").capitalize()), cites.prose(text)) for k, text in c["why"].items()
                            if mode == "inference" or k != "ideal"]
    else:
        v["why_figures"] = []
    # alternatives
    base = cands[r["gpu"]] if r else {}
    base_cost = (decided[r["gpu"]].get("effective_cost") if r else None)
    use_effective = base_cost is not None
    if not use_effective:
        base_cost = base.get("usd_per_hour")
    unit = (r or {}).get("unit") or ""
    alts = []
    for g in [x["gpu"] for x in rec["candidates"]]:
        if r and g == r["gpu"]:
            continue
        c, dc = cands[g], decided[g]
        gpu = catalog.gpus[g]
        reasons = _why_lost(g, rec, decided, rule_titles, cites)
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
        alts.append({"gpu": g, "name": gpu.name, "status": "excluded" if dc["excluded"] else f"rank {dc['rank']}",
                     "rank": dc.get("rank"), "excluded": dc["excluded"], "count": str(c.get("count") or "-"),
                     "cost": _usd(c.get("usd_per_hour")) + " per hour" if c.get("usd_per_hour") is not None else "price unknown",
                     "diff": diff + (f" ({prem})" if prem else ""), "diff_short": diff,
                     "figures": figures, "reasons": reasons,
                     "short": "; ".join(([diff + (f", {prem}" if prem else "")] if diff else []) + reasons) or "scored no rule"})
    v["alternatives"] = alts
    # the summary keeps the two best and the difference alone (the rule premium is in the alternatives table)
    ranked = [a for a in alts if not a["excluded"]][:2]
    summary["alternatives"] = [{"name": a["name"], "gpu": a["gpu"], "count": a["count"], "cost": a["cost"],
                                "diff": a["diff_short"].split(" effective cost")[0] + (" effective" if " effective cost" in a["diff_short"] else ""),
                                "diff_long": a["diff"], "why": a["reasons"][0] if a["reasons"] else "scored no rule"}
                               for a in ranked]
    ru = rec.get("runner_up")
    v["runner_up"] = ru and {"gpu": ru["gpu"], "name": catalog.gpus[ru["gpu"]].name if ru["gpu"] in catalog.gpus else ru["gpu"],
                             "why": "; ".join(_why_lost(ru["gpu"], rec, decided, rule_titles, cites)) if ru["gpu"] in decided else ""}
    unpriced = [u for u in (rec.get("unpriced") or []) if isinstance(u, dict)]
    line = _unpriced_line(unpriced)
    if line:
        summary["unpriced"].append(line)
    # the objective, unless the decisive reason already says it (the cost ranking rule)
    # and the default objective (cost) goes to the details, to keep the summary on one screen
    summary["objective_line"] = "" if (d and str(d.get("id", "")).startswith("ranking-cost")) or \
        (r or {}).get("objective") == "cost" else summary["objective"]
    if r and summary["objective"]:
        v["facts"].append(("Ranked by", summary["objective"]))
    summary["suggestions"] = [_suggestion(s, cites) for s in (rec.get("suggestions") or []) if isinstance(s, dict)]
    # risks and prerequisites
    risks = [{"severity": w["severity"], "kind": w["kind"], "text": cites.prose(w["text"], w["source"]), "rule": w["rule"],
              "source": cites.names(w["source"])} for w in rec["warnings"]]
    v["risks"] = sorted(risks, key=lambda x: (x["kind"] != "warn", SEVERITY.get(x["severity"], 9)))
    summary["risks"] = [{"severity": x["severity"], "text": _gist(x["text"], 55)}
                        for x in v["risks"] if x["kind"] == "warn" or x["severity"] in ("high", "medium")][:2] or \
                       [{"severity": x["severity"], "text": _gist(x["text"], 55)} for x in v["risks"]][:1]
    pre = []
    if r:
        gpu = catalog.gpus[r["gpu"]]
        c = cands[r["gpu"]]
        if c.get("power_kw_per_node") is not None:
            pre.append(f"Power: about {_num(c['power_kw_per_node'])} kW per node ({gpu.num('tdp_w'):g} W per card; {cites.title('C14')}).")
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
    v["prerequisites"] = pre
    # assumptions and sources
    v["workload"] = _workload_rows(inputs, catalog)
    v["defaults"] = [_label(k, mode) for k in rec.get("defaults_filled", []) if _applies(k, inputs)]
    sl = rec.get("service_level") or {}
    if sl and not sl.get("stated"):
        v["defaults"].append("the service level (" + " and ".join(
            x for x in (f"first token within {sl['ttft_ms']:,.0f} ms" if sl.get("ttft_ms") else "",
                        f"{sl['tpot_ms']:,.0f} ms per output token" if sl.get("tpot_ms") else "") if x)
            + f", {cites.prose(sl['source'])})")
    v["disagreements"] = [cites.prose(x) for x in DISAGREEMENTS]
    v["catalog_sources"] = _catalog_sources(rec, catalog)
    v["prices"] = sorted({f"{catalog.gpus[c['gpu']].name if c['gpu'] in catalog.gpus else c['gpu']}: {_offer(c['price'])}; "
                          f"{cites.prose(c['price']['source'])} ({c['price']['tier']})"
                          for c in est["candidates"] if c.get("price")})
    # every knowledge ID the memo named, then the audit (which alone shows the bare IDs)
    trace_ids = {s for t in rec["trace"] for s in t["source"] if re.fullmatch(_ID, s)}
    for i in sorted(trace_ids):
        cites.title(i)
    v["knowledge"] = [cites.full(i) for i in sorted(cites.used, key=_id_order)]
    v["knowledge_ids"] = [(i, cites.full(i)) for i in sorted(cites.used, key=_id_order)]
    v["audit"] = [{"order": t["order"], "rule": t["rule"], "where": f"{t['file']}:{t['line']}" + (
                       f", replacing shipped {t['replaces']} of {t['overrides']}" if t.get("replaces") else ""),
                   "source": ", ".join(t["source"]), "gpu": t["gpu"] or "workload", "effect": _effect(t["effect"])}
                  for t in rec["trace"]]
    ver = rec["versions"]
    v["digests"] = [("advisor", ver["advisor"]), ("rules sha256", ver["rules_sha256"]), ("catalog sha256", ver["catalog_sha256"])]
    v["chart"] = _chart(rec, catalog)
    v["summary"] = summary
    # legacy name kept for user templates written against the first memo
    v["seed_ids"] = v["knowledge_ids"]
    # names from price files and configs (and rule texts from --rules) are one line of visible text in
    # every format; the Markdown memo escapes them further as it renders (_env)
    return _clean_all(v)


def _id_order(kid: str) -> tuple:
    return ("KTCAW".index(kid[0]) if kid[0] in "KTCAW" else 9, kid)


def _tco(t: dict) -> str:
    parts = []
    if t.get("capex_usd") is not None:
        parts.append(f"buying costs {_usd(t['capex_usd'], 0)} up front")
    if t.get("opex_usd_per_month") is not None:
        parts.append(f"{_usd(t['opex_usd_per_month'], 0)} per month to run")
    if t.get("rent_usd_per_month") is not None:
        parts.append(f"renting {_usd(t['rent_usd_per_month'], 0)} per month")
    be = t.get("break_even_months")
    if be is not None:
        parts.append(f"buying pays off after {be:,.0f} months" if be > 0 else "buying never pays off")
    return "; ".join(parts) or "no figures"


def _label(k: str, mode: str) -> str:
    if mode != "inference" and k in TRAINING_LABELS:
        return TRAINING_LABELS[k]
    return FIELD_LABELS.get(k, k.replace("_", " "))


def _workload_rows(inputs: dict, catalog: Catalog) -> list[tuple[str, str]]:
    """The workload as understood, named as the dialogue names it; fields of another mode left out."""
    mode = inputs["mode"]
    rows = []
    for k, val in inputs.items():
        if k == "name" or not _applies(k, inputs):
            continue
        if k == "constraints":
            for ck, cv in (val or {}).items():
                rows.append((_label(ck, mode), _fmt_value(ck, cv, catalog)))
            continue
        rows.append((_label(k, mode), _fmt_value(k, val, catalog)))
    return rows


def _applies(k: str, inputs: dict) -> bool:
    """Whether a workload field means anything for this workload (the dialogue would have asked it)."""
    mode = inputs["mode"]
    if (mode != "inference" and k in INFERENCE_ONLY) or (mode == "inference" and k in TRAINING_ONLY):
        return False
    return not (k == "lora_rank" and inputs.get("method") not in ("lora", "qlora"))


def _fmt_value(k: str, val, catalog: Catalog) -> str:
    if k == "model":
        if isinstance(val, str) and val in catalog.models:
            return f"{catalog.models[val].name} ({val})"
        if isinstance(val, dict):
            name = val.get("name") or "custom model"
            figs = ", ".join(f"{MODEL_LABELS.get(x, x.replace('_', ' '))} {_fmt_input(y)}{'B' if x.endswith('params_b') else ''}"
                             for x, y in val.items() if x != "name")
            return f"{name}: {figs}"
    if k == "budget_usd_per_hour" and isinstance(val, (int, float)):
        return _usd(val)
    if k == "utilisation" and isinstance(val, (int, float)):
        return f"{val:.0%}"
    if k in FIELD_UNITS and isinstance(val, (int, float)) and not isinstance(val, bool):
        return f"{_count(val) if val >= 1e6 else _fmt_input(val)} {FIELD_UNITS[k]}"
    return _fmt_input(val)


def _effect(e: dict) -> str:
    k = e["kind"]
    if k in ("prefer", "avoid"):
        return f"{k} {e['weight']:g}"
    if k == "exclude":
        return "exclude"
    if k == "derive":
        return "derive " + ", ".join(f"{a}={b}" for a, b in e.items() if a != "kind")
    return f"{k} ({e.get('severity', '')})"


def _catalog_sources(rec: dict, catalog: Catalog) -> list[str]:
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
        out.append(f"{sid}: {s.get('what', '?')} (published {s.get('published', 'unknown')}, retrieved {s.get('retrieved', 'unknown')})")
    return out


def _chart(rec: dict, catalog: Catalog) -> dict:
    """Geometry of the SVG chart: each candidate's memory need (split in the ledger's proportions)
    against the capacity of its cards."""
    est = rec["estimate"]
    led = est["ledger"]
    total = led["total_gb"] or 1
    shown = [c for c in rec["candidates"] if c["fits"]][:12]
    cands = {c["gpu"]: c for c in est["candidates"]}
    rows = []
    scale_max = max((cands[c["gpu"]]["count"] * catalog.gpus[c["gpu"]].memory_gb for c in shown), default=1)
    width = 520
    colours = {"weights_gb": "#4e79a7", "kv_cache_gb": "#f28e2b", "activations_gb": "#59a14f",
               "gradients_gb": "#e15759", "optimizer_gb": "#b07aa1", "overhead_gb": "#9c9c9c"}
    for i, c in enumerate(shown):
        e = cands[c["gpu"]]
        capacity = e["count"] * catalog.gpus[c["gpu"]].memory_gb
        need = e["count"] * e["per_card_gb"]
        x = 0.0
        segs = []
        for k, colour in colours.items():
            share = (led[k] or 0) / total
            w = need * share / scale_max * width
            if w <= 0:
                continue
            segs.append({"x": f"{160 + x:.1f}", "w": f"{w:.1f}", "colour": colour, "label": LEDGER_LABELS[k]})
            x += w
        rows.append({"y": f"{30 + i * 28}", "ty": f"{30 + i * 28 + 14}", "gpu": c["gpu"],
                     "cap_w": f"{capacity / scale_max * width:.1f}", "segs": segs,
                     "label": f"{_gb(need)} of {_gb(capacity)} ({e['count']} card{'s' if e['count'] > 1 else ''})",
                     "lx": f"{160 + capacity / scale_max * width + 6:.1f}",
                     "winner": bool(rec.get("recommendation")) and c["gpu"] == rec["recommendation"]["gpu"]})
    present = [(k, col) for k, col in colours.items() if led[k]]
    legend, x, row, total_w = [], 160.0, 0, 160 + width + 230
    for k, col in present:
        w = 14 + len(LEDGER_LABELS[k]) * 7.5 + 16        # swatch, label (generous 12 px characters), gap
        if x + w > total_w and x > 160:
            x, row = 160.0, row + 1
        legend.append({"x": f"{x:.0f}", "tx": f"{x + 14:.0f}", "right": f"{x + w - 10:.0f}", "colour": col,
                       "label": LEDGER_LABELS[k], "y": f"{36 + len(rows) * 28 + row * 18}", "ty": f"{46 + len(rows) * 28 + row * 18}"})
        x += w
    return {"rows": rows, "height": f"{60 + len(rows) * 28 + row * 18}", "width": f"{total_w}", "legend": legend,
            "legend_y": f"{36 + len(rows) * 28}", "legend_ty": f"{46 + len(rows) * 28}"}


# --- rendering ----------------------------------------------------------------------------------------

def _wrap(text: str, width: int = 78, indent: str = "  ", hang: str | None = None) -> str:
    """Wrap to the terminal memo's width (80 columns); `hang` indents the continuation lines."""
    import textwrap
    return "\n".join(textwrap.wrap(str(text), width=width, initial_indent=indent,
                                   subsequent_indent=hang if hang is not None else indent + "  ",
                                   break_on_hyphens=False)) or indent


def _env(shipped: bool, html: bool, colour: bool, folder: Path, md: bool = False):
    from advisor.base import sandbox
    from advisor.base.cache import jinja_bytecode_cache
    on = {"bold": "\033[1m", "dim": "\033[2m", "green": "\033[32m", "yellow": "\033[33m", "red": "\033[31m"}
    filters = {name: ((lambda code: (lambda s: f"{code}{s}\033[0m"))(code) if colour else (lambda s: s)) for name, code in on.items()}
    filters["wrap"] = _wrap
    filters["code"] = _markdown_code
    # compiled templates are code loaded back with marshal: only the shipped ones are cached; a user's
    # template is compiled afresh every time (its environment has no cache to reach or to fill)
    cache = jinja_bytecode_cache("bounded2") if shipped else None
    return sandbox.environment(sandbox.confined_loader(folder), autoescape=html, filters=filters, bytecode_cache=cache,
                               finalize=_markdown_finalize if md and not html else None)


def render(rec: dict, catalog: Catalog, fmt: str = "text", template: str | Path | None = None, colour: bool = False) -> str:
    """The memo in a format, from the shipped template or the user's (both sandboxed)."""
    from advisor.base import sandbox
    path = Path(template) if template else TEMPLATES / FORMATS[fmt]
    name = str(template) if template else f"templates/{FORMATS[fmt]}"
    note_read(path, "template")
    if not path.is_file():
        raise InputError(Problem("no such template", name))
    try:
        if path.stat().st_size > MAX_TEXT:
            raise InputError(Problem(f"a template of more than {MAX_TEXT:,} bytes is not one this tool reads", name))
        path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"cannot read template: {exc}", name)) from None
    env = _env(shipped=not template, html=(fmt == "html" or path.suffix in (".html", ".htm") or path.name.endswith(".html.j2")),
               colour=colour, folder=path.resolve().parent, md=(fmt == "md" or path.name.endswith((".md", ".md.j2"))))
    context = view(rec, catalog)
    try:
        return sandbox.render(env.get_template(path.name), context, TEMPLATE_SECONDS)
    except SecurityError as exc:
        raise InputError(Problem(f"template refused by the sandbox: {exc}", name)) from None
    except (MemoryError, RecursionError, OverflowError) as exc:
        raise InputError(Problem(f"template refused: {type(exc).__name__} ({str(exc)[:80] or 'too large'})", name)) from None
    except TemplateError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(Problem(f"template error: {exc.message if getattr(exc, 'message', None) else exc}", name, line)) from None
    except Exception as exc:
        if not template:              # a shipped template failing is a bug: let it show
            raise
        raise InputError(Problem(f"template failed: {type(exc).__name__}: {str(exc)[:120]}", name)) from None


from advisor.base.files import write_atomic  # noqa: E402,F401  (re-exported for callers of memo)
