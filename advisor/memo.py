"""Recommendation memos: the decision record turned into formatted text, rendered by Jinja templates.

All arithmetic and formatting happen here (`view`); templates under templates/ only place the
strings they are given. Every template, shipped or the user's, renders in Jinja's sandbox; HTML
with autoescaping. A broken or hostile template is an InputError (exit 2).
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

from jinja2 import StrictUndefined, TemplateError
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from advisor import HOME
from advisor.catalog import Catalog
from advisor.errors import InputError, Problem

TEMPLATES = HOME / "templates"
FORMATS = {"text": "memo.txt.j2", "md": "memo.md.j2", "html": "memo.html.j2"}
LEDGER_LABELS = {"weights_gb": "Weights", "kv_cache_gb": "KV cache", "activations_gb": "Activations",
                 "gradients_gb": "Gradients", "optimizer_gb": "Optimizer states", "overhead_gb": "Overhead / safety"}
DISAGREEMENTS = [
    "Bytes per parameter for mixed-precision AdamW: 16 (seed 003, C06) is used; seed 000 (K08) counts 18.",
    "B200 memory: 180 GB (HGX/DGX usable, seed 000) is used; seed 002 quotes 192 GB on the package.",
    "The training FLOP example of seed 000 (30.6 GFLOP/token) uses active parameters, its memory all parameters: both are followed.",
]


def _gb(x) -> str:
    if x is None:
        return "unknown"
    return f"{x:,.1f} GB" if x < 1000 else f"{x:,.0f} GB"


def _usd(x, nd=2) -> str:
    return "unknown" if x is None else f"${x:,.{nd}f}"


def _num(x, nd=1) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def _plan(c: dict) -> str:
    return f"TP {c['tp']} x PP {c['pp']} x DP {c['dp']}"


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


def _cost_sentence(mode: str, c: dict) -> str:
    if c.get("usd_per_hour") is None:
        return f"price unknown ({c.get('price_unknown') or 'no quote'})"
    p = c["price"]
    when = "date unknown" if p["date"] == "unknown" else p["date"]
    idle = p.get("idle_gpus") or 0
    s = (f"{_usd(c['usd_per_hour'])} per hour ({p['provider']}, {when}, {p['instances']} x {p['gpus_per_instance']}-GPU "
         f"instance{'s' if p['instances'] > 1 else ''}{f', {idle} GPU(s) rented but idle' if idle else ''})")
    if mode == "inference" and c.get("usd_per_million_tokens") is not None:
        s += f", {_usd(c['usd_per_million_tokens'])} per million output tokens"
    if mode != "inference" and c.get("usd_per_job") is not None:
        s += f", {_usd(c['usd_per_job'], 0)} per job"
    return s


def generation_date() -> str:
    """Today's date, or SOURCE_DATE_EPOCH's for reproducible builds and snapshots."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return time.strftime("%Y-%m-%d", time.gmtime(int(epoch)))
    return time.strftime("%Y-%m-%d", time.localtime())


def view(rec: dict, catalog: Catalog) -> dict:
    """Everything a memo shows, as ready-made strings and lists (templates compute nothing)."""
    est = rec["estimate"]
    inputs = rec["inputs"]
    mode = inputs["mode"]
    cands = {c["gpu"]: c for c in est["candidates"]}
    decided = {c["gpu"]: c for c in rec["candidates"]}
    rule_titles = {t["rule"]: t.get("title", t["rule"]) for t in rec["trace"]}
    model = inputs["model"]
    model_name = catalog.models[model].name if isinstance(model, str) and model in catalog.models else \
        (model.get("name") if isinstance(model, dict) else str(model))
    title = inputs.get("name") or f"{model_name} {mode}"
    v: dict = {"title": title, "generated": generation_date(), "mode": mode, "model": model_name}
    r = rec.get("recommendation")
    if r:
        c = cands[r["gpu"]]
        gpu = catalog.gpus[r["gpu"]]
        v["recommended"] = True
        v["gpu_name"] = gpu.name
        v["headline"] = (f"Use {r['count']} x {gpu.name} ({r['nodes']} node{'s' if r['nodes'] > 1 else ''}, "
                         f"{_plan(r)}): {_cost_sentence(mode, c)}.")
        v["facts"] = [("GPU", f"{gpu.name} ({gpu.id}), {gpu.memory_gb:g} GB at {gpu.bandwidth_tb_s:g} TB/s"),
                      ("Cards", f"{r['count']} on {r['nodes']} node(s)"),
                      ("Layout", _layout(r, gpu.gpus_per_node)),
                      ("Memory per card", f"{_gb(c['per_card_gb'])} of {gpu.memory_gb:g} GB ({_gb(c['headroom_gb'])} free)"),
                      ("Cost", _cost_sentence(mode, c))]
        if mode == "inference":
            v["facts"].append(("Speed", f"first token in {_num(c.get('ttft_ms', c['prefill_ms']))} ms for a {inputs.get('prompt_tokens', 0):,}-token prompt; "
                                        f"{_num(c['tokens_per_s_per_user'], 0)} tokens/s per user, {_num(c['tokens_per_s'], 0)} tokens/s in all"
                                        f" at {c.get('concurrency') or inputs.get('concurrency')} sequences (expected, calibrated: docs/accuracy.md)"))
        elif c.get("training_hours") is not None:
            rng = c.get("training_hours_range") or [c["training_hours"], c["training_hours"]]
            v["facts"].append(("Time", f"about {_num(c['training_hours'])} hours ({_num(rng[0])}-{_num(rng[1])}) for "
                                       f"{inputs.get('training_tokens', 0):.3g} tokens at {_num((c.get('mfu') or 0) * 100, 0)}% MFU "
                                       "(calibrated on published runs: docs/accuracy.md)"))
        if c.get("power_kw_per_node") is not None:
            v["facts"].append(("Power", f"about {_num(c['power_kw_per_node'])} kW per node ({c['why'].get('power_kw_per_node', '')})"))
    else:
        v["recommended"] = False
        v["headline"] = "No GPU can be recommended: every candidate was excluded."
        v["facts"] = [(g, "excluded by " + ", ".join(rules)) for g, rules in rec["no_candidate"].items()]
    d = rec.get("decisive_rule")
    v["decisive"] = None if not d else {
        "id": d["id"], "title": d.get("title", d["id"]), "source": ", ".join(d["source"]),
        "where": f"{d['file']}:{d['line']}" if d.get("line") else d["file"], "because": d["because"]}
    supporting = []
    if r:
        for x in decided[r["gpu"]]["contributions"]:
            if x["weight"] > 0 and (not d or x["rule"] != d["id"]):
                t = next(t for t in rec["trace"] if t["rule"] == x["rule"] and t["gpu"] in (r["gpu"], None))
                supporting.append({"id": x["rule"], "title": rule_titles[x["rule"]], "weight": f"{x['weight']:+g}",
                                   "source": ", ".join(t["source"]), "because": t["because"]})
    v["supporting"] = supporting
    # the numbers
    led = est["ledger_explained"]
    v["ledger"] = [{"term": LEDGER_LABELS[k], "gb": _gb(led[k]["value"]), "how": led[k]["formula"],
                    "source": ", ".join(_source_name(s) for s in led[k]["sources"])} for k in LEDGER_LABELS if led[k]["value"]]
    v["total"] = _gb(est["ledger"]["total_gb"])
    v["total_how"] = led["total_gb"]["formula"]
    alt = est.get("alternative_accounting", {}).get("model_states_gb")
    v["alt_accounting"] = f"Other accounting: {alt['formula']} = {_gb(alt['value'])}." if alt else ""
    comp = est["compute_explained"]
    v["compute"] = [("Forward FLOPs per token", f"{comp['forward_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                     comp["forward_flops_per_token"]["formula"] + " (K04)")]
    if "job_flops_per_token" in comp:
        v["compute"].append(("Training FLOPs per token", f"{comp['job_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                             comp["job_flops_per_token"]["formula"]))
    else:
        v["compute"].append(("Training FLOPs per token", f"{comp['train_flops_per_token']['value'] / 1e9:,.1f} GFLOP",
                             comp["train_flops_per_token"]["formula"] + " (K08), if this model were trained"))
    if est.get("kv_bytes_per_token") is not None:
        v["compute"].append(("KV cache per token", f"{est['kv_bytes_per_token']:,.0f} bytes",
                             f"averaged over {inputs.get('context_tokens', 0):,} tokens"))
    v["notes"] = est.get("notes", [])
    if r and mode == "inference":
        c = cands[r["gpu"]]
        ideal = c["ideal"]
        v["divisions"] = [
            ("Weights / VRAM", f"{ideal['weights_over_vram']:.2f} cards' worth of memory", "K19: does it fit?"),
            ("Active weights / bandwidth", f"{ideal['decode_ms_per_token']:.2f} ms per token, at most "
                                           f"{ideal['tokens_per_s_single_user']:,.0f} tokens/s for one user", "K19, K06: how fast?"),
            ("Load vs compute", f"reading weights takes {ideal['load_to_compute_ratio']:,.0f}x longer than the math",
             "K06: decode is bandwidth-bound"),
        ]
        if c.get("tpot_ms") is not None:
            v["divisions"].append(("Expected per token", f"{c['tpot_ms']:.2f} ms at {c.get('concurrency')} sequences "
                                   f"(the ideal figure above, one card at its spec bandwidth: {ideal['decode_ms_per_token']:.2f} ms)",
                                   "calibrated on published runs: docs/accuracy.md"))
    elif r and cands[r["gpu"]].get("training_hours") is not None and cands[r["gpu"]]["ideal"].get("training_hours_at_peak"):
        c = cands[r["gpu"]]
        v["divisions"] = [("Hours at the peak matmul rate", f"{c['ideal']['training_hours_at_peak']:,.1f} h (ideal: every card at its "
                           "measured peak, no stalls)", "K08"),
                          ("Expected hours", f"{c['training_hours']:,.1f} h at {(c.get('mfu') or 0) * 100:.0f}% MFU",
                           "calibrated on published runs: docs/accuracy.md")]
    else:
        v["divisions"] = []
    if r:
        c = cands[r["gpu"]]
        v["why_figures"] = [(k.replace("_", " "), text) for k, text in c["why"].items()
                            if mode == "inference" or k != "ideal"]
    else:
        v["why_figures"] = []
    # alternatives
    alts = []
    for g in [x["gpu"] for x in rec["candidates"]]:
        if r and g == r["gpu"]:
            continue
        c, dc = cands[g], decided[g]
        gpu = catalog.gpus[g]
        reasons = []
        if dc["excluded"]:
            reasons += [f"excluded: {e['reason']} ({e['rule']}; {', '.join(e['source'])})" for e in dc["excluded_by"]]
        else:
            for x in dc["contributions"]:
                t = next((t for t in rec["trace"] if t["rule"] == x["rule"] and t["gpu"] in (g, None)), None)
                src = ", ".join(t["source"]) if t else ""
                reasons.append(f"{rule_titles.get(x['rule'], x['rule'])} ({x['weight']:+g}; {src})")
            if r:
                reasons.append(f"ranked {dc['rank']} of {len([x for x in rec['candidates'] if not x['excluded']])}")
        if c["fits"]:
            figures = f"{c['count']} card(s), {_plan(c)}, {_gb(c['per_card_gb'])}/card, {_cost_sentence(mode, c)}"
        else:
            figures = c.get("reason") or "does not fit"
        alts.append({"gpu": g, "name": gpu.name, "status": "excluded" if dc["excluded"] else f"rank {dc['rank']}",
                     "figures": figures, "reasons": reasons, "short": "; ".join(reasons) or "scored no rule"})
    v["alternatives"] = alts
    v["runner_up"] = rec.get("runner_up") and {"gpu": rec["runner_up"]["gpu"], "why": rec["runner_up"]["why"]}
    # risks and prerequisites
    risks = [{"severity": w["severity"], "kind": w["kind"], "text": w["text"], "rule": w["rule"],
              "source": ", ".join(w["source"])} for w in rec["warnings"]]
    order = {"high": 0, "medium": 1, "low": 2, "info": 3}
    v["risks"] = sorted(risks, key=lambda x: (x["kind"] != "warn", order.get(x["severity"], 9)))
    pre = []
    if r:
        gpu = catalog.gpus[r["gpu"]]
        c = cands[r["gpu"]]
        if c.get("power_kw_per_node") is not None:
            pre.append(f"Power: about {_num(c['power_kw_per_node'])} kW per node ({gpu.num('tdp_w'):g} W per card, C14).")
        else:
            pre.append("Power: the card's TDP is unknown in the sources; ask the vendor.")
        pre.append(f"Cooling: {gpu.fig('cooling').value or 'unknown'} ({gpu.fig('cooling').note or gpu.fig('cooling').cite()}).")
        ic = gpu.fig("interconnect")
        pre.append(f"Interconnect: {ic.value or 'PCIe only, no NVLink'}"
                   + (f", {ic.extra.get('gb_s')} GB/s per GPU" if ic.extra.get("gb_s") not in (None, "unknown") else "")
                   + ("; InfiniBand between nodes (K14, T03)." if r["nodes"] > 1 else "."))
        pre.append("Import: " + ("subject to US export control (T08)." if gpu.fig("us_export_controlled").value
                                 else "not subject to US export control (T08)."))
        sw = gpu.fig("software")
        pre.append(f"Software: {sw.value} ({sw.extra.get('maturity', 'unknown')} stack; {sw.cite()}).")
    v["prerequisites"] = pre
    # assumptions and sources
    v["workload"] = [(k, _fmt_input(val)) for k, val in inputs.items()]
    v["defaults"] = rec.get("defaults_filled", [])
    ids = sorted({s for t in rec["trace"] for s in t["source"] if re.match(r"^[KTCAW]\d\d$", s)}
                 | {s for k in led.values() for s in k["sources"] if re.match(r"^[KTCAW]\d\d$", s)})
    know = {**catalog.knowledge.get("heuristics", {}), **catalog.knowledge.get("examples", {})}
    v["seed_ids"] = [(i, f"seed {know[i]['seed']}: {know[i].get('says') or know[i].get('expected')}") for i in ids if i in know]
    v["catalog_sources"] = _catalog_sources(rec, catalog)
    v["prices"] = sorted({f"{c['gpu']}: {c['price']['provider']}, {c['price']['date']}, {c['price']['source']} ({c['price']['tier']})"
                          for c in est["candidates"] if c.get("price")})
    v["disagreements"] = DISAGREEMENTS
    # audit
    v["audit"] = [{"order": t["order"], "rule": t["rule"], "where": f"{t['file']}:{t['line']}",
                   "source": ", ".join(t["source"]), "gpu": t["gpu"] or "workload", "effect": _effect(t["effect"])}
                  for t in rec["trace"]]
    ver = rec["versions"]
    v["digests"] = [("advisor", ver["advisor"]), ("rules sha256", ver["rules_sha256"]), ("catalog sha256", ver["catalog_sha256"])]
    v["chart"] = _chart(rec, catalog)
    return v


def _source_name(sid: str) -> str:
    return "unverified (no source found)" if sid == "unknown_explicit" else sid


def _fmt_input(val) -> str:
    if isinstance(val, dict):
        return ", ".join(f"{k}: {_fmt_input(x)}" for k, x in val.items()) or "none"
    if isinstance(val, list):
        return ", ".join(map(str, val)) or "none"
    if isinstance(val, float):
        return f"{val:g}"
    return str(val)


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
    legend = [{"x": f"{160 + i * 120}", "tx": f"{160 + i * 120 + 14}", "colour": col, "label": LEDGER_LABELS[k]}
              for i, (k, col) in enumerate(present)]
    return {"rows": rows, "height": f"{60 + len(rows) * 28}", "width": f"{160 + width + 230}", "legend": legend,
            "legend_y": f"{36 + len(rows) * 28}", "legend_ty": f"{46 + len(rows) * 28}"}


# --- rendering ----------------------------------------------------------------------------------------

def _env(html: bool, colour: bool, folder: Path) -> ImmutableSandboxedEnvironment:
    from jinja2 import FileSystemLoader
    from advisor.cache import jinja_bytecode_cache
    env = ImmutableSandboxedEnvironment(autoescape=html, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                        keep_trailing_newline=True, loader=FileSystemLoader(str(folder)),
                                        bytecode_cache=jinja_bytecode_cache())
    on = {"bold": "\033[1m", "dim": "\033[2m", "green": "\033[32m", "yellow": "\033[33m", "red": "\033[31m"}
    for name, code in on.items():
        env.filters[name] = (lambda code: (lambda s: f"{code}{s}\033[0m"))(code) if colour else (lambda s: s)
    env.filters["wrap"] = _wrap
    return env


def _wrap(text: str, width: int = 78, indent: str = "  ", hang: str | None = None) -> str:
    """Wrap to the terminal memo's width (80 columns); `hang` indents the continuation lines."""
    import textwrap
    return "\n".join(textwrap.wrap(str(text), width=width, initial_indent=indent,
                                   subsequent_indent=hang if hang is not None else indent + "  ",
                                   break_on_hyphens=False)) or indent


def render(rec: dict, catalog: Catalog, fmt: str = "text", template: str | Path | None = None, colour: bool = False) -> str:
    """The memo in a format, from the shipped template or the user's (both sandboxed)."""
    path = Path(template) if template else TEMPLATES / FORMATS[fmt]
    name = str(template) if template else f"templates/{FORMATS[fmt]}"
    if not path.is_file():
        raise InputError(Problem("no such template", name))
    try:
        path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"cannot read template: {exc}", name)) from None
    env = _env(html=(fmt == "html" or path.suffix in (".html", ".htm") or path.name.endswith(".html.j2")), colour=colour,
               folder=path.resolve().parent)
    try:
        return env.get_template(path.name).render(**view(rec, catalog))
    except SecurityError as exc:
        raise InputError(Problem(f"template refused by the sandbox: {exc}", name)) from None
    except TemplateError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(Problem(f"template error: {exc.message if getattr(exc, 'message', None) else exc}", name, line)) from None


from advisor.files import write_atomic  # noqa: E402,F401  (re-exported for callers of memo)
