"""A training job without a deadline (issue 21: time as well as money). Its cheapest plan may run for
years (cost per job is nearly flat across data-parallel widths, so the cheapest is the fewest cards):
when it runs past LONG_JOB_HOURS, the GPU's plan is the one that finishes within them, the cheapest
named beside it (review 10, F8: nobody runs an 8.6-year job).

A bound the workload did not state commits it to no contract (review 16, F4): when finishing within it
needs a cluster beyond what one listing rents on demand, the plan is the fastest on that capacity, and
the contracted plan that would meet the bound is named beside it, with what it commits. Only where the
on-demand plan would outlast the contract's own term (Llama 3.1 405B on 15.6T tokens: decades on 128
H100) is the contracted cluster the plan.
"""
from __future__ import annotations

from dataclasses import replace

from advisor.inputs.parallel import notation
from advisor.numbers.objective import minimises_cost, plan_time

LONG_JOB_HOURS = 30 * 24

# The knee of cost against time (issue 45 item 1): without a deadline, the GPU is sized again for runs
# of these lengths (days, longest first), each bounded by what can be had (max_gpus, the budgets, the
# capacity a listing or reservation sells, the global batch), and the plan is the shortest run whose
# cost per job is within KNEE_TOLERANCE of the cheapest of them. The longest is 90 days: the published
# pre-training runs of the largest open models took about two months (Llama 3 405B: 54 days on 16,384
# H100, arXiv 2407.21783 section 3.3.4; DeepSeek-V3: 2.664M H800-hours on 2,048 H800, about 54 days,
# arXiv 2412.19437 table 1), and a plan three times slower than the cheapest's fastest rival is the
# "cheaper but slower" neighbour, named beside it, not the plan.
KNEE_DAYS = (90, 60, 45, 30, 21, 14, 10, 7)
KNEE_TOLERANCE = 0.10       # stated choice: 10% more per job buys the shorter run


def applies(w, plan) -> bool:
    """A training job without a deadline whose cheapest plan runs past LONG_JOB_HOURS: it is planned to
    finish within them (`objective: cards` or `time` asks for its own plan, kept)."""
    hours = plan_time(w, plan)
    return (w.kind_spec.job and minimises_cost(w) and not w.constraints.deadline_hours and hours is not None
            and hours > LONG_JOB_HOURS)


def sized(w, cheapest, search, on_demand: int | None):
    """The GPU's plan when `cheapest` runs past the bound: on the knee of cost against time (issue 45), or,
    when no run of KNEE_DAYS is had, the plan within 30 days or the fastest on demand (`within`, `bounded`)."""
    on_knee = knee(w, cheapest, search)
    if on_knee is not None:
        return on_knee
    got = within(w, cheapest, search, on_demand)
    return bounded(cheapest, got) if got is not None else cheapest


def within(w, cheapest, search, on_demand: int | None):
    """The plan that finishes within LONG_JOB_HOURS: `search(workload, ceiling=None)` (the planner's own,
    for this GPU) again with that bound as the deadline; when none does, the closest it found (the fastest
    the limits allow: review 16, 405B on 112 H100 for 34 years had been the answer), its miss kept as
    `bound_missed`. A contracted plan is replaced by the fastest within `on_demand` GPUs (what one listing
    rents at once) when that one finishes within the contract's term, the contract kept as
    `bound_contract`. None when the answer is no faster than the cheapest plan."""
    wb = replace(w, constraints=replace(w.constraints, deadline_hours=LONG_JOB_HOURS))
    p = search(wb)
    price = (p.price or {}) if p.fits else {}
    if price.get("kind") == "contract" and on_demand and on_demand < p.count:
        most = f"what one listing rents on demand, {on_demand:,} x {p.gpu.id} (catalog/capacity.yaml)"
        q = search(wb, (on_demand, most))
        if q.fits and q.misses and _hours(q) <= price["term_hours"]:
            text = (f"{p.count:,} x {p.gpu.id} ({_layout(p)}) on a {price['term_months']}-month contract, "
                    f"{_hours(p):,.0f} h for ${p.usd_per_job:,.0f} per job, committing ${price['term_usd']:,.0f}")
            contract = {"count": p.count, "training_hours": _hours(p), "usd_per_job": p.usd_per_job,
                        "term_months": price["term_months"], "term_usd": price["term_usd"], "layout": p.layout.as_dict(), "text": text}
            p = replace(q, bound_contract=contract)
        elif q.fits and not q.misses:
            p = q                    # on-demand capacity meets the bound too: no commitment beyond the job
    if not p.fits or (p.misses and not _hours(p) < _hours(cheapest)):
        return None
    return replace(p, misses=None, bound_missed=p.misses)


def bounded(cheapest, p):
    """`p`, the plan within the bound (or the fastest short of it), as the GPU's plan: the cheapest plan
    beside it (`beyond_bound`) and the bound in its `limits` (the rules long-training-job* name them)."""
    hours = LONG_JOB_HOURS
    c = cheapest
    cost = f" for ${c.usd_per_job:,.0f} per job" if c.usd_per_job is not None else ""
    text = (f"{c.count:,} x {c.gpu.id} ({_layout(c)}), the cheapest plan, "
            f"would take {_hours(c):,.0f} h ({_hours(c) / 24 / 365:,.1f} years){cost}")
    beyond = {"count": c.count, "training_hours": _hours(c), "step_hours": c.step_hours, "usd_per_job": c.usd_per_job,
              "layout": c.layout.as_dict(), "text": text, "met": p.bound_missed is None}
    if p.bound_missed is None:
        sized = f"the plan is sized to finish within {hours / 24:g} days"
    elif p.bound_contract:
        sized = (f"no plan on on-demand capacity finishes within {hours / 24:g} days, and this is the fastest on it "
                 f"({p.bound_missed}); {p.bound_contract['text']}")
    else:
        sized = f"no plan finishes within {hours / 24:g} days, and this is the fastest the limits allow ({p.bound_missed})"
    limit = {"limit": "long_job_bound", "value": hours, "source": "numbers/longjob.py LONG_JOB_HOURS (issue 21)",
             "text": f"no deadline stated: {sized}; {text}"}
    why = {**p.why, "limits": "; ".join(x["text"] for x in p.limits + [limit])}
    return replace(p, limits=p.limits + [limit], beyond_bound=beyond, why=why)


def _layout(p) -> str:
    return notation(p.layout)


def _hours(p) -> float | None:
    """A job's hours: a training run's, or an offline batch job's (numbers.batchjob; one of them is set)."""
    return p.training_hours if p.training_hours is not None else p.job_hours


def knee(w, cheapest, search):
    """The plan on the knee of cost against time (KNEE_DAYS, KNEE_TOLERANCE), with its neighbours: the
    cheaper but slower one (the cheapest plan, or the next longer run) and the faster but dearer one (the
    next shorter run, or why none is had). `search(workload)`: the planner's own search for this GPU.
    None when no run of KNEE_DAYS is met on a priced plan that commits to nothing beyond the job (then
    `within` and `bounded` give the plan within 30 days, or the fastest on demand, as before)."""
    runs, stop = [], None
    for days in KNEE_DAYS:
        q = search(replace(w, constraints=replace(w.constraints, deadline_hours=days * 24)))
        price = (q.price or {}) if q.fits else {}
        beyond_job = price.get("kind") == "contract" and _hours(q) and price.get("term_hours", 0) > _hours(q) * 1.5
        if not q.fits or q.misses or q.usd_per_job is None or beyond_job:
            stop = (days, _why_not(q, price, beyond_job))
            if (q.fits and q.usd_per_job is not None and not beyond_job and _hours(q) <= KNEE_DAYS[0] * 24
                    and (not runs or _hours(q) < _hours(runs[-1][1]))):
                # short of this run, the fastest the limits allow (its miss names the limit that binds) is
                # still a point of the curve: the capacity that can be had bounds the knee
                runs.append((_hours(q) / 24, q))
            break
        runs.append((days, q))
    job = w.constraints.budget_usd
    if not runs:
        return _budget_bound(cheapest, [], job, stop) if job else None
    over = [q for _, q in runs if job and q.usd_per_job > job]
    if over:
        # the whole-job budget binds: the runs it pays for, or, when it pays for none, the cheapest plan
        runs = [(d, q) for d, q in runs if q.usd_per_job <= job]
        if not runs:
            return _budget_bound(cheapest, over, job, stop)
    low = min(q.usd_per_job for _, q in runs)
    near = [(d, q) for d, q in runs if q.usd_per_job <= low * (1 + KNEE_TOLERANCE)]
    days, k = min(near, key=lambda dq: (_hours(dq[1]), dq[1].usd_per_job))
    i = next(j for j, (_, q) in enumerate(runs) if q is k)
    cheaper = cheapest if (cheapest.usd_per_job or 0) < k.usd_per_job else (runs[i - 1][1] if i > 0 else None)
    faster = runs[i + 1][1] if i + 1 < len(runs) else None
    within = next((q for d, q in runs if d == LONG_JOB_HOURS // 24), None) if _hours(k) > LONG_JOB_HOURS else None
    words = {"plan": f"{_plan_words(k)}, within {KNEE_TOLERANCE:.0%} of the cheapest run of at most {KNEE_DAYS[0]} days "
                     f"(${low:,.0f} per job)",
             "cheaper_slower": _plan_words(cheaper, k) if cheaper is not None else None,
             "faster_dearer": (_plan_words(faster, k) if faster is not None else
                               f"none: {stop[1]}" if stop else f"none tried shorter than {KNEE_DAYS[-1]} days"),
             "bound": f"{stop[0]:g} days: {stop[1]}" if stop else None,
             "within_bound": _plan_words(within, k) if within is not None and within is not k else None}
    text = (f"sized on the knee of cost against time: {words['plan']}"
            + (f"; cheaper but slower: {words['cheaper_slower']}" if words["cheaper_slower"] else "")
            + f"; faster but dearer: {words['faster_dearer']}"
            + (f"; within {LONG_JOB_HOURS // 24} days: {words['within_bound']}" if words["within_bound"] else "")
            + (f"; shorter runs are bounded ({words['bound']})" if words["bound"] and faster is not None else "")
            + (f"; the ${job:,.0f} budget for the job binds: {_plan_words(min(over, key=lambda q: _hours(q)), k)} is over it"
               if over else ""))
    record = {"days": round(days, 1), "tolerance": KNEE_TOLERANCE, "cheapest_run_usd_per_job": low, **words, "text": text,
              "runs": [{"days": d, "count": q.count, "training_hours": _hours(q), "usd_per_job": q.usd_per_job} for d, q in runs]}
    limit = {"limit": "knee_of_cost_and_time", "value": round(_hours(k), 1),
             "source": "numbers/longjob.py KNEE_DAYS, KNEE_TOLERANCE (issue 45)", "text": f"no deadline stated: {text}"}
    why = {**k.why, "limits": "; ".join(x["text"] for x in k.limits + [limit])}
    c = cheapest
    beyond = ({"count": c.count, "training_hours": _hours(c), "step_hours": c.step_hours, "usd_per_job": c.usd_per_job,
               "layout": c.layout.as_dict(), "text": _plan_words(c, k), "met": True} if _hours(c) > _hours(k) else None)
    return replace(k, misses=None, limits=k.limits + [limit], knee=record, beyond_bound=beyond, why=why)


def _budget_bound(cheapest, over: list, job: float, stop):
    """No run of KNEE_DAYS within the whole-job budget: the cheapest plan, when the budget pays for it, with
    the binding said (None when it does not: the rule over-job-budget then excludes the GPU with its figure).
    `over`: the runs over the budget; `stop`: (days, why) of the first run not had within the limits."""
    if cheapest.usd_per_job is None or cheapest.usd_per_job > job:
        return None
    least = min(over, key=lambda q: q.usd_per_job) if over else None
    short = (f"the cheapest: {_plan_words(least, cheapest)}" if least is not None else
             f"{stop[0]:g} days: {stop[1]}" if stop else "none is had")
    text = (f"held to the ${job:,.0f} budget for the job, which pays for no run of at most {KNEE_DAYS[0]} days ({short}): "
            f"the plan is the cheapest, {_plan_words(cheapest)}")
    limit = {"limit": "budget_usd", "value": job, "source": "constraints.budget_usd in the workload", "text": text}
    record = {"days": round(_hours(cheapest) / 24, 1), "tolerance": KNEE_TOLERANCE,
              "cheapest_run_usd_per_job": least.usd_per_job if least is not None else None,
              "plan": _plan_words(cheapest), "cheaper_slower": None, "faster_dearer": _plan_words(least, cheapest) if least is not None else short,
              "bound": f"budget_usd {job:,.0f}", "within_bound": None, "text": text, "runs": []}
    why = {**cheapest.why, "limits": "; ".join(x["text"] for x in cheapest.limits + [limit])}
    return replace(cheapest, limits=cheapest.limits + [limit], knee=record, why=why)


def _plan_words(p, against=None) -> str:
    """A plan in one phrase: cards, layout, hours (days), cost per job, and its commitment when it has one."""
    price = p.price or {}
    term = ""
    if price.get("kind") == "reserved" and price.get("term_days"):
        term = f", a {price['term_days']}-day reservation"
    elif price.get("kind") == "contract":
        term = f", a {price['term_months']}-month contract committing ${price['term_usd']:,.0f}"
    cost = f"${p.usd_per_job:,.0f} per job" if p.usd_per_job is not None else "price unknown"
    delta = ""
    if against is not None and p.usd_per_job and against.usd_per_job:
        r = p.usd_per_job / against.usd_per_job - 1
        delta = f" ({abs(r):.0%} {'dearer' if r > 0 else 'cheaper'})"
    return (f"{p.count:,} x {p.gpu.id} ({_layout(p)}) for {_hours(p):,.0f} h ({_hours(p) / 24:,.0f} days), "
            f"{cost}{delta}{term}")


def _why_not(q, price: dict, beyond_job: bool) -> str:
    """Why a shorter run is not had: its miss (with the limit that binds), its unknown price, or the contract
    it would commit to beyond the job."""
    if beyond_job:
        return (f"{q.count:,} x {q.gpu.id} would need a {price['term_months']}-month contract committing "
                f"${price['term_usd']:,.0f} for a {_hours(q) / 24:,.0f}-day job")
    if not q.fits:
        return q.reason or "no layout holds it"
    if q.misses:
        return q.misses
    return f"{q.count:,} x {q.gpu.id} has no known price ({q.price_unknown})"
