"""The memo's view: a decision record turned into the ready-made strings and lists that every memo
template places (templates compute nothing; docs/memo.md lists the fields).

`view` composes one function per memo section, in the memo's order: the header, the recommendation,
why (the decisive and supporting rules), the numbers, the alternatives, risks and prerequisites, the
workload as understood, the summary (drawn from those sections), the sources and the audit. Knowledge
IDs appear only in the audit; everywhere else `Cites` names them for people, and records each one it
names for the Sources list, so the sources section runs after every section that cites.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from advisor.base.errors import InputError, Problem
from advisor.inputs.catalog import Catalog
from advisor.judgement.alternatives import plain_reason as _plain_reason, ratio as _ratio, titles_line as _titles
from advisor.numbers.objective import UNIT_LABELS
from advisor.shell.memochart import LEDGER_LABELS, chart, cost_chart, gb as _gb, tradeoff_chart
from advisor.shell.memoworkload import applies, label, workload_rows
from advisor.shell.wording import _ID, Cites as _Cites, clean_all as _clean_all, count as _count, gist as _gist, offer as _offer, \
    plain as _plain, plan as _plan, suggestion as _suggestion, usd as _usd, why_lost as _why_lost, \
    api_line as _api_line

DISAGREEMENTS = [
    "Bytes per parameter for mixed-precision AdamW: this memo uses 16 (C06); another seed document counts 18 (K08), "
    "shown as the other accounting.",
    "B200 memory: this memo uses 180 GB, usable on HGX/DGX boards (K11); another seed document quotes 192 GB on the package (T04).",
    "Training FLOPs of gpt-oss-120b: the worked example counts active parameters for compute (30.6 GFLOP per token) and "
    "all parameters for memory (W04); both are followed.",
]
HOURS_PER_MONTH = 730          # 24 x 365 / 12
SEVERITY = {"high": 0, "medium": 1, "low": 2, "info": 3}
WHY_LABELS = {"ideal": "Best case (weights / bandwidth)", "per_card_gb": "Memory per card", "power_kw_per_node": "Power per node",
              "prefill_ms": "Prefill time", "decode_ms_per_token": "Time per generated token",
              "kv_headroom_gb": "Room left for the KV cache", "usd_per_hour": "Cost per hour",
              "training_hours": "Training time", "usd_per_job": "Cost per job", "tokens_per_s": "Tokens per second"}
OBJECTIVES = {"cost": "Chosen for the lowest cost {unit}, after rule premiums.",
              "time": "Chosen for the shortest time, among the priced options.",
              "cards": "Chosen for the fewest cards, among the priced options."}


@dataclass
class _Record:
    """The look-ups every section makes in one decision record (built once per view)."""

    rec: dict
    catalog: Catalog
    cites: _Cites
    est: dict
    inputs: dict
    mode: str
    cands: dict            # gpu id -> the estimate's candidate (fit, counts, costs, speeds)
    decided: dict          # gpu id -> the decision's candidate (score, contributions, rank)
    rule_titles: dict
    r: dict | None         # the recommendation
    d: dict | None         # the decisive rule

    @classmethod
    def of(cls, rec: dict, catalog: Catalog) -> "_Record":
        est, inputs = rec["estimate"], rec["inputs"]
        return cls(rec, catalog, _Cites(catalog), est, inputs, inputs["mode"],
                   {c["gpu"]: c for c in est["candidates"]}, {c["gpu"]: c for c in rec["candidates"]},
                   {t["rule"]: t.get("title", t["rule"]) for t in rec["trace"]},
                   rec.get("recommendation"), rec.get("decisive_rule"))


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
    v.update(_audit(x))
    v["summary"] = summary
    # legacy name kept for user templates written against the first memo
    v["seed_ids"] = v["knowledge_ids"]
    # names from price files and configs (and rule texts from --rules) are one line of visible text in
    # every format; the Markdown memo escapes them further as it renders (memo._env)
    return _clean_all(v)


# --- the sections ---------------------------------------------------------------------------------------

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
        return {"recommended": False, "headline": headline,
                "facts": [(g, "excluded by " + ", ".join(x.rule_titles.get(k, k) for k in rules))
                          for g, rules in x.rec["no_candidate"].items()]}
    c = x.cands[r["gpu"]]
    gpu = x.catalog.gpus[r["gpu"]]
    headline = (_closest_label(x) + f"Use {r['count']} x {gpu.name} ({r['nodes']} node{'s' if r['nodes'] > 1 else ''}, "
                f"{_plan(r)}): {_cost_sentence(mode, c, cites)}.")
    facts = [("GPU", f"{gpu.name} ({gpu.id}), {gpu.memory_gb:g} GB at {gpu.bandwidth_tb_s:g} TB/s"),
             ("Cards", f"{r['count']} on {r['nodes']} node{'s' if r['nodes'] > 1 else ''}"),
             ("Layout", _layout(r, gpu.gpus_per_node)),
             ("Memory per card", f"{_gb(c['per_card_gb'])} of {gpu.memory_gb:g} GB ({_gb(c['headroom_gb'])} free)"),
             ("Cost", _cost_sentence(mode, c, cites))]
    if mode == "inference":
        facts.append(("Speed", f"first token in {_num(c.get('ttft_ms', c['prefill_ms']))} ms for a {inputs.get('prompt_tokens', 0):,}-token prompt; "
                               f"{_num(c['tokens_per_s_per_user'], 0)} tokens/s per user, {_num(c['tokens_per_s'], 0)} tokens/s in all"
                               f" at {c.get('concurrency') or inputs.get('concurrency')} sequences (expected, calibrated: docs/accuracy.md)"))
    elif c.get("training_hours") is not None:
        rng = c.get("training_hours_range") or [c["training_hours"], c["training_hours"]]
        facts.append(("Time", f"about {_num(c['training_hours'])} hours ({_num(rng[0])}-{_num(rng[1])}) for "
                              f"{_count(inputs.get('training_tokens', 0))} tokens at {_num((c.get('mfu') or 0) * 100, 0)}% MFU "
                              "(calibrated on published runs: docs/accuracy.md)"))
    if c.get("power_kw_per_node") is not None:
        facts.append(("Power", f"about {_num(c['power_kw_per_node'])} kW per node ({cites.prose(c['why'].get('power_kw_per_node', ''))})"))
    if _objective(r):
        facts.append(("Ranked by", _objective(r)))
    return {"recommended": True, "gpu_name": gpu.name, "headline": headline, "facts": facts}


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
                           "source": cites.names(led[k]["sources"])} for k in LEDGER_LABELS if led[k]["value"]]}
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
                             f"averaged over {x.inputs.get('context_tokens', 0):,} tokens"))
    v["notes"] = [cites.prose(n) for n in est.get("notes", [])]
    v["divisions"] = _divisions(x)
    if r:
        v["why_figures"] = [(WHY_LABELS.get(k, k.replace("_", " ").capitalize()), cites.prose(text))
                            for k, text in x.cands[r["gpu"]]["why"].items() if x.mode == "inference" or k != "ideal"]
    else:
        v["why_figures"] = []
    return v


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
        alts.append({"unit_cost": _ranking_cost(unit, c), "work_cost": _unit_cost(mode, c) or "-",
                     "speed": _speed_short(mode, c), "layout": f"{c['count']} x {g}, {_plan(c)}" if c["fits"] else "does not fit",
                     "plain": _plain_reason(dc, reasons, x.rule_titles, _ratio(unit, c, base), x.decided[r["gpu"]] if r else None),
                     "plain_short": _plain_reason(dc, reasons, x.rule_titles, _ratio(unit, c, base), x.decided[r["gpu"]] if r else None, short=True),
                     "cost_range": _range(dc.get("cost_range"))})
        alts[-1].update({"gpu": g, "name": gpu.name, "status": "excluded" if dc["excluded"] else f"rank {dc['rank']}",
                     "rank": dc.get("rank"), "excluded": dc["excluded"], "count": str(c.get("count") or "-"),
                     "cost": _usd(c.get("usd_per_hour")) + " per hour" if c.get("usd_per_hour") is not None else "price unknown",
                     "diff": diff + (f" ({prem})" if prem else ""), "diff_short": diff,
                     "figures": figures, "reasons": reasons,
                     "short": "; ".join(([diff + (f", {prem}" if prem else "")] if diff else []) + reasons) or "scored no rule"})
    ru = rec.get("runner_up")
    runner_up = ru and {"gpu": ru["gpu"], "name": x.catalog.gpus[ru["gpu"]].name if ru["gpu"] in x.catalog.gpus else ru["gpu"],
                        "why": "; ".join(_why_lost(ru["gpu"], rec, x.decided, x.rule_titles, cites)) if ru["gpu"] in x.decided else ""}
    return {"alternatives": alts, "runner_up": runner_up,
            "cheaper_per_token": _cheaper_per_token(x, [a for a in alts if not a["excluded"]][:5])}


def _cheaper_per_token(x: _Record, alts: list[dict], short: bool = False) -> str:
    """Why the winner still wins when the table shows a dearer-per-hour alternative that is cheaper per
    million tokens under per-hour ranking: both hold the users within the service level, and the faster
    card's extra tokens are speed the users do not need, not extra users served."""
    r = x.r
    if not r or x.mode != "inference" or (r.get("unit") or "hour") != "hour":
        return ""
    w = x.cands[r["gpu"]]
    sl = (x.rec.get("service_level") or {}).get("tpot_ms")
    wm, wh, ws = w.get("usd_per_million_tokens"), w.get("usd_per_hour"), w.get("tokens_per_s_per_user")
    if None in (wm, wh, ws) or not sl or ws < 1000 / sl:
        return ""                       # a winner outside the service level is a risk, said by the rules
    cheaper = [a["gpu"] for a in alts if (x.cands[a["gpu"]].get("usd_per_million_tokens") or wm) < wm
               and (x.cands[a["gpu"]].get("usd_per_hour") or 0) > wh]
    if not cheaper:
        return ""
    who = " and ".join(cheaper[:2]) + (f" and {len(cheaper) - 2} more" if len(cheaper) > 2 else "")
    if short:
        return f"{who} {'is' if len(cheaper) == 1 else 'are'} cheaper per token only by being faster than the users need"
    return (f"{who} {'costs' if len(cheaper) == 1 else 'cost'} less per million tokens than {r['gpu']} only because "
            f"{'it is' if len(cheaper) == 1 else 'they are'} faster: both hold the users within the service level "
            f"({1000 / sl:,.0f} tokens/s each), so the faster card serves the same users, and its extra speed is not extra "
            f"work; per hour, which is what serving them costs, {r['gpu']} is cheaper ({_usd(wh)})")


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
    return {"risks": sorted(risks, key=lambda k: (k["kind"] != "warn", SEVERITY.get(k["severity"], 9))), "prerequisites": pre}


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
    return {"workload": workload_rows(inputs, x.catalog), "defaults": defaults}


def _summary(x: _Record, v: dict) -> dict:
    """The one-screen summary, drawn from the sections: what to use, its cost, the reasons, the two best
    alternatives, the top risks, unpriced GPUs and the planner's suggestions."""
    r, d, cites = x.r, x.d, x.cites
    summary: dict = {"cost": [], "reasons": [], "risks": [], "alternatives": [], "suggestions": [], "unpriced": [],
                     "objective": "", "api": None}
    if r:
        c = x.cands[r["gpu"]]
        summary["cost"] = _summary_cost(x, c)
        summary["objective"] = _objective(r)
        summary["api"] = _api_line(x.rec.get("api_comparison"))
        summary["sentence"] = _closest_label(x) + (f"Use {r['count']} x {x.catalog.gpus[r['gpu']].name} on {r['nodes']} node{'s' if r['nodes'] > 1 else ''} "
                               f"({_layout_short(r)}).")
    else:
        summary["sentence"] = v["headline"]
        by_rule: dict = {}
        for g, rules in x.rec["no_candidate"].items():
            for k in rules:
                by_rule.setdefault(x.rule_titles.get(k, k), []).append(g)
        summary["reasons"] = [f"{t}: {', '.join(gs[:4])}{f' and {len(gs) - 4} more' if len(gs) > 4 else ''}."
                              for t, gs in sorted(by_rule.items(), key=lambda kv: -len(kv[1]))][:3]
    if r:
        summary["reasons"] = _forward_reasons(x, v)
    elif v["decisive"]:
        first = v["decisive"]["because"]
        head = v["decisive"]["title"].split(":")[0]
        if first.startswith(head + ":"):
            first = first[len(head) + 1:].strip()
        summary["reasons"].append(f"{v['decisive']['title']}: {_gist(first, 90)}" if first else v["decisive"]["title"] + ".")
    if not r:
        summary["reasons"] += [s["title"] + "." for s in v["supporting"]][:3 - len(summary["reasons"])]
    summary["stability"] = _stability_lines(x)
    # the text memo's one-screen summary keeps the verdict; the detail (ends, measurement) is in md/html and below
    summary["stability_short"] = _stability_short(x)
    summary["cheaper_per_token"] = _cheaper_per_token(x, [a for a in v["alternatives"] if not a["excluded"]][:2])
    summary["cheaper_per_token_short"] = _cheaper_per_token(x, [a for a in v["alternatives"] if not a["excluded"]][:2], True)
    # the two best alternatives and the difference alone (the rule premium is in the alternatives table)
    summary["alternatives"] = [{"name": a["name"], "gpu": a["gpu"], "count": a["count"], "cost": a["cost"],
                                "diff": a["diff_short"].split(" effective cost")[0] + (" effective" if " effective cost" in a["diff_short"] else ""),
                                "diff_long": a["diff"], "why": a["reasons"][0] if a["reasons"] else "scored no rule",
                                "unit_cost": a["unit_cost"], "work_cost": a["work_cost"], "speed": a["speed"],
                                "layout": a["layout"], "plain": a["plain"], "plain_short": a["plain_short"]}
                               for a in [a for a in v["alternatives"] if not a["excluded"]][:2]]
    summary["alt_table"] = _alt_table(x, [a["gpu"] for a in summary["alternatives"]])
    line = _unpriced_line([u for u in (x.rec.get("unpriced") or []) if isinstance(u, dict)])
    if line:
        summary["unpriced"].append(line)
    # the objective, unless the decisive reason already says it (the cost ranking rule)
    # and the default objective (cost) goes to the details, to keep the summary on one screen
    summary["objective_line"] = "" if (d and str(d.get("id", "")).startswith("ranking-cost")) or \
        (r or {}).get("objective") == "cost" else summary["objective"]
    summary["suggestions"] = [_suggestion(s, cites) for s in (x.rec.get("suggestions") or []) if isinstance(s, dict)]
    summary["risks"] = [{"severity": k["severity"], "text": _gist(k["text"], 55), "mitigation": k["mitigation"]}
                        for k in v["risks"] if k["kind"] == "warn" or k["severity"] in ("high", "medium")][:3] or \
                       [{"severity": k["severity"], "text": _gist(k["text"], 55), "mitigation": k["mitigation"]} for k in v["risks"]][:1]
    return summary


def _closest_label(x: _Record) -> str:
    """The words before the plan when no GPU meets the target: it is the nearest plan, not one that meets it."""
    what = "deadline" if x.mode != "inference" else "service level"
    return f"No GPU meets the {what}; the closest plan: " if (x.r or {}).get("closest") else ""


def _forward_reasons(x: _Record, v: dict) -> list[str]:
    """Why the winner, in the forward direction: its cost per unit and its speed against the service
    level, the rules in its favour, then one line on why it beat the runner-up, then an excluded GPU
    only when an exclusion decided (the reader would have expected that GPU)."""
    r, c = x.r, x.cands[x.r["gpu"]]
    g = r["gpu"]
    # the costs themselves are on the summary's cost lines just above: the reason says what they mean
    unit = r.get("unit") or ""
    field = {"hour": "usd_per_hour", "job": "usd_per_job"}.get(unit or "hour", "usd_per_million_tokens")
    priced = [k[field] for g2, k in x.cands.items() if k.get("fits") and k.get(field) is not None
              and not (x.decided.get(g2) or {}).get("excluded")]
    # "lowest" only when it is, by price alone; else the rules' premiums made it first (the next line says how)
    lowest = c.get(field) is not None and priced and c[field] <= min(priced)
    first = (f"{g} is the cheapest {UNIT_LABELS.get(unit, 'per unit of work')} that fits" if lowest else
             f"{g} is the cheapest {UNIT_LABELS.get(unit, 'per unit of work')} after the rules' premiums") \
        if r.get("objective") == "cost" and c.get(field) is not None else f"{g} ranks first"
    speed = _speed_against_level(x, c)
    favour = _titles([s["title"] for s in v["supporting"]])
    out = [first + (f", at {speed}" if speed else "") + (f"; in its favour: {favour}" if favour else "") + "."]
    if r.get("closest"):
        # no plan meets the target: how near this one comes is the first thing the reader needs
        out[0] = (f"{g} comes closest to the {'deadline' if x.mode != 'inference' else 'service level'}: "
                  f"{r['closest']['missed']} ({r['closest']['shortfall']:.1f}x the target).")
    ru = x.rec.get("runner_up")
    alt = next((a for a in v["alternatives"] if ru and a["gpu"] == ru["gpu"]), None)
    if alt:
        out.append(f"It beats {alt['count']} x {alt['gpu']} ({alt['unit_cost']}): {alt['plain_short']}.")
    d = x.d
    if d and any(t["rule"] == d["id"] and t["effect"]["kind"] == "exclude" for t in x.rec["trace"]):
        # the rule's own sentence names the excluded GPU and why; its title is in WHY below
        out.append(_gist(v["decisive"]["because"], 140))
    return out[:4]


def _speed_against_level(x: _Record, c: dict) -> str:
    """The winner's speed per user against the service level, or its hours against the deadline."""
    if x.mode == "inference" and c.get("tokens_per_s_per_user") is not None:
        sl = x.rec.get("service_level") or {}
        text = f"{_num(c['tokens_per_s_per_user'], 0)} tokens/s per user"
        if sl.get("tpot_ms"):
            text += f" (the service level asks {1000 / sl['tpot_ms']:,.0f})"
        return text
    if c.get("training_hours") is not None:
        dl = (x.inputs.get("constraints") or {}).get("deadline_hours")       # a constraint, not a top-level field
        return f"about {_num(c['training_hours'], 0)} hours" + (f" against a {dl:,.0f}-hour deadline" if isinstance(dl, (int, float)) else "")
    return ""


def _stability_lines(x: _Record) -> list[str]:
    """Whether the answer survives the speed model's own error (record: recommendation.within_error)."""
    r, o = x.r or {}, x.rec.get("runner_up_overlap")
    basis = r.get("cost_range_basis") or {}
    m = x.rec.get("service_level_margin")
    if m and r.get("within_error") is not None:
        return [_margin_line(r, m)]
    if not o or r.get("within_error") is None:
        return []
    unit, err = basis.get("unit", ""), basis.get("model_error") or 0
    w, ru = o["winner_range"], o["runner_up_range"]
    head = (f"{r['gpu']} {_range(w)} and {o['gpu']} {_range(ru)} {unit}, each with the speed model's "
            f"{err:.1%} median error (docs/accuracy.md)")
    if not o["overlap"]:
        return [f"Stable: {head}; the ranges do not overlap, so the model's error does not change the answer."]
    return [f"Close call: {head} overlap: at {r['gpu']}'s slow end and {o['gpu']}'s fast end "
            f"{o['if_winner_slow_runner_up_fast']} is cheaper, at the other ends {o['if_winner_fast_runner_up_slow']}. "
            f"To settle it, run {o['settle_by']}."]


def _stability_short(x: _Record) -> list[str]:
    """The stability verdict in one line for the text summary (the ends and the measurement are below)."""
    r, o = x.r or {}, x.rec.get("runner_up_overlap")
    m = x.rec.get("service_level_margin")
    if m and r.get("within_error") is not None:
        return [_margin_line(r, m, short=True)]
    if not o or r.get("within_error") is None:
        return []
    err = (r.get("cost_range_basis") or {}).get("model_error") or 0
    head = "Close call" if o["overlap"] else "Stable"
    # the unit is the summary's "Per unit of work" line; the ends and the measurement are in the detail
    return [f"{head} ({err:.1%} model error): {r['gpu']} {_range(o['winner_range'])}, {o['gpu']} {_range(o['runner_up_range'])}"
            + "."]


def _margin_line(r: dict, m: dict, short: bool = False) -> str:
    """Under per-hour ranking (quotes, not modelled): whether the winner still holds the service level
    when the speed model is off by its median error (record: service_level_margin)."""
    lo, hi = m["winner_tokens_per_s_per_user"]
    need, err = m["service_level_tokens_per_s_per_user"], m["model_error"]
    head = (f"{r['gpu']} {_num(lo, 0)}-{_num(hi, 0)} tokens/s per user with the speed model's {err:.1%} error, "
            f"against the {_num(need, 0)} the service level asks")
    verdict = "Stable" if m["holds_at_slow_end"] else "Close call"
    if short:
        # the text summary's one line, as long as the cost band's: the verdict and the figures behind it
        return f"{verdict} ({err:.1%} model error): {_num(lo, 0)}-{_num(hi, 0)} tokens/s per user, {_num(need, 0)} asked."
    if m["holds_at_slow_end"]:
        return f"Stable: {head}; even at its slow end it holds the service level, and its hourly price is a quote."
    ru, ru_ok = m.get("runner_up"), m.get("runner_up_holds_at_slow_end")
    other = (f"{ru} holds it at its slow end ({_num(m['runner_up_tokens_per_s_per_user'][0], 0)})" if ru and ru_ok else
             f"{ru} would miss it too ({_num(m['runner_up_tokens_per_s_per_user'][0], 0)} at its slow end), so more cards"
             if ru else "more cards")
    return (f"Close call: {head}; at its slow end it misses the service level, and then {other} would be the answer. "
            f"To settle it, run {m['settle_by']}.")


def _range(rg) -> str:
    if not rg:
        return ""
    lo, hi = rg
    return f"{_usd(lo) if lo >= 0.1 else f'${lo:.3g}'}-{_usd(hi) if hi >= 0.1 else f'${hi:.3g}'}"


def _ranking_cost(unit: str, c: dict) -> str:
    """The cost in the ranking's unit (per hour of interactive serving, per million tokens, per job)."""
    field = {"hour": "usd_per_hour", "million_tokens": "usd_per_million_tokens", "job": "usd_per_job",
             "million_training_tokens": "usd_per_million_tokens"}.get(unit or "hour", "usd_per_hour")
    v = c.get(field)
    if v is None:
        return "price unknown"
    return f"{_usd(v, 0) if field == 'usd_per_job' else _usd(v) if v >= 0.1 else f'${v:.3g}'} {UNIT_LABELS.get(unit or 'hour', 'per hour')}"


def _speed_short(mode: str, c: dict) -> str:
    if not c.get("fits"):
        return "-"
    if mode == "inference":
        return f"{_num(c.get('tokens_per_s_per_user'), 0)} tokens/s per user"
    return f"{_num(c.get('training_hours'), 0)} h" if c.get("training_hours") is not None else "-"


def _alt_table(x: _Record, gpus: list[str]) -> dict:
    """The summary's small table of runners-up: cost per hour, per unit of work (per million output tokens
    or per job, whichever the ranking did not already show) and speed, with the units in the heads."""
    work = ("usd_per_million_tokens", "per M output tokens") if x.mode == "inference" else ("usd_per_job", "per job")
    if x.mode != "inference" and (x.r or {}).get("unit") == "million_training_tokens":
        work = ("usd_per_million_tokens", "per M training tokens")
    speed = ("tokens_per_s_per_user", "tokens/s per user", 0) if x.mode == "inference" else ("training_hours", "hours", 1)
    head = ["", "per hour", work[1], speed[1]]
    rows = []
    for g in gpus:
        c = x.cands[g]
        w = c.get(work[0])
        rows.append([f"{c['count']} x {g}", _usd(c["usd_per_hour"]) if c.get("usd_per_hour") is not None else "unknown",
                     "-" if w is None else _usd(w, 0) if work[0] == "usd_per_job" else _usd(w) if w >= 0.1 else f"${w:.3g}",
                     "-" if c.get(speed[0]) is None else _num(c[speed[0]], speed[2])])
    return {"head": head, "rows": rows}


def _summary_cost(x: _Record, c: dict) -> list[tuple[str, str]]:
    """(label, text) pairs: per hour, per month at the workload's utilisation, per unit of work, the offer,
    and buy-or-rent when the record compares them."""
    hours, hours_how = _utilisation(x.inputs)
    if c.get("usd_per_hour") is not None:
        cost = [("Per hour", f"{_usd(c['usd_per_hour'])} ({_usd(c['usd_per_hour'] * hours, 0)} a month, {hours_how})")]
        unit = _unit_cost(x.mode, c)
        if unit:
            cost.append(("Per unit of work", unit))
        cost.append(("Offer", _offer(c["price"])))
    else:
        cost = [("Cost", _cost_sentence(x.mode, c, x.cites))]
    tco = x.r.get("tco")
    if isinstance(tco, dict) and tco:
        cost.append(("Buy or rent", _tco(tco)))
    return cost


def _sources(x: _Record) -> dict:
    """The seed documents' disagreements, the catalog's sources and prices, and every knowledge statement
    the memo named (the sections before this one registered them with `cites`)."""
    cites, catalog = x.cites, x.catalog
    v: dict = {"disagreements": [cites.prose(s) for s in DISAGREEMENTS], "catalog_sources": _catalog_sources(x.rec, catalog)}
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
        out.append(f"{sid}: {s.get('what', '?')} (published {s.get('published', 'unknown')}, retrieved {s.get('retrieved', 'unknown')})")
    return out


def _audit(x: _Record) -> dict:
    """Every firing in order with its bare IDs and file:line, the digests of the inputs, and the chart."""
    rec = x.rec
    audit = [{"order": t["order"], "rule": t["rule"], "where": f"{t['file']}:{t['line']}" + (
                  f", replacing shipped {t['replaces']} of {t['overrides']}" if t.get("replaces") else ""),
              "source": ", ".join(t["source"]), "gpu": t["gpu"] or "workload", "effect": _effect(t["effect"])}
             for t in rec["trace"]]
    ver = rec["versions"]
    digests = [("advisor", ver["advisor"]), ("rules sha256", ver["rules_sha256"]), ("catalog sha256", ver["catalog_sha256"])]
    return {"audit": audit, "digests": digests, "chart": chart(rec, x.catalog), "cost_chart": cost_chart(rec, x.catalog),
            "tradeoff_chart": tradeoff_chart(rec)}


# --- wording of single values -------------------------------------------------------------------------

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


def _layout_short(c: dict) -> str:
    parts = []
    if c["tp"] > 1:
        parts.append(f"each layer split over {c['tp']} cards")
    if c["pp"] > 1:
        parts.append(f"{c['pp']} pipeline stages")
    if c["dp"] > 1:
        parts.append(f"{c['dp']} replicas")
    return ", ".join(parts) or "the whole model on one card"


def _unit_cost(mode: str, c: dict) -> str:
    if mode == "inference" and c.get("usd_per_million_tokens") is not None:
        return f"{_usd(c['usd_per_million_tokens'])} per million output tokens"
    if mode != "inference" and c.get("usd_per_job") is not None:
        return f"{_usd(c['usd_per_job'], 0)} per job"
    if mode != "inference" and c.get("usd_per_million_tokens") is not None:      # no token budget: no job to price
        v = c["usd_per_million_tokens"]
        return f"{_usd(v) if v >= 0.1 else f'${v:.3g}'} per million training tokens"
    return ""


def _cost_sentence(mode: str, c: dict, cites: _Cites | None = None) -> str:
    if c.get("usd_per_hour") is None:
        why = c.get("price_unknown") or "no quote"
        return f"price unknown ({cites.prose(why) if cites else _plain(why)})"
    s = f"{_usd(c['usd_per_hour'])} per hour ({_offer(c['price'])})"
    unit = _unit_cost(mode, c)
    return s + (f", {unit}" if unit else "")


def _utilisation(inputs: dict) -> tuple[float, str]:
    """(hours per month, how they were chosen): the workload's utilisation, or 24x7 said as such."""
    u = inputs.get("utilisation")
    if isinstance(u, (int, float)) and not isinstance(u, bool) and 0 < u <= 1:
        return HOURS_PER_MONTH * u, f"{HOURS_PER_MONTH * u:,.0f} h: {u:.0%} utilisation"
    return HOURS_PER_MONTH, f"{HOURS_PER_MONTH} h: 24x7, no utilisation given"


def _money_diff(x, base) -> str:
    if x is None or base is None:
        return ""                       # nothing to compare: the prices are shown beside it
    d = x - base
    if abs(d) < 0.005 and abs(d) <= 0.001 * max(abs(base), abs(x)):
        return "same cost"
    # a small unit cost (per million training tokens) keeps three significant figures, not two decimals
    return f"{'+' if d > 0 else '-'}{_usd(abs(d)) if abs(d) >= 0.1 else f'${abs(d):.3g}'}"


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


def _effect(e: dict) -> str:
    k = e["kind"]
    if k in ("prefer", "avoid"):
        return f"{k} {e['weight']:g}"
    if k == "exclude":
        return "exclude"
    if k == "derive":
        return "derive " + ", ".join(f"{a}={b}" for a, b in e.items() if a != "kind")
    return f"{k} ({e.get('severity', '')})"
