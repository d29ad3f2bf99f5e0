"""Buying against renting (on premises): the owning arithmetic of a plan bought, its break-even against
renting, and the rental it is weighed against (the cheapest that does the same work). numbers.cost prices
each plan, owned or rented; this module holds the comparison's pure figures and texts."""
from __future__ import annotations

from dataclasses import replace

from advisor.numbers.terms import HOURS_PER_MONTH

def tco(count: int, usd_per_gpu: float, it_kw: float, rent_usd_per_hour: float | None, s: dict) -> dict:
    """Rent versus buy for `count` GPUs bought at `usd_per_gpu` drawing `it_kw` of IT power:
    capex = count x price x server overhead; opex per month = energy (kW x PUE x $/kWh x busy hours)
    + hosting ($/kW-month x kW) + maintenance (share of capex per year / 12); rent per month = the
    rental price x busy hours; break-even = capex / (rent - opex) months (None when renting is cheaper)."""
    v = {k: x["v"] for k, x in s.items()}
    busy_hours = HOURS_PER_MONTH * v["utilisation"]
    capex = count * usd_per_gpu * v["server_overhead"]
    energy = it_kw * v["pue"] * v["usd_per_kwh"] * busy_hours
    hosting = it_kw * v["hosting_usd_per_kw_month"]
    maintenance = capex * v["maintenance_share_per_year"] / 12
    opex = energy + hosting + maintenance
    rent_month = rent_usd_per_hour * busy_hours if rent_usd_per_hour is not None else None
    saving = (rent_month - opex) if rent_month is not None else None
    return {"capex_usd": capex, "opex_usd_per_month": opex, "rent_usd_per_month": rent_month,
            "break_even_months": (capex / saving) if saving and saving > 0 else None,
            "energy_usd_per_month": energy, "hosting_usd_per_month": hosting, "maintenance_usd_per_month": maintenance,
            "write_off_months": v["amortisation_years"] * 12,
            "owning_usd_per_hour": (capex / (v["amortisation_years"] * 12) + opex) / HOURS_PER_MONTH}


def _tco_figures(mid: dict, low: dict, high: dict, s: dict) -> dict:
    """The record's `tco` figures of three `tco` results (the purchase price's middle and ends) and the
    site figures `s` they were had at (as `inputs`)."""
    t = {k: mid[k] for k in ("capex_usd", "opex_usd_per_month", "rent_usd_per_month", "break_even_months", "write_off_months",
                             "owning_usd_per_hour", "energy_usd_per_month", "hosting_usd_per_month", "maintenance_usd_per_month")}
    for k in ("capex_usd", "break_even_months", "owning_usd_per_hour"):
        t[f"{k}_range"] = [low[k], high[k]]
    t["inputs"] = {k: {"value": x["v"], "range": x["range"], "source": x["source"]} for k, x in s.items()}
    return t


def _months(x) -> str:
    return "never (renting is cheaper)" if x is None else f"{x:,.1f} months"


def beyond_write_off(t: dict) -> str:
    """The clause a break-even later than the hardware's write-off needs: the cards are written off before
    buying has paid for itself."""
    be, off = t.get("break_even_months"), t.get("write_off_months")
    return f", beyond the {off / 12:g}-year write-off" if be and off and be > off else ""


def rent_vs_buy_text(t: dict, s: dict, gpu_id: str) -> str:
    """One paragraph for the memo: buying against renting the same plan, with the ranges of the sources."""
    lo, hi = t["break_even_months_range"]
    be = _months(t["break_even_months"])
    span = "" if (lo, hi) == (t["break_even_months"],) * 2 else f" (purchase-price range: {_months(lo)} to {_months(hi)})"
    text = (f"buy {t['gpus_bought']} x {gpu_id}: ${t['capex_usd']:,.0f} capex (${t['capex_usd_range'][0]:,.0f}-${t['capex_usd_range'][1]:,.0f}: "
            f"${t['usd_per_gpu_range'][0]:,.0f}-${t['usd_per_gpu_range'][1]:,.0f} per GPU from "
            f"{t['usd_per_gpu_basis'] or str(len(t['usd_per_gpu_sources'])) + ' source(s)'}, "
            f"{t['usd_per_gpu_date']}) + ${t['opex_usd_per_month']:,.0f}/month to run (energy {t['it_kw']:.1f} kW x PUE {s['pue']['v']:g} x "
            f"${s['usd_per_kwh']['v']:g}/kWh at {s['utilisation']['v']:.0%} busy: ${t['energy_usd_per_month']:,.0f}; hosting "
            f"${s['hosting_usd_per_kw_month']['v']:g}/kW-month: ${t['hosting_usd_per_month']:,.0f}; maintenance "
            f"{s['maintenance_share_per_year']['v']:.0%} of capex a year: ${t['maintenance_usd_per_month']:,.0f})")
    o = t["rent_offer"]
    if o is None:
        return text + "; no rental quote for the same plan to compare with"
    plan = t.get("rent_plan")
    same = (f"the cheapest rentable plan for the same work, {plan['count']} x {plan['gpu']} ({plan['reason']}; "
            f"{o['instances']} x {o['provider']} {o['instance'] or ''} {o['kind']}, {o['date']}, scaled to this plan's speed)"
            if plan else f"the same plan ({o['instances']} x {o['provider']} {o['instance'] or ''} {o['kind']}, {o['date']})")
    return (text + f"; renting {same} "
            f"{s['utilisation']['v']:.0%} of the time: ${t['rent_usd_per_month']:,.0f}/month; break-even: {be}{beyond_write_off(t)}{span}")


def _hours_per_unit(plan, w) -> float | None:
    sp = plan.speed
    if sp is None:
        return None
    if w.training:
        return sp.training_hours or sp.hours_per_million_tokens
    return 1 / sp.tokens_per_s if sp.tokens_per_s else None


def _bought_tco(p) -> dict | None:
    """A bought plan's rent-versus-buy figures (a fleet plan's tco is of the cards added to the fleet only)."""
    return p.cost.tco if p.fits and p.cost is not None and (p.cost.price or {}).get("kind") == "purchase" else None


def rent_comparison(plans: list, w) -> list:
    """Rent versus buy against the cheapest way to rent the same work: an owned plan is compared with the
    rentable plan (any GPU's same-plan rental, its hourly rent scaled by how long each takes per unit of
    work) that does the work for the least, its own rental when that is the cheapest or the only one.
    Review 18: 8 owned MI300X were set against renting 8 MI300X ($8,725 a month, "buying pays off after
    22 months") where renting H100 did the same four jobs for $3,196. A purchase for a data centre is
    not compared with renting consumer cards, whose licence bars that use (geforce-not-for-the-data-centre);
    a plan that misses the workload's deadline or service level does not stand in for it."""
    rentals = []
    for p in plans:
        t, hpu = _bought_tco(p), _hours_per_unit(p, w)
        if (t and t.get("rent_offer") and hpu and not p.misses
                and (p.gpu.gpu_class != "consumer" or w.constraints.deployment == "workstation")):
            rentals.append((t["rent_usd_per_hour"] * hpu, p, t))   # rented cost per unit of work
    if not rentals:
        return plans
    rate, other, ot = min(rentals, key=lambda r: r[0])
    out = []
    for p in plans:
        t, mine = _bought_tco(p), _hours_per_unit(p, w)
        own_rate = t["rent_usd_per_hour"] * mine if t and t.get("rent_offer") and mine else None
        if not t or not mine or other is p or (own_rate is not None and own_rate <= rate * 1.0001):
            out.append(p)
            continue
        rent_h = rate / mine       # renting `other` long enough to do what this plan does in an hour
        s = {k: {"v": x["value"], "range": x["range"], "source": x["source"]} for k, x in t["inputs"].items()}
        mid, low, high = (tco(t["gpus_bought"], v, t["it_kw"], rent_h, s)
                          for v in (t["usd_per_gpu"], *t["usd_per_gpu_range"]))
        reason = (f"{p.gpu.id} is rented {_where_not(w)}" if own_rate is None else
                  f"renting it costs {rate / own_rate:.0%} of renting {p.count} x {p.gpu.id} for the same work")
        t2 = dict(t, rent_usd_per_month=mid["rent_usd_per_month"], break_even_months=mid["break_even_months"],
                  break_even_months_range=[low["break_even_months"], high["break_even_months"]],
                  rent_usd_per_hour=rent_h, rent_offer=ot["rent_offer"],
                  rent_plan={"gpu": other.gpu.id, "count": other.count, "usd_per_hour": ot["rent_usd_per_hour"],
                             "reason": reason, "note": f"{reason}: the cheapest rentable plan for the same work"})
        why = dict(p.cost.why, rent_vs_buy=rent_vs_buy_text(t2, s, p.gpu.id))
        # the plan's own `why` (merged from its parts by the planner, read by the memo) takes the new text too
        out.append(replace(p, cost=replace(p.cost, tco=t2, why=why), why={**p.why, "rent_vs_buy": why["rent_vs_buy"]}))
    return out


def _where_not(w) -> str:
    """Where a GPU without a rental quote is not rented: nowhere, or by none of the workload's providers."""
    names = w.constraints.providers
    return f"by none of the workload's providers ({', '.join(names)})" if names else "nowhere"
