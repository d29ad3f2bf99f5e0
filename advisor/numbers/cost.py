"""At what cost (power per node is numbers.power's): the offers that may price a plan, the cheapest way to rent its cards,
the cost of owning them (rent versus buy), and the cost per job.

Offers (`catalog/prices*.yaml`) have a kind: on-demand, spot, reserved, endpoint (managed inference),
purchase (`catalog/purchase.yaml`). Which kinds may price a plan (`offers`):
- training and multi-node plans are priced only from instances (on-demand, reserved; spot when
  `constraints.spot: true`), never from an inference endpoint;
- endpoints price serving on one node only;
- `constraints.providers` and `constraints.regions` filter the offers;
- on premises (`deployment: on-prem` or `air-gapped`) the plan is priced by owning it: amortised
  purchase price + power x PUE + hosting, per hour, beside renting the same plan (`c.tco`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from advisor.base.kept import Kept, fingerprint, part_key
from advisor.inputs import fabric as fabric_mod
from advisor.inputs.capacity import on_demand_instances
from advisor.inputs.prices import PRICE_TIERS, Price, provider_key, provider_matches
from advisor.numbers.capacity import contract, offer_dict, pick_several, region_text, reserve_for_job, several
from advisor.numbers.power import kw_per_card, power
from advisor.numbers.owning import _tco_figures, rent_vs_buy_text, tco
from advisor.numbers.site import SITE_KEYS, WORKSTATION_SITE, purchase_unit, site_figures  # noqa: F401  (read from this module too)
from advisor.numbers.terms import HOURS_PER_MONTH

INSTANCE_KINDS = ("on-demand", "reserved", "spot")
#: where the plan is bought rather than rented; a workstation is a desk or lab machine (issue 22)
ON_PREM = ("on-prem", "air-gapped", "workstation")


def pick_price(prices: list[Price], count: int, group: int, capacity: dict | None = None):
    """Cheapest way to rent `count` GPUs with each node's share of a model replica (`group` cards:
    its tensor-parallel and in-node pipeline stages) inside one instance (K13), from the most
    trustworthy tier that has one. With `capacity` (catalog/capacity.yaml), only listings that have
    that many instances to rent at once (inputs.capacity.on_demand_instances). Returns
    (usd_per_hour, price, instances) or None."""
    g = max(group, 1)
    groups = math.ceil(count / g)
    most: dict[str, int | None] = {}          # the capacity of each provider, read once per call

    def instances(p: Price) -> int:
        # whole groups per instance: a 6-GPU instance holds one TP-4 replica, not one and a half
        return math.ceil(groups / (p.gpus_per_instance // g))

    def available(p: Price, n: int) -> bool:
        if not capacity:
            return True
        if p.provider not in most:
            most[p.provider] = on_demand_instances(capacity, p.provider)[0]
        return most[p.provider] is None or n <= most[p.provider]

    for tier in PRICE_TIERS:
        # each offer's instance count once (the planner asks for every layout of every GPU)
        offers = [(instances(p), p) for p in prices if p.tier == tier and p.gpus_per_instance >= group]
        offers = [(n, p) for n, p in offers if available(p, n)]
        if offers:
            n, best = min(offers, key=lambda o: (o[0] * o[1].usd_per_hour, -o[1].gpus_per_instance,
                                                 o[1].kind != "on-demand", o[1].provider, o[1].instance or ""))
            return n * best.usd_per_hour, best, n
    return None


def job_cost(hours: float, usd_per_card_hour: float, cards: int, rerun_probability: float = 0.0) -> float:
    """C16: hours x price x cards, plus the expected cost of a rerun."""
    return hours * usd_per_card_hour * cards * (1 + rerun_probability)


@dataclass(frozen=True)
class Cost:
    """What one plan costs: the node's power, the hourly price and the offer it comes from (or why it
    is unknown), on premises the rent-versus-buy figures, and the cost per unit of work."""

    power_kw_per_node: float | None = None
    usd_per_hour: float | None = None
    usd_per_million_tokens: float | None = None
    usd_per_job: float | None = None
    # an offline batch job (numbers.batchjob): its cost per million input + output tokens of its volume
    usd_per_million_io_tokens: float | None = None
    price: dict | None = None
    price_unknown: str | None = None
    tco: dict | None = None            # on premises: rent versus buy (own)
    why: dict = field(default_factory=dict)


def plan_cost(gpu, catalog, count: int, nodes: int, group: int, w, fabric: bool = False) -> Cost:
    """The power and hourly price of `count` cards on `nodes` nodes, each replica's `group` cards in one
    instance (K13): rented from the offers usable for `w`, or on premises owned (kind 'purchase'); with
    `fabric` (traffic across instances) only from listings with a GPU-direct network (inputs.fabric)."""
    mine = next((f for f in w.fleet if f.gpu == gpu.id), None) if w is not None else None
    if mine is None and not (w is not None and w.constraints.deployment in ON_PREM) \
            and getattr(catalog, "gpus", {}).get(gpu.id) is gpu:
        # the catalog's own GPU rented: its power and price read nothing else of the workload (`price`)
        return _kept(catalog, ("plan",) + _price_key(gpu, count, nodes, group, w, fabric),
                     lambda: _plan_cost(gpu, catalog, count, nodes, group, w, None, fabric))
    return _plan_cost(gpu, catalog, count, nodes, group, w, mine, fabric)


def _plan_cost(gpu, catalog, count: int, nodes: int, group: int, w, mine, fabric: bool = False) -> Cost:
    kw, how = power(gpu, count)
    why = {"power_kw_per_node": how} if how else {}
    if mine is not None:
        got = fleet_cost(gpu, catalog, count, nodes, group, w, mine)
    else:
        got = own(gpu, catalog, count, nodes, group, w) if w is not None and w.constraints.deployment in ON_PREM \
            else price(gpu, catalog, count, nodes, group, w, fabric)
    return replace(got, power_kw_per_node=kw, why={**why, **got.why})


def per_unit(c: Cost, speed, w, explain: bool = True) -> Cost:
    """The cost per unit of work from the hourly price and the plan's speed: per million output
    tokens when serving (T07), per job when training with a token budget, per million training tokens
    without one (C16). `explain` false: the figures without their texts (the planner's search orders
    plans by the figures; the plan it keeps is priced again with the texts)."""
    if not c.usd_per_hour:
        return c
    if not w.training:
        if not speed.tokens_per_s:
            return c
        # owned hardware is paid for every hour and makes tokens in its busy ones only (review 15: the
        # on-prem 70B read $0.80 per million output tokens at 80% busy, $0.99 by its own figures)
        busy = c.tco["inputs"]["utilisation"]["value"] if c.tco and (c.price or {}).get("kind") == "purchase" else None
        figure = c.usd_per_hour / (speed.tokens_per_s * 3600 * (busy or 1)) * 1e6
        if not explain:
            return replace(c, usd_per_million_tokens=figure)
        why = dict(c.why)
        why["usd_per_million_tokens"] = (f"${c.usd_per_hour:,.2f}/h / ({speed.tokens_per_s:,.0f} tokens/s x 3600"
                                         + (f" x {busy:.0%} busy: owned, paid for every hour" if busy else "") + ") x 10^6 (T07)")
        return replace(c, usd_per_million_tokens=figure, why=why)
    # without the texts the Cost's own `why` is passed on as it is (never written to)
    why = dict(c.why) if explain else c.why
    jobs = w.constraints.jobs_per_month
    jobs_share = min(speed.training_hours * jobs / HOURS_PER_MONTH, 1.0) if speed.training_hours is not None and jobs else None
    if jobs_share is not None and c.tco and jobs_share > (w.constraints.busy_share or 0.0):
        # the jobs a month set the hours the cluster is busy, which renting instead would be paid for
        # (review 16: "2 jobs a month keep it 96% busy" beside a buy-or-rent at the default 70%); a stated
        # busy_share below what the jobs need cannot hold them (review 18: "4 jobs a month of 117.9 h keep
        # it 65% busy" beside energy and rent at the stated 60%), one above it is other work the cluster does
        c = _owned_busy(c, jobs_share, jobs, explain)
    if speed.training_hours is not None and jobs and c.price and c.price.get("kind") == "purchase":
        # owned hardware is paid for every hour of the month, busy or not: each job carries its share
        month = c.usd_per_hour * HOURS_PER_MONTH
        busy = speed.training_hours * jobs
        if not explain:
            return replace(c, usd_per_job=max(month / jobs, speed.training_hours * c.usd_per_hour))
        why["usd_per_job"] = (f"${c.usd_per_hour:,.2f}/h owning x {HOURS_PER_MONTH} h / {jobs:g} jobs a month"
                              + (f" (the jobs need {busy:,.0f} h: more than a month, the cluster is too small for them)"
                                 if busy > HOURS_PER_MONTH else f" (busy {busy / HOURS_PER_MONTH:.0%} of the month)"))
        return replace(c, usd_per_job=max(month / jobs, speed.training_hours * c.usd_per_hour), why=why)
    if speed.training_hours is not None:
        # beyond on-demand capacity the job's length picks the commitment: a reservation whose term
        # covers it when that costs less than the contract's term (numbers/capacity.py reserve_for_job)
        booked = reserve_for_job(c.price, speed.training_hours, c.price.get("instances", 0) * c.price.get("gpus_per_instance", 0)
                                 - (c.price.get("idle_gpus") or 0)) if c.price else None
        if isinstance(booked, str):
            return replace(c, usd_per_hour=None, price=None, price_unknown=booked)
        if booked is not None:
            usd, block, offer, booked_why = booked
            return replace(c, usd_per_hour=usd, usd_per_job=block, price=offer, why={**why, **booked_why})
        offer = c.price
        if offer and offer.get("kind") == "contract":
            # the job is charged its hours; the term commits the rest, which the team must use or resell
            share = speed.training_hours / offer["term_hours"]
            offer = {**offer, "job_share_of_term": share}
        if not explain:
            return replace(c, usd_per_job=speed.training_hours * c.usd_per_hour, price=offer)
        why["usd_per_job"] = f"{speed.training_hours:,.1f} h x ${c.usd_per_hour:,.2f}/h (C16)"
        if offer and offer.get("kind") == "contract":
            why["usd_per_job"] += (f"; the {offer['term_months']}-month contract commits ${offer['term_usd']:,.0f}, "
                                   f"of which the job uses {share:.0%}")
        return replace(c, usd_per_job=speed.training_hours * c.usd_per_hour, price=offer, why=why)
    if speed.hours_per_million_tokens:
        if not explain:
            return replace(c, usd_per_million_tokens=speed.hours_per_million_tokens * c.usd_per_hour)
        why["usd_per_million_tokens"] = (f"{speed.hours_per_million_tokens:,.3g} h per million training tokens x "
                                         f"${c.usd_per_hour:,.2f}/h (C16)")
        return replace(c, usd_per_million_tokens=speed.hours_per_million_tokens * c.usd_per_hour, why=why)
    return c


# --- which offers may price a plan ----------------------------------------------------------------

def _region_ok(p: Price, wanted: frozenset[str]) -> bool:
    return not wanted or any(r.lower() in wanted for r in p.regions)


#: (the catalog's prices, the GPU, what of the workload `_usable` reads) -> the usable quotes
_OFFERS = Kept("usable offers", 4096)


def on_demand_gpus(gpu, catalog, w) -> int | None:
    """The most GPUs one on-demand listing of the workload's rents at once (its capacity figure or the
    sourced default, inputs.capacity.on_demand_instances); None without such a listing: a larger
    cluster is a contract or reservation."""
    cap = getattr(catalog, "capacity", None) or {}
    return max(((on_demand_instances(cap, p.provider)[0] or 0) * p.gpus_per_instance
                for p in offers(gpu, catalog, w) if p.kind == "on-demand"), default=None) or None


def offers(gpu, catalog, w=None, nodes: int | None = None) -> tuple[Price, ...]:
    """The quotes usable for this workload: its kinds (spot only when allowed; endpoints only for
    serving, and only on one node when `nodes` is known), providers and regions. The planner asks for
    every layout it tries: the answer is kept per catalog prices, GPU and what of the workload it reads."""
    if w is None:
        return tuple(p for p in catalog.prices_for(gpu.id) if p.kind != "spot")
    c = w.constraints
    key = (part_key(catalog, "prices"), gpu.id, c.spot, c.providers, c.regions, w.training, nodes is None or nodes <= 1)
    return _OFFERS.get(key, lambda: tuple(_usable(catalog.prices_for(gpu.id), w, nodes)))


def _usable(rows, w, nodes) -> list[Price]:
    c = w.constraints
    kinds = set(INSTANCE_KINDS if c.spot else INSTANCE_KINDS[:2])
    if not w.training and (nodes is None or nodes <= 1):
        kinds.add("endpoint")
    providers = frozenset(provider_key(x) for x in c.providers)
    regions = frozenset(r.lower() for r in c.regions)
    return [p for p in rows if p.kind in kinds and provider_matches(p, providers) and _region_ok(p, regions)]


def instance_sizes(gpu, catalog, w=None) -> list[int]:
    """GPUs per instance of the offers usable for `w`, smallest first (the planner rents whole instances).
    On premises with a purchase price: the unit the GPU is bought in (a server of 8 SXM modules, a card)."""
    if w is not None and w.constraints.deployment in ON_PREM:
        unit = purchase_unit(gpu, catalog)
        if unit:
            return [unit]
    return sorted({p.gpus_per_instance for p in offers(gpu, catalog, w)})


def _why_unknown(gpu, catalog, w, group: int, nodes: int) -> str:
    everything = catalog.prices_for(gpu.id)
    if not everything:
        return "no price known for this GPU"
    usable = offers(gpu, catalog, w, nodes)
    if not usable:
        kinds = sorted({p.kind for p in everything})
        c = w.constraints if w is not None else None
        if c is not None and (c.providers or c.regions):
            where = (f" from {', '.join(c.providers)}" if c.providers else "") + (f" in {', '.join(c.regions)}" if c.regions else "")
            return f"no usable quote{where} (quotes exist elsewhere: {', '.join(kinds)})"
        if kinds == ["endpoint"]:
            what = "training" if w is not None and w.training else f"a {nodes}-node plan"
            return f"only inference-endpoint quotes, which do not price {what}"
        if kinds == ["spot"] or set(kinds) <= {"spot", "endpoint"}:
            return "only spot quotes (set constraints.spot: true to use them)"
        return f"no usable quote (kinds quoted: {', '.join(kinds)})"
    have = sorted({p.gpus_per_instance for p in usable})
    return f"no quote for an instance of at least {group} GPUs (quoted sizes: {have})"


#: (the catalog parts a price reads, `_price_key` or another key) -> the Cost
_PRICED = Kept("prices", 16384)
#: what of the catalog a price reads: the quotes, the on-demand capacity and contract rates, the
#: purchase prices and site figures (on premises, quote_age)
PRICE_PARTS = ("prices", "capacity", "purchase")


def _kept(catalog, key: tuple, make):
    """`make()` once per catalog content and key: every GPU's layouts, and every workload of a sweep,
    rent the same few instance counts (a Cost is frozen, and no reader changes its dicts)."""
    return _PRICED.get((part_key(catalog, *PRICE_PARTS),) + key, make)


def _price_key(gpu, count: int, nodes: int, group: int, w, fabric: bool = False) -> tuple:
    """What of the GPU and the workload a rental's price reads: the offers' key (`offers`), the GPU's
    figures (its power: `fingerprint`) and the node size of a contracted cluster. tests/test_kept.py
    records what `_plan_cost` reads of the workload and checks it is here."""
    c = w.constraints if w is not None else None
    return (fingerprint(gpu), gpu.gpus_per_node, count, nodes, group, fabric,
            None if w is None else (c.spot, c.providers, c.regions, w.training))


def price(gpu, catalog, count: int, nodes: int, group: int, w=None, fabric: bool = False) -> Cost:
    """The hourly price of `count` cards from the cheapest offer usable for `w` (K13) that has that many
    instances to rent; beyond every listing's on-demand capacity, a contracted cluster at a sourced
    rate (`contract`); or why it is unknown. Kept per catalog (`_kept`)."""
    return _kept(catalog, _price_key(gpu, count, nodes, group, w, fabric), lambda: _price(gpu, catalog, count, nodes, group, w, fabric))


def _price(gpu, catalog, count: int, nodes: int, group: int, w, fabric: bool = False) -> Cost:
    usable = offers(gpu, catalog, w, nodes)
    rows = getattr(catalog, "fabric", None) or []
    if fabric and usable:      # traffic between instances: only listings that state a GPU-direct network (issue 46)
        usable, no = fabric_mod.joined(usable, rows, gpu.id)
        if no:
            return Cost(price_unknown=no, why={"fabric_refused": no})
    capacity = getattr(catalog, "capacity", None) or None
    found = pick_price(usable, count, group, capacity)
    if not found:
        beyond = pick_price(usable, count, group) if capacity else None
        spread = pick_several(usable, count, group, capacity) if beyond and w is not None and not w.training else None
        if spread:
            usd, offer, why = several(count, *spread, capacity)
            return Cost(usd_per_hour=usd, price=offer, why=why)
        if beyond:
            usd, offer, why = contract(gpu, capacity, count, group, beyond, tuple(w.constraints.providers or ()) if w is not None else ())
            return Cost(price_unknown=offer, why=why) if usd is None else Cost(usd_per_hour=usd, price=offer, why=why)
        return Cost(price_unknown=_why_unknown(gpu, catalog, w, group, nodes or 1))
    usd, p, n = found
    idle = n * p.gpus_per_instance - count
    where = region_text(p)
    why = {"usd_per_hour": (f"{n} x {p.gpus_per_instance}-GPU instance x ${p.usd_per_hour:g}/h ({p.provider}"
                            + (f" {p.instance}" if p.instance else "") + f", {p.kind}" + (f", {where}" if where else "")
                            + f", {p.date}" + (f", catalog commit {p.commit[:8]}" if p.commit else "") + ")"
                            + (f"; {idle} of its GPUs idle" if idle > 0 else ""))}
    if p.kind == "spot" and w is not None and w.training:
        why["spot"] = ("spot instances can be reclaimed at any time: checkpoint often enough that a "
                       "restart loses little work (constraints.spot: true)")
    offer = offer_dict(p, n, count)
    offer["fabric"], crossing = fabric_mod.stated(rows, p, n)
    if fabric:
        why["fabric"] = crossing
    if capacity:
        most, src = on_demand_instances(capacity, p.provider)
        offer.update(capacity_instances=most, capacity_source=src)
    return Cost(usd_per_hour=usd, price=offer, why=why)



# --- rent versus buy ----------------------------------------------------------------------------

def _years(date) -> list[int]:
    return [int(y) for y in re.findall(r"(?:19|20)\d\d", str(date or ""))]


def quote_age(catalog, date) -> tuple[int | None, int | None]:
    """(years between a purchase quote's latest year and the newest quote in catalog/purchase.yaml, that
    newest year): the age of a price against the catalog's own present, not the day the tool runs."""
    newest = _kept(catalog, ("newest purchase quote",), lambda: max(
        (y for e in ((catalog.purchase or {}).get("gpus") or {}).values() for y in _years((e.get("usd_per_gpu") or {}).get("date"))),
        default=0))
    mine = _years(date)
    return (newest - max(mine), newest) if mine and newest else (None, None)


def own(gpu, catalog, count: int, nodes: int, group: int, w) -> Cost:
    """On premises: the hourly cost of owning the plan (kind 'purchase'), and its tco:
    buying against renting the same plan at the workload's utilisation, with the range the purchase
    price's sources span (owning.rent_comparison then sets it against the cheapest rental of the work)."""
    entry = (catalog.purchase or {}).get("gpus", {}).get(gpu.id)
    if not entry:
        return Cost(price_unknown="no purchase price known for this GPU (on premises it is bought, not rented)")
    s = site_figures(catalog, w)
    if entry.get("includes_server"):
        # a rack price (NVL72) already holds the CPUs, switch trays, power shelves and cooling around the GPUs
        s = {**s, "server_overhead": {"v": 1.0, "range": None, "source": "catalog/purchase.yaml: the price is of the whole rack, servers included"}}
    unit = 1 if w.constraints.deployment == "workstation" else int(entry.get("unit_gpus", 1))
    bought = math.ceil(count / unit) * unit
    fig = entry["usd_per_gpu"]
    if not gpu.num("tdp_w"):
        # the purchase is known, the running cost is not: the capex is said, the hourly cost stays unknown
        # (review 18: 16 Ascend 910C read only "price unknown" beside a sourced $28,571 a card)
        over = s["server_overhead"]["v"]
        capex = (f"; buying them alone costs ${bought * fig['v'] * over:,.0f} ({bought} x ${fig['v']:,.0f}, {fig.get('date', 'undated')}"
                 + (f", x {over:g} server overhead" if over != 1 else "") + ", catalog/purchase.yaml)" if over is not None else "")
        return Cost(price_unknown=f"no TDP known for this GPU: its power cost cannot be computed{capex}")
    if any(x["v"] is None for x in s.values()):
        missing = [k for k, x in s.items() if x["v"] is None]
        return Cost(price_unknown=f"no data-centre figure for {', '.join(missing)} (catalog/purchase.yaml or the workload)")
    it_kw = bought * kw_per_card(gpu)[0]
    # renting the same plan: instances only (an endpoint does not stand in for owned hardware)
    rented = pick_price([p for p in offers(gpu, catalog, _as_cloud(w), nodes) if p.kind in ("on-demand", "reserved")],
                        count, group)
    rent_h = rented[0] if rented else None
    mid = tco(bought, fig["v"], it_kw, rent_h, s)
    low = tco(bought, fig["range"][0], it_kw, rent_h, s)
    high = tco(bought, fig["range"][1], it_kw, rent_h, s)
    usd_per_hour = mid["owning_usd_per_hour"]
    servers = bought // unit
    where = "bought (workstation)" if w.constraints.deployment == "workstation" else "bought (on premises)"
    offer = {"provider": where, "region": None, "kind": "purchase",
               "instance": (f"{servers} x {unit}-GPU {'rack' if entry.get('includes_server') else 'server'}{'s' if servers > 1 else ''}" if unit > 1
                            else f"{bought} card{'s' if bought > 1 else ''}"),
               "date": fig.get("date", "unknown"), "commit": None, "source": "; ".join(fig.get("sources", [])),
               "tier": "quote", "instances": bought // unit, "gpus_per_instance": unit,
               "usd_per_instance_hour": usd_per_hour / max(bought // unit, 1), "idle_gpus": bought - count,
               "usd_per_gpu": fig["v"], "usd_per_gpu_range": list(fig["range"]),
               **dict(zip(("quote_age_years", "newest_quote_year"), quote_age(catalog, fig.get("date")))),
               **({"basis": entry["basis"]} if entry.get("basis") else {})}
    t = _tco_figures(mid, low, high, s)
    t.update({
        "gpus_bought": bought, "it_kw": it_kw, "gpu_id": gpu.id,
        "usd_per_gpu": fig["v"], "usd_per_gpu_range": list(fig["range"]), "usd_per_gpu_sources": list(fig.get("sources", [])),
        "usd_per_gpu_date": fig.get("date"), "usd_per_gpu_basis": entry.get("basis"),
        "rent_offer": offer_dict(rented[1], rented[2], count) if rented else None,
        "rent_usd_per_hour": rent_h,
    })
    why = {"usd_per_hour": (f"owning {bought} x {gpu.id} at ${fig['v']:,.0f} each x {s['server_overhead']['v']:g} server overhead "
                             f"= ${t['capex_usd']:,.0f} written off over {s['amortisation_years']['v']:g} years, + ${t['opex_usd_per_month']:,.0f}"
                            f"/month to run, per {HOURS_PER_MONTH} h"),
           "rent_vs_buy": rent_vs_buy_text(t, s, gpu.id)}
    return Cost(usd_per_hour=usd_per_hour, price=offer, tco=t, why=why)


def _owned_busy(c: Cost, share: float, jobs: float, explain: bool) -> Cost:
    """An owned plan's rent-versus-buy (`own`) again at the busy share its jobs a month give."""
    t = c.tco
    s = {k: {"v": x["value"], "range": x["range"], "source": x["source"]} for k, x in t["inputs"].items()}
    s["utilisation"] = {"v": share, "range": None, "source": f"the workload's {jobs:g} jobs a month of this plan's hours"}
    mid, low, high = (tco(t["gpus_bought"], v, t["it_kw"], t["rent_usd_per_hour"], s) for v in [t["usd_per_gpu"], *t["usd_per_gpu_range"]])
    t = {**t, **_tco_figures(mid, low, high, s)}
    why = {**c.why, "rent_vs_buy": rent_vs_buy_text(t, s, t["gpu_id"]) if explain else c.why.get("rent_vs_buy")}
    price = {**c.price, "usd_per_instance_hour": mid["owning_usd_per_hour"] / max(c.price["instances"], 1)}
    return replace(c, usd_per_hour=mid["owning_usd_per_hour"], price=price, tco=t, why=why)


def fleet_cost(gpu, catalog, count: int, nodes: int, group: int, w, mine) -> Cost:
    """Cards the team owns or has reserved (`fleet`): the owned ones cost their running cost only (power
    x PUE x $/kWh + hosting per kW, per hour) or the team's own rate; cards beyond the fleet are added
    the way the deployment gets cards (rented in a cloud, bought on premises), and both are shown."""
    owned = min(count, mine.count)
    extra = count - owned
    s = site_figures(catalog, w)
    per, how = kw_per_card(gpu)
    if mine.usd_per_gpu_hour is not None:
        owned_h = owned * mine.usd_per_gpu_hour
        owned_how = f"{owned} owned x ${mine.usd_per_gpu_hour:g}/GPU-h (the team's negotiated rate, fleet file)"
    elif per is None or any(s[k]["v"] is None for k in ("pue", "usd_per_kwh", "hosting_usd_per_kw_month")):
        return Cost(price_unknown="the fleet's running cost is unknown: no power figure or site figures for this GPU")
    else:
        kw = owned * per
        energy = kw * s["pue"]["v"] * s["usd_per_kwh"]["v"]
        hosting = kw * s["hosting_usd_per_kw_month"]["v"] / HOURS_PER_MONTH
        owned_h = energy + hosting
        owned_how = (f"{owned} owned x {per:.2f} kW ({how}) = {kw:.1f} kW: energy x PUE {s['pue']['v']:g} x ${s['usd_per_kwh']['v']:g}/kWh"
                     f" ${energy:,.2f}/h + hosting ${s['hosting_usd_per_kw_month']['v']:g}/kW-month ${hosting:,.2f}/h (running cost only: already bought)")
    added = None
    if extra:
        # the cards beyond the fleet: their own whole instances (or servers), beside the owned nodes
        g = max(group, 1)
        if w.constraints.deployment in ON_PREM:
            added = own(gpu, catalog, extra, max(1, math.ceil(extra / gpu.gpus_per_node)), g, w)
        else:
            added = price(gpu, catalog, extra, max(1, math.ceil(extra / gpu.gpus_per_node)), g, w)
        if added.usd_per_hour is None:
            return Cost(price_unknown=f"the fleet holds {owned} of the {count} {gpu.id} needed, and the other {extra}: "
                                      f"{added.price_unknown}")
    usd = owned_h + (added.usd_per_hour if added else 0.0)
    where = ", ".join(x for x in (mine.location, mine.interconnect) if x)
    offer = {"provider": "the team's fleet" + (f" ({where})" if where else ""), "region": mine.location, "kind": "owned",
             "instance": f"{owned} of {mine.count} owned {gpu.id}",       # in `instances` of its nodes (below)
             "date": "fleet file", "commit": None, "source": "fleet", "tier": "quote",
             # the fleet's nodes are its "instances": 16 owned H100 in two DGX are 2 x 8, not 1 x 16
             "instances": math.ceil(owned / gpu.gpus_per_node), "gpus_per_instance": min(owned, gpu.gpus_per_node),
             "usd_per_instance_hour": owned_h / math.ceil(owned / gpu.gpus_per_node), "idle_gpus": 0,
             "owned_gpus": owned, "fleet_gpus": mine.count, "owned_usd_per_hour": owned_h,
             # the fleet's nodes the plan uses and the instances (or servers) added beside them: the
             # network between the two is not the fleet's own (rules/procurement.yaml)
             "owned_nodes": math.ceil(owned / gpu.gpus_per_node),
             "added_nodes": ((added.price or {}).get("instances") or math.ceil(extra / gpu.gpus_per_node)) if added else 0,
             "added_gpus": extra, "added": (added.price if added else None),
             "added_usd_per_hour": (added.usd_per_hour if added else None)}
    why = {"usd_per_hour": owned_how + (f"; plus {extra} more {gpu.id}: {added.why.get('usd_per_hour')}" if added else ""),
           "fleet": (f"the job fits the team's {mine.count} {gpu.id} ({owned} used)" if not extra else
                     f"the team owns {owned} {gpu.id}; the job needs {count}: add {extra} "
                     + ("bought" if w.constraints.deployment in ON_PREM else f"rented ({added.price.get('provider')})"))}
    if added and added.tco:
        why["rent_vs_buy"] = added.why.get("rent_vs_buy")
    return Cost(usd_per_hour=usd, price=offer, tco=added.tco if added else None, why=why)


def _as_cloud(w):
    """The workload as if rented (the offers on-premises hardware is compared with)."""
    return replace(w, constraints=replace(w.constraints, deployment="cloud"))
