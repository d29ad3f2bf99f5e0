"""Plain-text rendering of an estimate (the ledger and the candidate table), for `gpu-advisor estimate`."""
from __future__ import annotations

from advisor.estimator import GB, LEDGER_KEYS, Estimate


def _n(x, fmt="{:,.1f}", none="-"):
    return none if x is None else fmt.format(x)


def estimate_text(est: Estimate) -> str:
    w = est.workload
    led = est.ledger
    lines = [f"Workload: {w.title} ({w.mode}, {w.model.name}, weights {led.sized.precision_label})",
             "GB = 10^9 bytes.", "", "Memory ledger (one copy of the model):"]
    for k in LEDGER_KEYS:
        t = led.terms[k]
        if k != "total_gb" and not t.value:
            continue
        label = k[:-3].replace("_", " ")
        src = f"  [{', '.join(t.sources)}]" if t.sources else ""
        lines.append(f"  {label:<12} {t.value / GB:>10,.2f} GB   {t.formula}{src}")
    for k, t in led.alt.items():
        if k == "model_states_gb":
            lines.append(f"  (other accounting: model states {t.value / GB:,.0f} GB = {t.formula})")
    if est.kv_bytes_per_token is not None:
        lines.append(f"  KV cache per token: {est.kv_bytes_per_token:,.0f} bytes (averaged over {w.context_tokens:,} tokens)")
    c = est.compute
    lines += ["", f"Compute: forward {c['forward_flops_per_token'].value / 1e9:,.1f} GFLOP/token (2 x active, K04); "
                  f"training {c['train_flops_per_token'].value / 1e9:,.1f} GFLOP/token (6 x active, K08)"]
    for note in est.notes:
        lines.append(f"Note: {note}")
    lines += ["", "Candidates:"]
    if w.training:
        head = f"  {'GPU':<15}{'fits':<5}{'cards':>6}{'nodes':>6}  {'TPxPPxDP':<10}{'GB/card':>9}{'spare':>7}{'hours':>9}{'kW/node':>8}{'$/h':>9}{'$/job':>11}"
    else:
        head = f"  {'GPU':<15}{'fits':<5}{'cards':>6}{'nodes':>6}  {'TPxPPxDP':<10}{'GB/card':>9}{'spare':>7}{'prefill ms':>11}{'tok/s':>9}{'kW/node':>8}{'$/h':>9}{'$/Mtok':>9}"
    lines.append(head)
    order = sorted(est.candidates, key=lambda c: (not c.fits, c.count or 0, c.gpu.id))
    for cd in order:
        if not cd.fits:
            lines.append(f"  {cd.gpu.id:<15}{'no':<5}  {cd.reason}")
            continue
        plan = f"{cd.tp}x{cd.pp}x{cd.dp}"
        row = f"  {cd.gpu.id:<15}{'yes':<5}{cd.count:>6}{cd.nodes:>6}  {plan:<10}{cd.per_card_gb:>9,.1f}{cd.headroom_gb:>7,.1f}"
        if w.training:
            row += f"{_n(cd.training_hours, '{:,.1f}'):>9}{_n(cd.power_kw_per_node):>8}{_n(cd.usd_per_hour, '{:,.2f}', 'unknown'):>9}{_n(cd.usd_per_job, '{:,.0f}'):>11}"
        else:
            row += f"{_n(cd.prefill_ms):>11}{_n(cd.tokens_per_s, '{:,.0f}'):>9}{_n(cd.power_kw_per_node):>8}{_n(cd.usd_per_hour, '{:,.2f}', 'unknown'):>9}{_n(cd.usd_per_million_tokens, '{:,.2f}'):>9}"
        lines.append(row)
    lines += ["", "Prices: " + "; ".join(sorted({f"{c.gpu.id} {c.price['provider']} ({c.price['date']}, {c.price['tier']})"
                                                  for c in est.candidates if c.price})) or "none known",
              "Unknown prices are shown as 'unknown': nothing is guessed."]
    return "\n".join(lines) + "\n"


def summary_text(rec: dict) -> str:
    """A few lines: the recommendation, the decisive rule, the runner-up and the warnings."""
    r = rec["recommendation"]
    lines = []
    if not r:
        lines.append("No GPU can be recommended: every candidate was excluded.")
        for gpu, rules in rec["no_candidate"].items():
            lines.append(f"  {gpu}: excluded by {', '.join(rules)}")
        return "\n".join(lines) + "\n"
    cost = (f"${r['usd_per_hour']:,.2f}/h ({r['price']['provider']}, {r['price']['date']})"
            if r["usd_per_hour"] is not None else f"price unknown ({r['price_unknown']})")
    lines.append(f"Recommendation: {r['count']} x {r['name']} on {r['nodes']} node(s), TP {r['tp']} x PP {r['pp']} x DP {r['dp']}, {cost}")
    d = rec["decisive_rule"]
    lines.append(f"Decisive rule: {d['id']} ({', '.join(d['source'])}{', ' + d['file'] + ':' + str(d['line']) if d['line'] else ''})")
    lines.append(f"  {d['because']}")
    if rec["runner_up"]:
        lines.append(f"Runner-up: {rec['runner_up']['count']} x {rec['runner_up']['gpu']}: {rec['runner_up']['why']}")
    for u in rec.get("unpriced") or []:
        if u.get("break_even_usd_per_gpu_hour") is not None:
            lines.append(f"Unpriced: {u['count']} x {u['gpu']} would win below ${u['break_even_usd_per_gpu_hour']:,.2f} per GPU-hour")
            break
    for sug in rec.get("suggestions") or []:
        lines.append(f"Suggestion: {sug['text']}")
    for w in rec["warnings"]:
        lines.append(f"{w['kind'].capitalize()} [{w['severity']}] ({w['rule']}, {', '.join(w['source'])}): {w['text']}")
    lines.append("Use --format json for the full decision record.")
    return "\n".join(lines) + "\n"
