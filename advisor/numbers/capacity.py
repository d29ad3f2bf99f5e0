"""Capacity: how much of an offer can be had, and what a plan beyond it is priced as (issue 21).

A listing rents at most its on-demand capacity at once (inputs.capacity.on_demand_instances: its own
figure in catalog/capacity.yaml, else the sourced default). numbers/cost.py prices a plan from one
listing within that; beyond it, serving replicas are spread over several listings (`pick_several`,
`several`: they are independent), and a training cluster, which is one machine room, is contracted
(`contract`: whole nodes at a sourced rate for a term, or unknown), unless a published reservation
(capacity booked ahead for days or weeks: `reserve_for_job`) holds the cluster for the job's length
for less than the contract commits. The offer records (`offer_dict`) are the decision record's `price`.
"""
from __future__ import annotations

import math

from advisor.inputs.capacity import contract_rate, on_demand_instances, reserved_tiers
from advisor.inputs.prices import PRICE_TIERS, Price, provider_key, provider_names
from advisor.numbers.terms import HOURS_PER_MONTH



def offer_dict(p: Price, n: int, count: int) -> dict:
    """The record's `price` for `n` instances of one listing holding `count` cards (idle: the rest)."""
    return {"provider": p.provider, "instance": p.instance, "region": region_text(p), "kind": p.kind,
            "date": p.date, "commit": p.commit, "source": p.source, "tier": p.tier,
            "instances": n, "gpus_per_instance": p.gpus_per_instance, "usd_per_instance_hour": p.usd_per_hour,
            "usd_per_instance_hour_median": p.usd_per_hour_median, "idle_gpus": n * p.gpus_per_instance - count}


def region_text(p: Price) -> str | None:
    """Where the listing's price holds, as the memo names it."""
    if p.regions:
        return p.regions[0] if len(p.regions) == 1 else f"cheapest of {len(p.regions)} regions ({', '.join(p.regions[:3])}{', ...' if len(p.regions) > 3 else ''})"
    if p.region_count:
        return "1 region" if p.region_count == 1 else f"cheapest of {p.region_count} regions"
    return None


def pick_several(prices: list[Price], count: int, group: int, capacity: dict):
    """Serving beyond one listing's capacity: replicas spread over several listings of the same kind
    and instance size, the cheapest per replica first, each up to its on-demand capacity (a training
    job is one cluster in one place: never spread). Returns (usd_per_hour, [(price, instances)]) or None."""
    g = max(group, 1)
    for tier in PRICE_TIERS:
        pool = [p for p in prices if p.tier == tier and p.gpus_per_instance >= group]
        if not pool:
            continue
        def per_replica(p: Price) -> float:
            return p.usd_per_hour / (p.gpus_per_instance // g)
        first = min(pool, key=lambda p: (per_replica(p), p.provider, p.instance or ""))
        same = sorted((p for p in pool if p.kind == first.kind and p.gpus_per_instance == first.gpus_per_instance),
                      key=lambda p: (per_replica(p), p.provider, p.instance or ""))
        left = math.ceil(count / g)
        taken = []
        for p in same:
            most = on_demand_instances(capacity, p.provider)[0] or 0
            k = min(most, math.ceil(left / (p.gpus_per_instance // g)))
            if k > 0:
                taken.append((p, k))
                left -= k * (p.gpus_per_instance // g)
            if left <= 0:
                return sum(p.usd_per_hour * k for p, k in taken), taken
    return None


def several(count: int, usd: float, taken: list, capacity: dict) -> tuple[float, dict, dict]:
    """The offer of a serving plan spread over several listings (pick_several): one instance size and
    kind, each listing's share and capacity named."""
    first = taken[0][0]
    n = sum(k for _, k in taken)
    providers = list(dict.fromkeys(p.provider for p, _ in taken))
    parts = [{"provider": p.provider, "instance": p.instance, "instances": k, "usd_per_instance_hour": p.usd_per_hour,
              "capacity_instances": on_demand_instances(capacity, p.provider)[0], "date": p.date, "commit": p.commit,
              "source": p.source} for p, k in taken]
    offer = {**offer_dict(first, n, count),
             "provider": f"{len(taken)} listings of {len(providers)} provider{'s' if len(providers) > 1 else ''} ({', '.join(providers)})",
             "instance": " + ".join(f"{k} x {p.provider} {p.instance or ''}".rstrip() for p, k in taken),
             "region": None, "usd_per_instance_hour": usd / n, "usd_per_instance_hour_median": None,
             "capacity_instances": max(x["capacity_instances"] or 0 for x in parts),
             "capacity_source": on_demand_instances(capacity, first.provider)[1], "listings": parts}
    why = {"usd_per_hour": " + ".join(f"{k} x {p.gpus_per_instance}-GPU instance x ${p.usd_per_hour:g}/h ({p.provider}"
                                      + (f" {p.instance}" if p.instance else "") + f", {p.kind}, {p.date})" for p, k in taken)
           + (f"; {n * first.gpus_per_instance - count} of the GPUs idle" if n * first.gpus_per_instance > count else ""),
           "capacity": (f"no listing rents {n:,} instances at once on demand (at most "
                        f"{max(x['capacity_instances'] or 0 for x in parts):,} each, catalog/capacity.yaml): the replicas are "
                        f"spread over {len(taken)} listings, the cheapest per replica first")}
    return usd, offer, why


def contract(gpu, capacity: dict, count: int, group: int, beyond: tuple,
             providers: tuple = ()) -> tuple[float | None, dict | str, dict]:
    """A plan no listing has the instances for on demand: a contracted cluster of whole nodes at the
    sourced $/GPU-hour of catalog/capacity.yaml (kind 'contract', with its term), or unknown when no
    rate is sourced (never guessed). `beyond`: the cheapest listing ignoring capacity, for the text;
    `providers`: the workload's (constraints.providers): a market rate or reservation sold by none of
    them does not price its cluster (review 16: AWS only, priced at a rental index AWS does not offer).
    Returns (usd_per_hour, offer, why), or (None, why it is unknown, why)."""
    _, p, n = beyond
    most, src = on_demand_instances(capacity, p.provider)
    # the capacity figure's full source is in the offer (capacity_source); the text names the file
    over = (f"{count:,} GPUs need {n:,} x {p.gpus_per_instance}-GPU instances at once, more than any listing has "
            f"on demand (at most {most:,} instances of one listing, catalog/capacity.yaml)")
    rate = contract_rate(capacity, gpu.id)
    tiers = _tiers_that_hold(capacity, gpu.id, count)
    wanted = frozenset(provider_key(x) for x in providers)
    if wanted:
        rate = rate if rate is not None and not wanted.isdisjoint(provider_names(rate["provider"])) else None
        tiers = [t for t in tiers if not wanted.isdisjoint(provider_names(t["provider"]))]
        if rate is None and not tiers:
            return None, (f"{over}; no contract rate or reservation sourced from the workload's providers "
                          f"({', '.join(providers)}): ask them for a quote"), {"capacity": over}
    if rate is None and tiers:
        # no contract rate, but a reservation is sold that holds the cluster: priced as it, its term
        # checked against the job's hours once they are known (reserve_for_job, via cost.per_unit)
        t = tiers[0]
        n = math.ceil(count / t["gpus_per_instance"])
        offer = _reserved_offer(t, n, count, None, most, src, {"provider": p.provider, "instance": p.instance,
                                                               "instances_needed": beyond[2], "usd_per_instance_hour": p.usd_per_hour})
        return offer["usd_per_instance_hour"] * n, offer, {"usd_per_hour": _reserved_usd_text(offer), "capacity": over + "; priced as a reservation"}
    if rate is None:
        return None, (f"{over}; no sourced contract rate for {gpu.id} (catalog/capacity.yaml): a cluster "
                      "this size is contracted, ask providers for a quote"), {"capacity": over}
    gpn = max(gpu.gpus_per_node, group, 1)
    nodes = math.ceil(count / gpn)
    billed = nodes * gpn
    usd = billed * rate["usd_per_gpu_hour"]
    term_h = rate["term_months"] * HOURS_PER_MONTH
    offer = {"provider": rate["provider"], "instance": f"{rate['term_months']}-month term",
             "region": None, "kind": "contract", "date": rate["date"], "commit": None, "source": rate["src"],
             "tier": "quote", "instances": nodes, "gpus_per_instance": gpn, "usd_per_instance_hour": gpn * rate["usd_per_gpu_hour"],
             "usd_per_instance_hour_median": None, "idle_gpus": billed - count,
             "usd_per_gpu_hour": rate["usd_per_gpu_hour"], "usd_per_gpu_hour_range": rate["range"],
             "term_months": rate["term_months"], "term_hours": term_h, "term_usd": usd * term_h,
             "capacity_instances": most, "capacity_source": src,
             "on_demand_offer": {"provider": p.provider, "instance": p.instance, "instances_needed": n,
                                 "usd_per_instance_hour": p.usd_per_hour},
             # the published reservations that hold this cluster: per_unit takes one when its term covers the job
             "reserved_tiers": tiers}
    why = {"usd_per_hour": (f"{billed:,} GPUs ({nodes:,} x {gpn}-GPU nodes) x ${rate['usd_per_gpu_hour']:g}/GPU-h contracted for "
                            f"{rate['term_months']} months ({rate['provider']}, {rate['date']}: {rate['src']})"
                            + (f"; {billed - count} of its GPUs idle" if billed > count else "")),
           "capacity": over + "; priced as a contracted cluster"}
    return usd, offer, why


def _tiers_that_hold(capacity: dict, gpu_id: str, count: int) -> list[dict]:
    """The reserved tiers of this GPU that sell enough instances at once for `count` cards, cheapest
    per GPU-hour first."""
    fit = [t for t in reserved_tiers(capacity, gpu_id) if math.ceil(count / t["gpus_per_instance"]) <= t["max_instances"]]
    return sorted(fit, key=lambda t: (t["usd_per_instance_hour"] / t["gpus_per_instance"], t["provider"]))


def billed_days(tier: dict, hours: float) -> int | None:
    """The shortest reservation on sale that covers `hours` (whole days up to daily_up_to, whole weeks
    beyond), or None when the job is longer than the longest one."""
    d = tier["term_days"]
    days = max(d["min"], math.ceil(hours / 24 - 1e-9))
    if days > d["daily_up_to"]:
        days = math.ceil(days / d["step_beyond"]) * d["step_beyond"]
    return days if days <= d["max"] else None


def _reserved_offer(t: dict, n: int, count: int, days: int | None, most, src, on_demand: dict) -> dict:
    """The record's `price` for `n` instances of a reserved tier (with its billed days once known)."""
    gpi = t["gpus_per_instance"]
    offer = {"provider": t["provider"], "instance": t["instance"] or None, "region": None, "kind": "reserved",
             "date": t["date"], "commit": None, "source": t["src"], "tier": "quote", "instances": n,
             "gpus_per_instance": gpi, "usd_per_instance_hour": t["usd_per_instance_hour"],
             "usd_per_instance_hour_median": None, "idle_gpus": n * gpi - count,
             "usd_per_gpu_hour": t["usd_per_instance_hour"] / gpi, "max_instances": t["max_instances"],
             "term_days_on_sale": dict(t["term_days"]), "capacity_instances": most, "capacity_source": src,
             "on_demand_offer": on_demand}
    if days is not None:
        offer.update(term_days=days, term_hours=days * 24, term_usd=t["usd_per_instance_hour"] * n * days * 24)
    return offer


def _reserved_usd_text(offer: dict) -> str:
    return (f"{offer['instances']:,} x {offer['gpus_per_instance']}-GPU {offer['instance'] or 'instance'} x "
            f"${offer['usd_per_instance_hour']:g}/h reserved (${offer['usd_per_gpu_hour']:.3g}/GPU-h, {offer['provider']}, "
            f"{offer['date']}: {offer['source']})" + (f"; {offer['idle_gpus']} of its GPUs idle" if offer["idle_gpus"] else ""))


def _tier_of(offer: dict) -> dict:
    """The capacity.yaml tier a reserved offer record was made from (the record renames two keys)."""
    keep = ("provider", "instance", "gpus_per_instance", "usd_per_instance_hour", "max_instances", "date")
    return {**{k: offer[k] for k in keep}, "term_days": offer["term_days_on_sale"], "src": offer["source"]}


def reserve_for_job(offer: dict, hours: float, count: int):
    """A plan beyond on-demand capacity, once its hours are known: the cheapest commitment whose term
    covers the job. A published reservation (kind 'reserved') that holds the cluster for the job's
    length wins over the contract when the block costs less than the contract's whole term (a
    two-week job books two weeks, not twelve months); the block is paid whole, so the job is charged
    its billed days. Returns (usd_per_hour, usd_per_job, offer, why) for a reservation, None to keep
    the contract, or a str (why the price is unknown) when only reservations were sourced and none
    is long enough."""
    kind = offer.get("kind")
    if kind == "reserved" and "term_days_on_sale" in offer:    # a tier of capacity.yaml, not a reserved listing of prices.yaml
        tiers = [_tier_of(offer)]
    elif kind == "contract":
        tiers = offer.get("reserved_tiers") or []
    else:
        return None
    best = None
    for t in tiers:
        days = billed_days(t, hours)
        if days is None:
            continue
        n = math.ceil(count / t["gpus_per_instance"])
        block = t["usd_per_instance_hour"] * n * days * 24
        if best is None or block < best[0]:
            best = (block, t, n, days)
    if best is None:
        if kind == "reserved":
            return (f"{hours:,.0f} h is longer than the longest reservation on sale ({tiers[0]['term_days']['max']} days, "
                    f"{offer['provider']}, {offer['date']}) and no contract rate is sourced for this GPU (catalog/capacity.yaml): "
                    "ask providers for a quote")
        return None
    block, t, n, days = best
    if kind == "contract" and block >= offer["term_usd"]:
        return None
    od = offer["on_demand_offer"]
    new = _reserved_offer(t, n, count, days, offer.get("capacity_instances"), offer.get("capacity_source"), od)
    new["job_share_of_term"] = hours / (days * 24)
    if kind == "contract":
        new["contract_alternative"] = {"provider": offer["provider"], "usd_per_gpu_hour": offer["usd_per_gpu_hour"],
                                       "term_months": offer["term_months"], "term_usd": offer["term_usd"]}
    usd = t["usd_per_instance_hour"] * n
    why = {"usd_per_hour": _reserved_usd_text(new),
           "capacity": (f"{count:,} GPUs need {od['instances_needed']:,} instances at once, more than any listing has on demand "
                        f"(at most {offer.get('capacity_instances') or 0:,} of one listing, catalog/capacity.yaml); a "
                        f"{days}-day reservation of {n:,} instances holds them for the job"
                        + (f" for ${block:,.0f}, less than the {offer['term_months']}-month contract's ${offer['term_usd']:,.0f}"
                           if kind == "contract" else "")),
           "usd_per_job": (f"{days} days reserved x 24 h x ${usd:,.2f}/h = ${block:,.0f}, paid whole: the job's "
                           f"{hours:,.1f} h use {hours / (days * 24):.0%} of it")}
    return usd, block, new, why

