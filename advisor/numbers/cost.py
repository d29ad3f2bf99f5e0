"""At what cost: power per node, the cheapest way to rent the plan's cards, cost per job."""
from __future__ import annotations

import math

from advisor.catalog import PRICE_TIERS, Price

HOST_POWER_FACTOR = 1.25           # C14: 8 x 700 W cards <-> a 6-8 kW node: 7 kW / 5.6 kW


def pick_price(prices: list[Price], count: int, group: int):
    """Cheapest way to rent `count` GPUs with each node's share of a model replica (`group` cards:
    its tensor-parallel and in-node pipeline stages) inside one instance (K13), from the most
    trustworthy tier that has one. Returns (usd_per_hour, price, instances) or None."""
    for tier in PRICE_TIERS:
        offers = [p for p in prices if p.tier == tier and p.gpus_per_instance >= group]
        if offers:
            best = min(offers, key=lambda p: (math.ceil(count / p.gpus_per_instance) * p.usd_per_hour, -p.gpus_per_instance))
            n = math.ceil(count / best.gpus_per_instance)
            return n * best.usd_per_hour, best, n
    return None



def job_cost(hours: float, usd_per_card_hour: float, cards: int, rerun_probability: float = 0.0) -> float:
    """C16: hours x price x cards, plus the expected cost of a rerun."""
    return hours * usd_per_card_hour * cards * (1 + rerun_probability)



def power(c, gpu) -> None:
    """C14: power per node = the node's cards x TDP x the host factor."""
    cards_in_node = min(c.count, gpu.gpus_per_node)
    tdp = gpu.num("tdp_w")
    if tdp:
        c.power_kw_per_node = cards_in_node * tdp * HOST_POWER_FACTOR / 1000
        c.why["power_kw_per_node"] = f"{cards_in_node} x {tdp:g} W x 1.25 host factor (C14)"


def offers(gpu, catalog, w=None) -> list[Price]:
    """The price rows that may price a plan of this GPU for workload `w` (all of the GPU's quotes today)."""
    return catalog.prices_for(gpu.id)


def instance_sizes(gpu, catalog, w=None) -> list[int]:
    """GPUs per instance of the offers usable for `w`, smallest first (the planner rents whole instances)."""
    return sorted({p.gpus_per_instance for p in offers(gpu, catalog, w)})


def price(c, gpu, catalog, group: int, w=None) -> None:
    """The hourly price of the plan in `c` from the offers usable for `w` (K13), or why it is unknown."""
    count = c.count
    found = pick_price(offers(gpu, catalog, w), count, group)
    if found:
        c.usd_per_hour, p, n = found
        c.price = {"provider": p.provider, "date": p.date, "source": p.source, "tier": p.tier,
                   "instances": n, "gpus_per_instance": p.gpus_per_instance, "usd_per_instance_hour": p.usd_per_hour,
                   "idle_gpus": n * p.gpus_per_instance - count}
        c.why["usd_per_hour"] = (f"{n} x {p.gpus_per_instance}-GPU instance x ${p.usd_per_hour:g}/h ({p.provider}, {p.date})"
                                 + (f"; {n * p.gpus_per_instance - count} of its GPUs idle" if n * p.gpus_per_instance > count else ""))
    else:
        have = instance_sizes(gpu, catalog, w)
        c.price_unknown = ("no price known for this GPU" if not have else
                           f"no quote for an instance of at least {group} GPUs (quoted sizes: {have})")
