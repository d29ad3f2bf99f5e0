"""Capacity: how much of an offer can be had, and what a plan beyond it is priced as (issue 21).

A listing rents at most its on-demand capacity at once (inputs.capacity.on_demand_instances: its own
figure in catalog/capacity.yaml, else the sourced default). numbers/cost.py prices a plan from one
listing within that; beyond it, serving replicas are spread over several listings (`pick_several`,
`several`: they are independent), and a training cluster, which is one machine room, is contracted
(`contract`: whole nodes at a sourced rate for a term, or unknown). The offer records (`offer_dict`)
are the decision record's `price`.
"""
from __future__ import annotations

import math

from advisor.inputs.capacity import contract_rate, on_demand_instances
from advisor.inputs.prices import PRICE_TIERS, Price
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


def contract(gpu, capacity: dict, count: int, group: int, beyond: tuple) -> tuple[float | None, dict | str, dict]:
    """A plan no listing has the instances for on demand: a contracted cluster of whole nodes at the
    sourced $/GPU-hour of catalog/capacity.yaml (kind 'contract', with its term), or unknown when no
    rate is sourced (never guessed). `beyond`: the cheapest listing ignoring capacity, for the text.
    Returns (usd_per_hour, offer, why), or (None, why it is unknown, why)."""
    _, p, n = beyond
    most, src = on_demand_instances(capacity, p.provider)
    # the capacity figure's full source is in the offer (capacity_source); the text names the file
    over = (f"{count:,} GPUs need {n:,} x {p.gpus_per_instance}-GPU instances at once, more than any listing has "
            f"on demand (at most {most:,} instances of one listing, catalog/capacity.yaml)")
    rate = contract_rate(capacity, gpu.id)
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
                                 "usd_per_instance_hour": p.usd_per_hour}}
    why = {"usd_per_hour": (f"{billed:,} GPUs ({nodes:,} x {gpn}-GPU nodes) x ${rate['usd_per_gpu_hour']:g}/GPU-h contracted for "
                            f"{rate['term_months']} months ({rate['provider']}, {rate['date']}: {rate['src']})"
                            + (f"; {billed - count} of its GPUs idle" if billed > count else "")),
           "capacity": over + "; priced as a contracted cluster"}
    return usd, offer, why
