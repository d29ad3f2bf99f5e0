"""Plain-text rendering of an estimate (the ledger and the candidate table), for `gpu-advisor estimate`."""
from __future__ import annotations

from advisor.numbers.estimate import GB, LEDGER_KEYS, Estimate
from advisor.numbers.objective import times
from advisor.shell import memokind
from advisor.shell.wording import plain, plan as plan_words


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
    if not w.kind_spec.tokens:        # a kind counted in images or clips: its own compute figures
        lines += ["", "Compute: " + "; ".join(f"{memokind.COMPUTE_LABELS.get(k, k)} {t.value / 1e12:,.1f} TFLOP"
                                                if "flops" in k else f"{memokind.COMPUTE_LABELS.get(k, k)} {t.value:,.0f}"
                                                for k, t in c.items())]
    else:
        lines += ["", f"Compute: forward {c['forward_flops_per_token'].value / 1e9:,.1f} GFLOP/token (2 x active, K04); "
                      f"training {c['train_flops_per_token'].value / 1e9:,.1f} GFLOP/token (6 x active, K08)"]
    for note in est.notes:
        lines.append(f"Note: {note}")
    lines += ["", "Candidates:", *_candidate_table(est)]
    lines += ["", "Prices: " + "; ".join(sorted({f"{c.gpu.id} {c.price['provider']} ({c.price['date']}, {c.price['tier']})"
                                                  for c in est.candidates if c.price})) or "none known",
              "Unknown prices are shown as 'unknown': nothing is guessed."]
    return plain("\n".join(lines)) + "\n"          # formulas and reasons in words, never a Python repr


def _candidate_table(est: Estimate) -> list[str]:
    """The candidates that fit, as a table laid out by rich (advisor/shell/tables.py; it replaced the
    hand-padded f-string columns), then each that does not with its reason."""
    from advisor.shell import tables
    w = est.workload
    cols = [("GPU", "left"), ("fits", "left"), ("cards", "right"), ("nodes", "right"), ("TPxPPxDP", "left"),
            ("GB/card", "right"), ("spare", "right")]
    own = not w.kind_spec.tokens       # image or video generation: seconds and $ per image or clip
    per = w.kind_spec.time_unit.split()[-1] if own else ""
    cols += ([("hours", "right"), ("kW/node", "right"), ("$/h", "right"), ("$/job", "right")] if w.training else
             [("cards/replica", "right"), (f"s/{per}", "right"), ("kW/node", "right"), ("$/h", "right"),
              ("$/1k images" if per == "image" else f"$/{per}", "right")] if own else
             [("prefill ms", "right"), ("tok/s", "right"), ("kW/node", "right"), ("$/h", "right"), ("$/Mtok", "right")])
    t = tables.table(*cols)
    order = sorted(est.candidates, key=lambda c: (not c.fits, c.count or 0, c.gpu.id))
    for cd in [c for c in order if c.fits]:
        pools = cd.layout.pools if cd.layout else None
        plan = (f"{cd.tp}x{cd.pp}x{cd.dp}" if not pools else      # a disaggregated plan: prefill + decode replicas
                f"P{pools.prefill.dp}+D{pools.decode.dp}")
        row = [cd.gpu.id, "yes", str(cd.count), str(cd.nodes), plan, f"{cd.per_card_gb:,.1f}", f"{cd.headroom_gb:,.1f}"]
        if own:
            row += [str(cd.cfg * cd.sp), _n(getattr(cd, w.kind_spec.time_field), "{:,.2f}"), _n(cd.power_kw_per_node),
                    _n(cd.usd_per_hour, "{:,.2f}", "unknown"),
                    _n(cd.usd_per_thousand_images if per == "image" else cd.usd_per_clip, "{:,.2f}")]
        elif w.training:
            row += [_n(cd.training_hours, "{:,.1f}"), _n(cd.power_kw_per_node), _n(cd.usd_per_hour, "{:,.2f}", "unknown"),
                    _n(cd.usd_per_job, "{:,.0f}")]
        else:
            row += [_n(cd.prefill_ms), _n(cd.tokens_per_s, "{:,.0f}"), _n(cd.power_kw_per_node),
                    _n(cd.usd_per_hour, "{:,.2f}", "unknown"), _n(cd.usd_per_million_tokens, "{:,.2f}")]
        t.add_row(*row)
    out = ["  " + x for x in tables.render(t).rstrip("\n").split("\n")] if any(c.fits for c in order) else []
    out += [f"  {cd.gpu.id:<15} no   {cd.reason}" for cd in order if not cd.fits]
    return out


def grouped_exclusions(no_candidate: dict) -> list[str]:
    """The GPUs excluded by the same rules on one line ("34 GPUs excluded by must-fit-in-memory: t4, a10,
    ..."), the largest group first, instead of one identical line per GPU."""
    groups: dict[tuple, list[str]] = {}
    for gpu, rules in no_candidate.items():
        groups.setdefault(tuple(rules), []).append(gpu)
    return [(f"{len(gpus)} GPUs excluded by " if len(gpus) > 1 else f"{gpus[0]} excluded by ") + ", ".join(rules)
            + (f": {', '.join(gpus)}" if len(gpus) > 1 else "")
            for rules, gpus in sorted(groups.items(), key=lambda kv: -len(kv[1]))]


def summary_text(rec: dict, cat=None, width: int | None = None) -> str:
    """A few lines: the recommendation and its cost, the decisive rule, the runners-up and why each lost,
    the warnings and any planner suggestion; knowledge IDs named by their statements. `width`: wrapped
    to it (`--format summary`: SUMMARY_WIDTH); None: one line each (the dialogue wraps to its terminal)."""
    from advisor.shell import wording
    if cat is None:
        from advisor.inputs import catalog
        cat = catalog.default()
    cites = wording.Cites(cat)
    r = rec["recommendation"]
    lines = []
    if not r:
        lines.append("No GPU can be recommended: every candidate was excluded.")
        if (rec.get("no_plan") or {}).get("text"):
            lines.append(f"  {rec['no_plan']['text'][0].upper()}{rec['no_plan']['text'][1:]}.")
        lines += [f"  {line}" for line in grouped_exclusions(rec["no_candidate"])]
        return _wrapped(lines, width) if width else "\n".join(lines) + "\n"
    cost = (f"${r['usd_per_hour']:,.2f}/h ({wording.offer(r['price'])})"
            if r["usd_per_hour"] is not None else f"price unknown ({cites.prose(r['price_unknown'])})")
    if r.get("closest"):
        lines.append(f"No GPU meets the target; the closest plan misses it: {r['closest']['missed']} "
                     f"({times(r['closest']['shortfall'])} the target).")
    nodes = f"{r['nodes']} node{'' if r['nodes'] == 1 else 's'}"
    lines.append(f"Recommendation: {r['count']} x {r['name']} on {nodes}, {plan_words(r)}, {cost}")
    if r["usd_per_hour"] is not None:
        tokens = "training tokens" if rec.get("inputs", {}).get("mode") in ("training", "fine-tuning") else "output tokens"
        # every job with a volume states its hours beside its cost (record: job_hours); a batch job its
        # cost per million input + output tokens too
        hours = f" ({r['job_hours']:,.1f} h)" if r.get("job_hours") is not None else ""
        io = (f", {wording.small_usd(r['usd_per_million_io_tokens'])} per million input + output tokens"
              if r.get("usd_per_million_io_tokens") is not None else "")
        own = memokind.unit_cost(r)          # a kind counted in images or clips: its cost and speed per unit
        unit = (f"; {own}, {memokind.speed_short(r)}" if own is not None
                else f"; {wording.job_usd(r['usd_per_job'])} per job{hours}{io}" if r.get("usd_per_job") is not None
                else f"; {wording.usd(r['usd_per_million_tokens'])} per million {tokens}" if r.get("usd_per_million_tokens") is not None
                else "")
        month = wording.month_shown(rec.get("inputs") or {}, r)
        if month:
            lines.append(f"  about {wording.usd(r['usd_per_hour'] * month[0], 0)} per month ({month[1]}){unit}")
        elif unit:
            lines.append(f"  {unit[2:]}")
    d = rec["decisive_rule"]
    lines.append(f"Decisive rule: {d.get('title', d['id'])} ({d['id']}{', ' + d['file'] + ':' + str(d['line']) if d['line'] else ''})")
    lines.append(f"  {cites.prose(d['because'], d['source'])}")
    if rec["runner_up"]:
        lines += _runners_up(rec, cites)
    for w in rec["warnings"]:
        lines.append(f"{w['kind'].capitalize()} [{w['severity']}] ({w['rule']}): {cites.prose(w['text'], w['source'])}")
    for u in rec.get("unpriced") or []:
        if u.get("break_even_usd_per_gpu_hour") is not None:
            lines.append(f"Unpriced: {u['count']} x {u['gpu']} would win below {wording.usd(u['break_even_usd_per_gpu_hour'])} per GPU-hour")
            break
    for s in rec.get("suggestions") or []:
        if isinstance(s, dict):
            lines.append(f"Suggestion: {wording.suggestion(s, cites)}")
    lines.append("Use --format json for the full decision record.")
    return _wrapped(lines, width) if width else "\n".join(lines) + "\n"


#: `--format summary`'s width: a line a review, a chat message or a terminal shows whole (issue 42:
#: lines of ~300 characters)
SUMMARY_WIDTH = 100
#: the alternatives the summary names with their reasons, the runner-up first
RUNNERS_UP_SHOWN = 3


def _wrapped(lines: list[str], width: int) -> str:
    """Each line wrapped to `width`, its continuation indented four spaces past its own indent."""
    import textwrap
    out = []
    for line in lines:
        indent = line[: len(line) - len(line.lstrip(" "))]
        out += textwrap.wrap(line, width=width, subsequent_indent=indent + "    ",
                             break_on_hyphens=False, break_long_words=True) or [""]
    return "\n".join(out) + "\n"


def _runners_up(rec: dict, cites) -> list[str]:
    """The runner-up and the next alternatives that fitted, each with why it lost: the reason the record's
    `alternatives` give (advisor/judgement/alternatives.py, the memo's words), else the rules' account."""
    from advisor.shell import wording
    ru = rec["runner_up"]
    decided = {c["gpu"]: c for c in rec["candidates"]}
    titles = {t["rule"]: t.get("title", t["rule"]) for t in rec["trace"]}
    alts = [a for a in rec.get("alternatives") or [] if not a.get("excluded") and a.get("fits", True)]
    reasons = {a["gpu"]: a.get("reason") for a in alts}
    why = reasons.get(ru["gpu"]) or ("; ".join(wording.why_lost(ru["gpu"], rec, decided, titles, cites))
                                     if ru["gpu"] in decided else ru["why"])
    # a runner-up with nothing against it lost on the objective alone (review 13: "Runner-up: 56 x gb300-nvl72:")
    why = why or ru.get("why") or ("its price is unknown" if (decided.get(ru["gpu"]) or {}).get("usd_per_hour") is None
                                   else "the ranking's objective")
    lines = [f"Runner-up: {ru['count']} x {ru['gpu']}: {why}"]
    for a in [a for a in alts if a["gpu"] != ru["gpu"] and a.get("reason")][: RUNNERS_UP_SHOWN - 1]:
        lines.append(f"  then {a['count']} x {a['gpu']}: {a['reason']}")
    return lines
