"""Owned first (issue 46): serving replicas are independent, so the team's own cards serve as many
replicas as they hold, at their running cost, and a rented plan (of any GPU) carries the other users.

A team owning 32 A100 80GB asked to serve Llama 3.3 70B to 600 users was told to rent 48 H100 while
"the team's 32 A100 stay out of this plan": the fleet GPU's own plan had to rent 96 more A100 to carry
everything on one GPU type, and lost. Here the fleet GPU's plan (numbers.cost.fleet_cost prices its owned
cards) gives the replica and its users; the owned cards hold whole replicas of it; each other GPU is
planned for the users left and priced with the owned part beside it (`combined`): one plan, two parts,
the cost of each in `price["owned_first"]`.

Figures only: which plan wins is still the ranking's (the fleet GPU's own plan, owned and rented
cards of one type, stays a candidate beside these).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.numbers import cost
from advisor.numbers.terms import rounded


@dataclass(frozen=True)
class OwnedShare:
    """The users the team's own cards of one GPU carry: whole replicas of that GPU's plan."""

    gpu: str
    cards: int                  # owned cards serving (whole replicas)
    fleet_cards: int            # the fleet's cards of this GPU
    replicas: int
    layout: str                 # the replica's layout in notation ("TP 8")
    users: int                  # sequences at once these replicas serve
    usd_per_hour: float         # their running cost
    tokens_per_s: float
    tpot_ms: float | None
    ttft_ms: float | None
    requests_per_s: float | None = None

    def as_dict(self) -> dict:
        return {k: rounded(v) for k, v in self.__dict__.items()}


def applies(w) -> bool:
    """Serving with a fleet, rented beyond it, the users spread over replicas the planner sizes."""
    return (not w.training and bool(w.fleet) and w.constraints.deployment not in cost.ON_PREM
            and not w.concurrency_max and not w.layout_given and w.concurrency >= 2)


def share_of(plan, w) -> OwnedShare | None:
    """The users the fleet's cards of `plan`'s GPU serve as whole replicas of `plan` (the fleet GPU's
    plan, priced as owned): None when they hold no replica, or already carry everything (its own plan)."""
    from advisor.inputs.parallel import notation
    price = plan.price or {} if plan.fits else {}
    lay = plan.layout
    if price.get("kind") != "owned" or lay is None or lay.pools or plan.misses or not plan.tokens_per_s \
            or not price.get("owned_gpus") or price.get("owned_usd_per_hour") is None:
        return None
    per = lay.replica_cards
    replicas = min(lay.dp, price["fleet_gpus"] // per)
    if replicas == 0 or replicas >= lay.dp:
        return None
    users = w.concurrency * replicas // lay.dp
    if users < 1:
        return None
    cards = replicas * per
    # the running cost of the cards serving (power and hosting per card, numbers.cost.fleet_cost)
    usd = price["owned_usd_per_hour"] / price["owned_gpus"] * cards
    rate = w.requests_per_s * users / w.concurrency if w.requests_per_s else None
    return OwnedShare(plan.gpu.id, cards, price["fleet_gpus"], replicas, notation(replace(lay, dp=1)).replace(" x PP 1", "").replace(" x DP 1", ""), users, usd,
                      plan.tokens_per_s * replicas / lay.dp, plan.tpot_ms, plan.ttft_ms, rate)


def rest_workload(w, shares: list[OwnedShare]):
    """The workload the rented part serves: the users (and arrival rate) the owned replicas leave."""
    users = sum(s.users for s in shares)
    rest = max(1, w.concurrency - users)
    rate = w.requests_per_s * rest / w.concurrency if w.requests_per_s else None
    return replace(w, concurrency=rest, requests_per_s=rate)


def combined(plan, shares: list[OwnedShare], w):
    """`plan` (a rented GPU sized for the users the owned replicas leave) with the owned part beside it:
    its hourly cost and tokens the sum of both, its times the slower of both (a user may land on either)."""
    if not plan.fits or plan.usd_per_hour is None or not plan.tokens_per_s:
        return plan
    owned_h = sum(s.usd_per_hour for s in shares)
    owned_tps = sum(s.tokens_per_s for s in shares)
    tpot = max([x for x in [plan.tpot_ms] + [s.tpot_ms for s in shares] if x is not None], default=None)
    ttft = max([x for x in [plan.ttft_ms] + [s.ttft_ms for s in shares] if x is not None], default=None)
    spd = replace(plan.speed, tokens_per_s=plan.tokens_per_s + owned_tps, tpot_ms=tpot, ttft_ms=ttft,
                  concurrency=w.concurrency)
    users = sum(s.users for s in shares)
    part = {"owned": [s.as_dict() for s in shares], "rented_gpu": plan.gpu.id, "rented_cards": plan.count,
            "rented_users": w.concurrency - users, "users": w.concurrency,
            "rented_usd_per_hour": rounded(plan.usd_per_hour), "owned_usd_per_hour": rounded(owned_h),
            "rented_tokens_per_s": rounded(plan.tokens_per_s)}
    how = "; ".join(f"the team's {s.cards} of {s.fleet_cards} {s.gpu} serve {s.users} of the {w.concurrency} users "
                    f"({s.replicas} x {s.layout} replica{'s' if s.replicas > 1 else ''}) at ${s.usd_per_hour:,.2f}/h running cost"
                    for s in shares)
    why = dict(plan.cost.why)
    why["usd_per_hour"] = (f"{how}; {plan.count} {plan.gpu.id} rented for the other {w.concurrency - users} users "
                           f"${plan.usd_per_hour:,.2f}/h ({why.get('usd_per_hour') or 'the offer'})")
    c = replace(plan.cost, usd_per_hour=plan.usd_per_hour + owned_h, price={**plan.price, "owned_first": part}, why=why)
    c = cost.per_unit(replace(c, usd_per_million_tokens=None), spd, w)
    return replace(plan, cost=c, speed=spd, why={**plan.why, "usd_per_hour": why["usd_per_hour"],
                                                   "usd_per_million_tokens": c.why.get("usd_per_million_tokens"),
                                                   "owned_first": how})


def shares(fleet_plans: list, w) -> list[OwnedShare]:
    """The shares the fleet GPUs' plans give (together at most the workload's users less one)."""
    out = []
    left = w.concurrency - 1
    for p in fleet_plans:
        s = share_of(p, w)
        if s is not None and s.users <= left:
            out.append(s)
            left -= s.users
    return out
