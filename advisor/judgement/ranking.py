"""The ranking: rules' preferences turned into money, candidates ordered by what the work costs.

A rule's `prefer`/`avoid` weight is a premium on cost: weight 30 means "worth paying up to 30%
more" (prefer) or "must be 30% cheaper to win" (avoid). A candidate's premium is the sum of its
rules' weights / 100; its effective cost is its cost per unit of work divided by (1 + premium), or
multiplied by (1 + |premium|) when the premium is negative. Among candidates that fit and are not
excluded, the priced ones are ranked by the workload's objective (cost: effective cost; time:
training hours or time per output token; cards: card count), and the unpriced ones are listed apart
with the price per GPU-hour below which each would win (break-even): a missing price never wins and
never loses. With no price at all, candidates are ranked on preferences, then card count.
docs/rules.md has the model and a worked example.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.numbers.objective import rank_key

PREMIUM_PER_WEIGHT = 0.01          # a rule weight of 30 is a 30% premium


def premium(score: float) -> float:
    """The net premium (a fraction) of a candidate whose rules sum to `score`."""
    return score * PREMIUM_PER_WEIGHT


def factor(p: float) -> float:
    """What a premium is worth as a divisor of cost: +30% -> 1.3, -30% -> 1/1.3 (symmetric)."""
    return 1 + p if p >= 0 else 1 / (1 - p)


def effective_cost(cost: float, p: float) -> float:
    return cost / factor(p)


@dataclass
class Option:
    """One candidate as the ranking sees it."""

    gpu: str
    count: int
    score: float
    cost: float | None                 # per unit of work, None when unpriced
    hours_per_unit: float | None = None     # hours each card runs per unit of work (1 per hour; job hours), for break-even
    time: float | None = None          # training hours or ms per output token (objective time)
    penalty: float = 0.0               # the sum of its `avoid` weights (<= 0): what the rules hold against it
    # the sum of its `prefer` weights that are not `proxy: true` (a policy: import substitution, a
    # workstation); None: every preference counts as policy (no breakdown given)
    policy: float | None = None

    @property
    def policy_weight(self) -> float:
        return max(self.score, 0.0) if self.policy is None else self.policy

    @property
    def premium(self) -> float:
        return premium(self.score)

    @property
    def effective(self) -> float | None:
        return None if self.cost is None else effective_cost(self.cost, self.premium)


@dataclass
class Ranking:
    """The order of the candidates that may win, and the figures that set it."""

    basis: str                         # "cost" | "preference" (no candidate has a price)
    unit: str                          # job | million_tokens | hour
    objective: str
    order: list[str]                   # priced by the objective, then unpriced by preference
    priced: list[str]
    unpriced: list[str]
    options: dict[str, Option]
    break_even: dict[str, float | None] = field(default_factory=dict)
    time_unit: str = "h"
    # under `objective: cost`, each priced option another dominates -> that one, first by effective cost
    dominated_by: dict[str, str] = field(default_factory=dict)

    @property
    def winner(self) -> str | None:
        return self.order[0] if self.order else None

    def key(self, o: Option):
        """The sort key of an option under this ranking (also for excluded options: would it have won?)."""
        return rank_key(self.objective, self.basis, o)


def rank(options: list[Option], unit: str, objective: str = "cost") -> Ranking:
    """Rank the candidates that fit and are not excluded."""
    priced = [o for o in options if o.cost is not None]
    basis = "cost" if priced else "preference"
    r = Ranking(basis, unit, objective, [], [], [], {o.gpu: o for o in options})
    order = sorted(priced, key=r.key)
    r.dominated_by = _dominators(order) if objective == "cost" else {}
    r.priced = _dominance_first(order, {g: r.options[d] for g, d in r.dominated_by.items()})
    unpriced = [o for o in options if o.cost is None]
    r.unpriced = [o.gpu for o in sorted(unpriced, key=lambda o: (-o.score, o.count, o.gpu))]
    if basis == "preference":
        r.order = [o.gpu for o in sorted(options, key=r.key)]
        r.unpriced = list(r.order)
        return r
    r.order = r.priced + r.unpriced
    best = r.options[r.priced[0]]
    for g in r.unpriced:
        o = r.options[g]
        # the price per GPU-hour at which its effective cost equals the winner's
        r.break_even[g] = (best.effective * factor(o.premium) / (o.count * o.hours_per_unit)
                           if o.hours_per_unit and o.count else None)
    return r


def _times(d: Option, o: Option) -> tuple:
    """The two options' times on one basis: training hours or ms per output token, else (a training job
    without a token budget has no hours) the wall-clock hours per unit of work."""
    return (d.time, o.time) if d.time is not None and o.time is not None else (d.hours_per_unit, o.hours_per_unit)


def dominates(d: Option, o: Option) -> bool:
    """`d` costs no more per unit of work than `o`, is no slower (training hours, ms per output token),
    no rule holds more against it and no policy preference favours `o` more: the preferences left for
    `o` are proxies (`prefer: {proxy: true}`: a seed's rule of thumb on which cards are cheaper or
    faster), and `d`'s own figures already beat `o` on both counts (a memo that shows a cheaper, faster
    plan than the one it recommends is wrong). Strictly better on cost or time, so equals stay as ranked."""
    dt, ot = _times(d, o)
    if dt is None or ot is None or d.cost is None or o.cost is None:
        return False
    return (d.cost <= o.cost and dt <= ot and d.penalty >= o.penalty and d.policy_weight >= o.policy_weight
            and (d.cost < o.cost or dt < ot))


def as_fast(d: Option, o: Option) -> bool:
    """`d` and `o` take the same time within half a percent (the same tokens/s per GPU on both: review 17,
    F3, where the memo called an H200 slower at the H100's 0.393 h)."""
    dt, ot = _times(d, o)
    return dt is not None and ot is not None and abs(dt - ot) <= 0.005 * max(abs(ot), abs(dt))


def _dominators(order: list[Option]) -> dict[str, str]:
    """Each option of `order` (by effective cost, as the cost ranking sorts) that another dominates -> the
    first of those that do."""
    out = {}
    for o in order:
        d = next((d for d in order if d is not o and dominates(d, o)), None)
        if d is not None:
            out[o.gpu] = d.gpu
    return out


def _dominance_first(order: list[Option], by: dict[str, Option]) -> list[str]:
    """The priced order by effective cost, except that a plan ranked ahead of the plan that dominates it
    (`by`: cheaper, faster, no riskier, no policy in its favour) moves to just behind it: what the rules of
    thumb favour does not win against figures that beat it, and it is still shown next to that plan (the
    runner-up the memo compares)."""
    out = list(order)
    for _ in range(len(out)):
        ahead = [o for o in out if o.gpu in by and out.index(o) < out.index(by[o.gpu])]
        if not ahead:
            break
        for o in reversed(ahead):       # each right behind its dominator: those moved keep their own order
            out.remove(o)
            out.insert(out.index(by[o.gpu]) + 1, o)
    return [o.gpu for o in out]


def pct(a: float, b: float) -> float:
    """How much more a costs than b, in percent."""
    return (a / b - 1) * 100 if b else math.inf


def money(v: float) -> str:
    """Dollars with the digits that separate candidates: $1,234; $12.34; $0.0412."""
    if v >= 1000:
        return f"${v:,.0f}"
    return f"${v:,.2f}" if v >= 1 else f"${v:.3g}"
