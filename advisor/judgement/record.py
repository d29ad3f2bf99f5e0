"""The decision record: one typed, JSON-ready account of a decision, built at one point.

It holds the recommendation, the decisive rule, the runner-up, every candidate's score and
exclusions, the estimate, the trace of every firing, the warnings, the inputs and `versions`: the
digests of the rules and catalog and, from judgement.advise, the rule folders and price files the
decision used. The keys are those users script against (docs/rules.md); a key that moves keeps its old
name for one release.
"""
from __future__ import annotations

from advisor import __version__
from advisor.judgement import alternatives, ranking
from advisor.numbers import plantable
from advisor.numbers.plan import KIND_FIGURES
from advisor import kinds
from advisor.numbers.objective import UNIT_FIELD, UNIT_LABELS, closeness, nearest, plan_time, shortfall, unit_cost, unit_of_work
from advisor.numbers.terms import rounded


def build(d, suggestions: list[dict]) -> dict:
    """The decision record of `d` (JSON-ready): what was chosen and why, every candidate, the estimate,
    the trace of every firing, the inputs, and what the decision was made with (versions, provenance)."""
    d.excluded, d.warnings, d.candidate_warnings      # every rule text the record shows, rendered now
    est = d.estimate
    by_id = {c.gpu.id: c for c in est.candidates}
    rec: dict = {}
    if d.winner:
        rec["recommendation"] = _recommendation(d, by_id[d.winner])
    else:
        rec["recommendation"] = None
        rec["no_candidate"] = {g: [e["rule"] for e in ex] for g, ex in d.excluded.items()}
    rec["decisive_rule"] = d.decisive
    if d.runner_up:
        r = by_id[d.runner_up]
        why = [f"{x['rule']} ({x['weight']:+g})" for x in d.contributions[d.runner_up]]
        o = d.ranked.options[d.runner_up] if d.ranked else None
        wo = d.ranked.options[d.winner] if d.ranked else None
        money = (f"{ranking.money(o.cost)} {UNIT_LABELS[d.ranked.unit]} ({ranking.money(o.effective)} after its "
                 f"{o.premium:+.0%} premium) vs {ranking.money(wo.cost)} ({ranking.money(wo.effective)} after {wo.premium:+.0%}); "
                 if o and o.cost is not None and wo.cost is not None else "price unknown; " if o and o.cost is None else "")
        rec["runner_up"] = {"gpu": r.gpu.id, "count": r.count, "score": d.scores[d.runner_up],
                            "why": (money + f"score {d.scores[d.runner_up]:g} vs {d.scores[d.winner]:g}"
                                    + (f": {', '.join(why)}" if why else "") + f"; decided by {d.decisive['id']}")}
    else:
        rec["runner_up"] = None
    rec["candidates"] = [{"gpu": g, "count": by_id[g].count, "fits": by_id[g].fits, "excluded": bool(d.excluded[g]),
                          "excluded_by": d.excluded[g], "score": d.scores[g], "contributions": d.contributions[g],
                          "rank": (d.order.index(g) + 1) if g in d.order else None,
                          "premium": round(ranking.premium(d.scores[g]), 4),
                          "effective_cost": rounded(d.ranked.options[g].effective) if d.ranked and g in d.ranked.options else None,
                          # a plan that costs less and is faster, with no more against it (ranking.dominates)
                          "dominated_by": d.ranked.dominated_by.get(g) if d.ranked else None,
                          "dominated_as_fast": (ranking.as_fast(d.ranked.options[d.ranked.dominated_by[g]], d.ranked.options[g])
                                                if d.ranked and g in d.ranked.dominated_by else None),
                          "warnings": d.candidate_warnings.get(g, [])}
                         for g in sorted(d.scores, key=lambda g: (g not in d.order, d.order.index(g) if g in d.order else 0, g))]
    _stability(rec, d, by_id)
    rec["unpriced"] = ([{"gpu": g, "count": by_id[g].count, "break_even_usd_per_gpu_hour": rounded(d.ranked.break_even.get(g))}
                        for g in d.ranked.unpriced] if d.ranked and d.ranked.basis == "cost" else [])
    rec["suggestions"] = suggestions
    rec["closest_priced"] = _closest_priced(d, by_id)
    rec["over_budget"] = _over_budget(d, by_id)
    rec["api_comparison"] = kinds.api_comparison(by_id.get(d.winner), est.workload, d.catalog)
    rec["estimate"] = est.as_dict()
    shown = {None, d.winner, d.runner_up}        # rule texts are rendered for what a memo or explain shows
    rec["trace"] = [{"order": f.order, "rule": f.rule.id, "title": f.rule.title, "file": f.rule.file, "line": f.rule.line,
                     "source": list(f.rule.source), "gpu": f.gpu, "bindings": f.bindings, "effect": f.effect,
                     "because": f.text if f.gpu in shown else None, "overrides": f.rule.overrides,
                     "replaces": f.rule.replaces} for f in d.firings]
    rec["warnings"] = d.warnings
    # the planner's limits that bound a plan (numbers.planner), each with its figure: none is hidden
    rec["limits"] = [{"gpu": c.gpu.id, **x} for c in est.candidates if c.fits for x in c.limits]
    # the plan tables of the winner and the next ranks (TABLE_RANKS): the layouts the planner weighed for
    # each, with why each lost (numbers.plantable); every GPU's is on its Plan (`table`)
    unit, shown = unit_of_work(est.workload), table_gpus(rec)
    rec["plan_tables"] = {g: t for g in sorted(shown) if (t := plantable.record(by_id[g], unit))}
    rec["inputs"] = est.workload.inputs()
    rec["defaults_filled"] = list(est.workload.defaults)
    w = est.workload
    if w.ttft_ms is not None or w.tpot_ms is not None:
        rec["service_level"] = {"ttft_ms": w.ttft_ms, "tpot_ms": w.tpot_ms, "stated": not w.service_level_source,
                                "source": w.service_level_source or "the workload", "sources": list(w.service_level_refs)}
    rec["alternatives"] = alternatives.record(rec, w.training, w.kind_spec)
    rec["versions"] = {"advisor": __version__, "rules_sha256": d.kb.digest, "catalog_sha256": d.catalog.digest,
                       "rule_files": d.kb.files, "engine": "durable_rules 2.0.28", **d.provenance}
    return rec


def _recommendation(d, c) -> dict:
    """The record's `recommendation`: the winner's plan, price and layout, as users script against it."""
    est = d.estimate
    rec = {"gpu": c.gpu.id, "name": c.gpu.name, "count": c.count, "nodes": c.nodes,
           **c.layout.degrees(),      # every declared dimension (advisor.inputs.parallel)
           "usd_per_hour": c.usd_per_hour,
           "usd_per_million_tokens": c.usd_per_million_tokens, "usd_per_job": c.usd_per_job,
           # every job (training, RL, a batch job) states its hours beside its cost, issue 44's interface:
           # the kind's time figure (training_hours, or a batch job's hours)
           "job_hours": plan_time(est.workload, c) if est.workload.kind_spec.job else None,
           "usd_per_million_io_tokens": c.usd_per_million_io_tokens,
           "price": c.price, "price_unknown": c.price_unknown, "tco": c.tco,
           "objective": est.workload.objective, "unit": d.ranked.unit if d.ranked else None,
           "ranked_on": d.ranked.basis if d.ranked else None}
    if not est.workload.kind_spec.tokens:
        # a kind counted in its own units (images, clips): its figures in place of the token ones
        for k in ("usd_per_million_tokens", "usd_per_job", "usd_per_million_io_tokens", "job_hours"):
            rec.pop(k)
        rec.update({k: getattr(c, k) for k in KIND_FIGURES if getattr(c, k) is not None})
    if c.virtual_stages and c.virtual_stages > 1:
        rec["virtual_stages"] = c.virtual_stages      # the interleaved pipeline that ran
    if c.layout is not None and c.layout.pools:
        # a disaggregated plan: its flat tp/pp/dp are the decode pool's; the two pools say the rest
        rec["layout"] = c.layout.as_dict()
    if d.closest:
        # every candidate missed its target: this is the plan that comes closest, not one that meets it
        rec["closest"] = dict(d.closest)
    return rec


def model_error(catalog, error_class: str) -> tuple[float | None, list]:
    """The speed model's calibrated median error for the class (`serving`, `training`, ...: the kind's
    `error_class`; catalog/efficiency.yaml model_error), and its sources; None when the catalog states
    none (then no band is claimed)."""
    fig = ((catalog.efficiency.get("model_error") or {}).get(error_class)) or {}
    v = fig.get("v") if isinstance(fig, dict) else None
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1
    return (float(v), list(fig.get("src") or [])) if ok else (None, [])


def _stability(rec: dict, d, by_id: dict) -> None:
    """Each candidate's cost per unit of work with the speed model's error (`cost_range`), and whether
    the runner-up's range overlaps the winner's (`recommendation.within_error`, `runner_up_overlap`)."""
    w = d.estimate.workload
    err, src = model_error(d.catalog, w.kind_spec.error_class)
    # the band is stated in the cost the speed model's error moves: the unit of work's (per hour of
    # interactive serving it does not: the rental price is a quote)
    unit = unit_of_work(w)
    field, label = UNIT_FIELD[unit], UNIT_LABELS[unit]
    for c in rec["candidates"]:
        cost = getattr(by_id[c["gpu"]], field, None) if by_id[c["gpu"]].fits else None
        c["cost_range"] = ([rounded(cost * (1 - err)), rounded(cost * (1 + err))]
                           if err is not None and cost is not None else None)
    r = rec.get("recommendation")
    if not r:
        return
    r["cost_range_basis"] = {"cost": field, "unit": label, "model_error": err, "source": src,
                             "formula": f"cost {label} x (1 -+ {err:.1%}), the speed model's median error on the records "
                                        "kept out of its fit (docs/accuracy.md)" if err is not None else "no model error stated"}
    if r.get("unit") == "hour" and not w.kind_spec.job:
        # per-hour prices are quotes, not modelled: the model's error cannot reorder them, it can only
        # leave the winner slower than the service level, so that is the question the band asks
        rec["runner_up_overlap"] = None
        rec["service_level_margin"] = _service_margin(d, by_id, err, src)
        r["within_error"] = None if rec["service_level_margin"] is None else \
            not rec["service_level_margin"]["holds_at_slow_end"]
        return
    rec["service_level_margin"] = None
    ranges = {c["gpu"]: c["cost_range"] for c in rec["candidates"]}
    win, ru = ranges.get(r["gpu"]), ranges.get(d.runner_up) if d.runner_up else None
    if not (win and ru):
        r["within_error"] = None            # nothing to compare: no runner-up, no price or no stated error
        rec["runner_up_overlap"] = None
        return
    overlap = ru[0] <= win[1] and win[0] <= ru[1]
    r["within_error"] = overlap
    # at the ends of the bands: the winner at its slow end against the runner-up at its fast end, and
    # the reverse; only the first can turn the answer
    rec["runner_up_overlap"] = {
        "gpu": d.runner_up, "winner_range": win, "runner_up_range": ru, "overlap": overlap,
        "if_winner_slow_runner_up_fast": d.runner_up if ru[0] < win[1] else r["gpu"],
        "if_winner_fast_runner_up_slow": r["gpu"],
        "settle_by": kinds.words(w).settle_by,
    }


def _service_margin(d, by_id: dict, err: float | None, src: list) -> dict | None:
    """Under per-hour ranking: whether the winner's tokens/s per user stays within the service level
    when the speed model is off by its median error, and whether the runner-up's would (None when no
    error or no per-token service level is stated)."""
    sl = d.estimate.workload.tpot_ms
    c = by_id[d.winner]
    if err is None or not sl or c.tokens_per_s_per_user is None:
        return None
    need = 1000 / sl

    def ends(k):
        v = k.tokens_per_s_per_user
        return [rounded(v * (1 - err)), rounded(v * (1 + err))]

    ru = by_id.get(d.runner_up) if d.runner_up else None
    ru_ends = ends(ru) if ru is not None and ru.fits and ru.tokens_per_s_per_user is not None else None
    slow_ok = c.tokens_per_s_per_user * (1 - err) >= need
    return {"basis": "per-hour prices are quotes, not modelled: the speed model's error moves the speed per user, "
                     "not the ranking",
            "model_error": err, "source": src, "service_level_tokens_per_s_per_user": rounded(need),
            "formula": f"tokens/s per user x (1 -+ {err:.1%}) against 1000 / tpot_ms",
            "winner_tokens_per_s_per_user": ends(c), "holds_at_slow_end": slow_ok,
            "runner_up": d.runner_up if ru_ends else None, "runner_up_tokens_per_s_per_user": ru_ends,
            "runner_up_holds_at_slow_end": None if ru_ends is None else ru.tokens_per_s_per_user * (1 - err) >= need,
            "settle_by": "an hour of the workload on one node, measuring output tokens/s per user at the workload's "
                         "concurrency"}


#: what a compact record keeps of the estimate of a candidate other than the winner: the figures
#: `explain --why-not` prints (fit, cards, memory per card, price per hour); the ranked ones' costs in
#: every unit, speed and layout are in `alternatives`; their explanations and their price offers'
#: catalog text are not kept (the catalog is named by its digest in `versions`)
BRIEF_FIELDS = ("gpu", "count", "per_card_gb", "fits", "reason", "usd_per_hour")


def missed_only(exclusions: list) -> bool:
    """Excluded (a list of exclude firings), and only by rules about missing the deadline or service level
    (misses_target): a plan that could be the closest one (decision._closest, _closest_priced)."""
    return bool(exclusions) and all("candidate.misses_target" in f.rule.facts_used for f in exclusions)


def _closest_priced(d, by_id) -> dict | None:
    """When the answer has no price (every priced plan missed the deadline or service level and only unpriced
    ones meet it), the priced plan that comes closest, with its miss and cost: the figure a budget owner can
    weigh against getting quotes for the unpriced GPUs."""
    r = d.ranked
    if not (d.winner and r and r.basis == "preference"):
        return None
    w = d.estimate.workload
    cost = {g: unit_cost(c, r.unit) for g, c in by_id.items() if c.fits}
    near = [g for g in cost if cost[g] is not None and by_id[g].misses is not None and missed_only(d.exclusions[g])]
    if not near:
        return None
    best = nearest(w, [by_id[g] for g in near])
    g = min(near, key=lambda g: (closeness(w, by_id[g], best), cost[g]))
    c = by_id[g]
    return {"gpu": g, "count": c.count, "missed": c.misses, "shortfall": round(shortfall(w, c), 4),
            "unit_cost": rounded(cost[g]), "unit": r.unit, "price_kind": (c.price or {}).get("kind"),
            "text": (f"every priced plan misses the {w.kind_spec.goal}; the closest, "
                     f"{c.count:,} x {g} ({(c.price or {}).get('kind') or 'priced'}), {c.misses.split('; ')[0]}, at "
                     f"{ranking.money(cost[g])} {UNIT_LABELS[r.unit]}")}


def _over_budget(d, by_id) -> dict | None:
    """When no GPU is left and some plans meet the workload but were excluded by the budget alone, the
    cheapest of them per hour: the budget the workload needs (review 18, F9: Llama 3.3 70B FP8 for 128
    users within $5/h read only "No GPU can be recommended", the plans that held its service level
    among thirty exclusion lines)."""
    cons = d.estimate.workload.constraints
    budget, job = cons.budget_usd_per_hour, cons.budget_usd
    if d.winner or (budget is None and job is None):
        return None
    held = [c for g, c in by_id.items() if c.fits and c.misses is None and c.usd_per_hour is not None and d.exclusions.get(g)
            and all(f.rule.id in BUDGET_RULES for f in d.exclusions[g])]
    if not held:
        return None
    if job is not None and any(c.usd_per_job is None or c.usd_per_job > job for c in held):
        # a whole-job budget (issue 45): the plan that costs least per job, and what it needs
        # each GPU's cheapest plan: its own, or the slower one kept beside it (numbers.longjob)
        def least(c):
            b = c.beyond_bound
            if b and b.get("usd_per_job") is not None and (c.usd_per_job is None or b["usd_per_job"] < c.usd_per_job):
                return b["count"], b["usd_per_job"], b["training_hours"]
            return c.count, c.usd_per_job if c.usd_per_job is not None else float("inf"), c.training_hours
        c = min(held, key=lambda c: (least(c)[1], least(c)[0]))
        count, usd, hours = least(c)
        return {"gpu": c.gpu.id, "count": count, "usd_per_hour": rounded(c.usd_per_hour) if count == c.count else None,
                "budget_usd_per_hour": budget, "usd_per_job": rounded(usd), "budget_usd": job,
                "text": (f"the cheapest plan that meets the workload is {count:,} x {c.gpu.id} for ${usd:,.0f} per job "
                         f"({hours:,.0f} h), {usd / job:.2f}x the ${job:,.0f} budget for the job: "
                         f"it needs a budget_usd of at least ${usd:,.0f}")}
    c = min(held, key=lambda c: (c.usd_per_hour, c.count))
    over = f"{c.usd_per_hour / budget:.1f}x the ${budget:,.2f}/h budget" if budget is not None else ""
    if job is not None and c.usd_per_job is not None and c.usd_per_job > job:
        over += f"{'; ' if over else ''}${c.usd_per_job:,.0f} per job, {c.usd_per_job / job:.2f}x the ${job:,.0f} budget for the job"
    return {"gpu": c.gpu.id, "count": c.count, "usd_per_hour": rounded(c.usd_per_hour), "budget_usd_per_hour": budget,
            "text": f"the cheapest plan that meets the workload is {c.count} x {c.gpu.id} at ${c.usd_per_hour:,.2f}/h, {over}"}


#: the rules that exclude a plan for its cost against the workload's budgets
BUDGET_RULES = ("over-budget", "over-job-budget", "unpriced-under-a-budget")


#: the ranks whose plan tables the record keeps and `explain --why-not` prints (the winner's and the
#: next GPUs': a table is ~1 kB, and 34 of them would grow the saved record by half)
TABLE_RANKS = 3


def table_gpus(rec: dict) -> set[str]:
    """The GPUs whose plan table explain prints, the same on a whole record and a compact one."""
    return {c["gpu"] for c in rec["candidates"] if c.get("rank") and c["rank"] <= TABLE_RANKS}


#: an alternative's fields that its entry in `candidates` holds too
ALT_IN_CANDIDATES = ("rank", "excluded", "fits", "count", "premium", "cost_range")
#: an exclusion's fields that are its rule's, said once in `trace_rules` (explain reads them there)
EXCLUSION_RULE_FIELDS = ("source", "file", "line")
#: a firing's fields that belong to its rule, not to the firing: said once per rule in `trace_rules`
RULE_FIELDS = ("title", "file", "line", "source")


def compact(rec: dict) -> dict:
    """The record as the dialogue saves it (`compact: true`): what `explain RECORD --why-not GPU` reads,
    each thing said once. The winner's estimate whole, the others' figures that explain prints
    (BRIEF_FIELDS); the candidates without their warnings' texts (the winner's are the record's
    `warnings`) and their exclusions without their rule's source, file and line; the ranked
    alternatives; each rule's title, file, line and source once (`trace_rules`); the firings for the
    winner and the workload, and every exclusion (its bindings are explain's "because"), whole; the
    other firings one per rule with the GPUs it fired for (`gpus`)."""
    r = rec.get("recommendation") or {}
    win = r.get("gpu")
    est = dict(rec["estimate"])
    # the winner's estimate whole (its buy-or-rent comparison and its offer, with the offer's fabric and
    # capacity, are the recommendation's `tco` and `price`), the others' figures that explain prints
    est["candidates"] = [({k: v for k, v in c.items() if not (k in ("tco", "price") and v == r.get(k))} if c.get("gpu") == win
                          else {k: c[k] for k in BRIEF_FIELDS if c.get(k) is not None}) for c in est["candidates"]]
    # the winner's warnings are the record's `warnings`; the others' texts are not kept (their rules
    # and weights are in `contributions`)
    cands = [{**{k: v for k, v in c.items() if k != "warnings"},
              "excluded_by": [{k: v for k, v in e.items() if k not in EXCLUSION_RULE_FIELDS} for e in c.get("excluded_by") or []]}
             for c in rec["candidates"]]
    # the ranked alternatives without what their candidate entries say already (rank, fit, count,
    # premium, band); an excluded one is its candidate entry's excluded_by
    alts = [{k: v for k, v in a.items() if k not in ALT_IN_CANDIDATES and v is not None}
            for a in rec.get("alternatives") or [] if not a.get("excluded")]
    rules: dict = {}
    trace: list = []
    others: dict = {}
    for t in rec["trace"]:
        rules.setdefault(t["rule"], {k: t.get(k) for k in RULE_FIELDS})
        kind = (t.get("effect") or {}).get("kind")
        if t.get("replaces"):
            trace.append(dict(t))            # a user's rule replacing a shipped one: explain lists it from here
        elif t.get("gpu") in (win, None) or kind == "exclude":
            entry = {k: v for k, v in t.items() if k not in RULE_FIELDS and v is not None}
            # the bindings as the record rounds figures; the effect's words (and a warning's
            # mitigation) are the candidate's excluded_by reason or the record's warnings already
            entry["bindings"] = {k: rounded(v) for k, v in (t.get("bindings") or {}).items()}
            entry["effect"] = {k: v for k, v in (t.get("effect") or {}).items() if k not in ("text", "reason", "mitigation")}
            trace.append(entry)
        elif t["rule"] in others:
            others[t["rule"]]["gpus"].append(t["gpu"])
        else:
            others[t["rule"]] = {"order": t["order"], "rule": t["rule"], "gpus": [t["gpu"]], "effect": {"kind": kind}}
            trace.append(others[t["rule"]])
    return {**rec, "compact": True, "candidates": cands, "alternatives": alts, "estimate": est, "trace": trace,
            "trace_rules": rules}


def rule_of(rec: dict, entry: dict) -> dict:
    """An exclusion or a firing of `rec` with its rule's title, file, line and source, which a compact
    record (`compact`) keeps once per rule in `trace_rules`."""
    return {**((rec.get("trace_rules") or {}).get(entry.get("rule")) or {}), **entry}
