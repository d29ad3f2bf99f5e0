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


def applies(w, plan) -> bool:
    """A training job without a deadline whose cheapest plan runs past LONG_JOB_HOURS: it is planned to
    finish within them (`objective: cards` or `time` asks for its own plan, kept)."""
    hours = plan_time(w, plan)
    return (w.kind_spec.job and minimises_cost(w) and not w.constraints.deadline_hours and hours is not None
            and hours > LONG_JOB_HOURS)


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
