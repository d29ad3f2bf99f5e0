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
        try:
            return time.strftime("%Y-%m-%d", time.gmtime(int(epoch)))
        except (OverflowError, OSError, ValueError):
            raise InputError(Problem(f"SOURCE_DATE_EPOCH={epoch[:20]}{'...' if len(epoch) > 20 else ''} is not a date "
                                     "(seconds since 1970 up to the year 9999)")) from None
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
            v["facts"].append(("Speed", f"prefill {_num(c['prefill_ms'])} ms per {inputs.get('prompt_tokens', 0):,}-token prompt; "
                                        f"{_num(c['tokens_per_s_per_user'], 0)} tokens/s per user, {_num(c['tokens_per_s'], 0)} tokens/s in all"))
        elif c.get("training_hours") is not None:
            v["facts"].append(("Time", f"at least {_num(c['training_hours'])} hours for {inputs.get('training_tokens', 0):.3g} "
                                       "tokens (every card at its measured peak matmul rate)"))
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
    v["audit"] = [{"order": t["order"], "rule": t["rule"], "where": f"{t['file']}:{t['line']}" + (
                       f", replacing shipped {t['replaces']} of {t['overrides']}" if t.get("replaces") else ""),
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

# --- the sandbox's limits -----------------------------------------------------------------------------
# Jinja's sandbox stops a template from reaching Python; these limits stop it from taking the machine:
# `{{ 9 ** (9 ** 9) }}` (also folded at compile time), `'x' * 300000000`, `num(999999999)`, nested
# `range(100000)` loops. Every limit is far above what a memo needs.

MAX_TEXT = 1_000_000          # characters of one string a template builds, and of the whole memo x 10
MAX_ARG = 10_000              # an integer passed to a filter or method (a width, a digit count)
MAX_POWER = 64                # the largest exponent
MAX_ITERATIONS = 1_000_000    # items all range() calls of one rendering may yield
TEMPLATE_SECONDS = 10.0       # wall time of one rendering (the main thread only)
_WIDE_FORMAT = re.compile(r"\d{5,}|\*")    # a width or precision of 10,000 or more, or one given by '*'


def _refuse(why: str):
    raise SecurityError(why)


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_binop(op: str, a, b) -> None:
    if op == "**" and _is_num(a) and _is_num(b) and abs(b) > MAX_POWER and abs(a) > 1:
        _refuse(f"a power above {MAX_POWER}")
    if op == "*":
        seq, n = (a, b) if isinstance(a, (str, list, tuple)) else (b, a)
        if isinstance(seq, (str, list, tuple)) and _is_num(n) and len(seq) * max(n, 0) > MAX_TEXT:
            _refuse(f"a repetition longer than {MAX_TEXT:,}")
        if _is_num(a) and _is_num(b) and isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > 4096:
            _refuse("a product of more than 4,096 bits")
    if op == "+" and isinstance(a, (str, list, tuple)) and isinstance(b, (str, list, tuple)) and len(a) + len(b) > MAX_TEXT:
        _refuse(f"a text longer than {MAX_TEXT:,}")
    if op == "%" and isinstance(a, str) and _WIDE_FORMAT.search(a):
        _refuse("a format width of 10,000 or more")


def _check_args(args, kwargs) -> None:
    for x in list(args) + list(kwargs.values()):
        if _is_num(x) and abs(x) > MAX_ARG:
            _refuse(f"an argument above {MAX_ARG:,} ({x:g})")
        if isinstance(x, str) and len(x) > MAX_TEXT:
            _refuse(f"an argument longer than {MAX_TEXT:,}")


def _bounded_text(text):
    """The result of a `~` concatenation, refused when too long (doubling it in a loop or a macro)."""
    if len(text) > MAX_TEXT:
        _refuse(f"a text longer than {MAX_TEXT:,}")
    return text


def _code_generator():
    from jinja2.compiler import CodeGenerator

    class Bounded(CodeGenerator):
        def visit_Concat(self, node, frame):
            self.write("environment.bounded_text(")
            super().visit_Concat(node, frame)
            self.write(")")
    return Bounded


class _Bounded(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with limits on what a template may build."""

    intercepted_binops = frozenset(["**", "*", "+", "%", "//"])
    bounded_text = staticmethod(_bounded_text)

    def wrap_str_format(self, value):
        f_self = getattr(value, "__self__", None)
        if getattr(value, "__name__", "") in ("format", "format_map") and isinstance(f_self, str) and _WIDE_FORMAT.search(f_self):
            _refuse("a format width of 10,000 or more")
        return super().wrap_str_format(value)

    def call_binop(self, context, operator, left, right):
        _check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context, __obj, *args, **kwargs):      # noqa: N805 (Jinja's own signature)
        _check_args(args, kwargs)
        name = getattr(__obj, "__name__", "")
        if name in ("format", "format_map") and isinstance(getattr(__obj, "__self__", None), str) \
                and _WIDE_FORMAT.search(__obj.__self__):
            _refuse("a format width of 10,000 or more")
        return super().call(__context, __obj, *args, **kwargs)


def _bounded_filter(f):
    import functools
    skip = 2 if getattr(f, "jinja_pass_arg", None) is not None else 1    # the environment/context, the value

    @functools.wraps(f)
    def run(*args, **kwargs):
        _check_args(args[skip:], kwargs)
        if f.__name__ in ("do_format",) and len(args) >= skip and isinstance(args[skip - 1], str) \
                and _WIDE_FORMAT.search(args[skip - 1]):
            _refuse("a format width of 10,000 or more")
        return f(*args, **kwargs)
    return run


class _Budget:
    """range() for templates: Jinja's sandboxed range, with one budget of items for the rendering."""

    def __init__(self, env):
        self.env, self.left = env, MAX_ITERATIONS

    def __call__(self, *args):
        _check_args((), {})
        r = range(*args)
        if len(r) > self.left:
            _refuse(f"loops of more than {MAX_ITERATIONS:,} steps in all")
        self.left -= len(r)
        return r


def _confined_loader(folder: Path):
    """Templates from `folder` only: `{% include %}`, `{% import %}` and `{% extends %}` cannot leave
    it, through '..' (Jinja refuses that) or through a link that points outside."""
    from jinja2 import FileSystemLoader, TemplateNotFound
    root = os.path.realpath(folder)

    class Confined(FileSystemLoader):
        def get_source(self, environment, template):
            source, filename, uptodate = super().get_source(environment, template)
            real = os.path.realpath(filename)
            if os.path.commonpath([root, real]) != root:
                raise TemplateNotFound(f"{template} (outside the template's folder)")
            return source, filename, uptodate

    return Confined(str(folder))


def _env(html: bool, colour: bool, folder: Path) -> ImmutableSandboxedEnvironment:
    from advisor.cache import jinja_bytecode_cache
    _Bounded.code_generator_class = _code_generator()
    env = _Bounded(autoescape=html, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                   keep_trailing_newline=True, loader=_confined_loader(folder),
                   bytecode_cache=jinja_bytecode_cache("bounded1"))      # its own entries: the code differs
    on = {"bold": "\033[1m", "dim": "\033[2m", "green": "\033[32m", "yellow": "\033[33m", "red": "\033[31m"}
    for name, code in on.items():
        env.filters[name] = (lambda code: (lambda s: f"{code}{s}\033[0m"))(code) if colour else (lambda s: s)
    env.filters["wrap"] = _wrap
    for k, f in list(env.filters.items()):
        env.filters[k] = _bounded_filter(f)
    env.globals["range"] = _Budget(env)
    env.globals.pop("lipsum", None)          # generates up to n x max words: nothing a memo needs
    return env


class _TooSlow(SecurityError):
    pass


def _render_bounded(template, context: dict) -> str:
    """Render with the output and wall-time limits (the alarm only where signals can be used)."""
    import signal
    import threading
    use_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if use_alarm:
        def stop(signum, frame):
            raise _TooSlow(f"rendering took longer than {TEMPLATE_SECONDS:g} s")
        old = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, TEMPLATE_SECONDS)
    try:
        out, size = [], 0
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > MAX_TEXT * 10:
                raise SecurityError(f"the memo would be longer than {MAX_TEXT * 10:,} characters")
            out.append(chunk)
        return "".join(out)
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


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
        if path.stat().st_size > MAX_TEXT:
            raise InputError(Problem(f"a template of more than {MAX_TEXT:,} bytes is not one this tool reads", name))
        path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"cannot read template: {exc}", name)) from None
    env = _env(html=(fmt == "html" or path.suffix in (".html", ".htm") or path.name.endswith(".html.j2")), colour=colour,
               folder=path.resolve().parent)
    context = view(rec, catalog)
    try:
        return _render_bounded(env.get_template(path.name), context)
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


from advisor.files import write_atomic  # noqa: E402,F401  (re-exported for callers of memo)
