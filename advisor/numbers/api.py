"""Self-host or pay per token: a serving plan's cost per million tokens at the workload's load against
the cheapest API offers for the same model (catalog/api-prices.yaml), and the break-even load.

Pure arithmetic over a Plan, a Workload and the catalog's API prices; the rules decide what it means
(rules/api.yaml). The formulas (docs/api-prices.md):
- tokens are prompt + output tokens; a request has P prompt and O output tokens, a share h of the
  prompt read from the provider's prefix cache (`prefix_cache_hit`);
- an API offer costs (P(1-h) x input + P h x cached input + O x output) / (P + O) per token (cached
  input at the input price where the provider lists none);
- the plan serves tokens_per_s x (P + O) / O tokens per second while busy (tokens_per_s: output
  tokens/s of all users at the workload's concurrency);
- busy share u: rented plans are paid for their busy hours only (the workload's `utilisation`, else
  24x7 as the memo's monthly cost assumes); owned plans (`deployment: on-prem`) run their owning cost
  around the clock and are busy the share their rent-versus-buy figures assume (constraints.busy_share
  or catalog/purchase.yaml);
- plan cost per day = usd_per_hour x paid hours a day; load = tokens per second x 3600 x 24 u;
- break-even load = plan cost per day / the API's price per token: above it self-hosting is cheaper;
  its utilisation = break-even load / (tokens per second x 86,400), the share of the day the plan must
  be busy at the workload's concurrency.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from advisor.numbers.cost import ON_PREM

#: two models are of one size class when total and active parameters are each within this factor: the
#: serving cost of a model follows the bytes it moves and the FLOPs it runs, both set by those (K01)
SIZE_CLASS_FACTOR = 1.25
#: offers recorded (cheapest first, one per provider); all usable rows are counted
# an offer under this share of the providers' median price, below a 2x gap to the next provider and among
# at most a fifth of them, is set aside as a likely stale row (a stated choice: LiteLLM's table carries
# some, and one provider alone at a 15th of the rest is more likely one of them than a price to plan on)
OUTLIER_SHARE = 0.25
OFFERS_SHOWN = 3


@dataclass(frozen=True)
class ApiComparison:
    """One plan against the APIs. `match`: 'model' (offers for this model), 'size-class' (for models of
    its size, named in `models`) or 'none' (no API in the snapshot sells it or its size)."""

    match: str
    models: tuple[str, ...] = ()
    offers: tuple[dict, ...] = ()                 # cheapest first, one per provider, at most OFFERS_SHOWN
    offers_considered: int = 0
    api_usd_per_million_tokens: float | None = None
    plan_usd_per_million_tokens: float | None = None
    plan_usd_per_day: float | None = None
    tokens_per_s: float | None = None             # prompt + output tokens per second while busy
    busy_share: float | None = None
    load_tokens_per_day: float | None = None
    break_even_tokens_per_day: float | None = None
    break_even_utilisation: float | None = None
    load_share_of_break_even: float | None = None
    why: dict = field(default_factory=dict)
    # the offers' spread: one cheapest listing can be far below the rest (a promotion, a stale row)
    providers: int = 0                            # providers quoting it, each at its cheapest offer
    median_usd_per_million_tokens: float | None = None   # the median of those providers' cheapest prices
    set_aside: tuple[dict, ...] = ()              # providers whose cheapest is under OUTLIER_SHARE x the median
    # an offline batch job (a workload with a volume): the cheapest sourced batch API price for the model
    # or its size class and what the whole job costs there (`batch_job`); None for other workloads
    batch: dict | None = None

    def as_dict(self) -> dict:
        from advisor.numbers.terms import rounded
        return {"match": self.match, "models": list(self.models), "offers": [dict(o) for o in self.offers],
                "offers_considered": self.offers_considered,
                **{k: rounded(getattr(self, k)) for k in (
                    "api_usd_per_million_tokens", "plan_usd_per_million_tokens", "plan_usd_per_day", "tokens_per_s",
                    "busy_share", "load_tokens_per_day", "break_even_tokens_per_day", "break_even_utilisation",
                    "load_share_of_break_even", "median_usd_per_million_tokens")},
                "providers": self.providers, "set_aside": [dict(o) for o in self.set_aside],
                "batch": dict(self.batch) if self.batch is not None else None,
                "why": dict(self.why)}


def blended_usd_per_million(offer, prompt_tokens: int, output_tokens: int, cache_hit: float) -> float:
    """An API offer's price per million tokens (prompt + output) for requests of this shape."""
    cached = offer.usd_per_million_cached_input
    cached = offer.usd_per_million_input if cached is None else cached
    p, o = prompt_tokens, output_tokens
    return (p * (1 - cache_hit) * offer.usd_per_million_input + p * cache_hit * cached
            + o * offer.usd_per_million_output) / (p + o)


def _figures(model) -> tuple[float | None, float | None]:
    total = model.num("params_b")
    return total, model.num("active_params_b") or total


def _close(a, b) -> bool:
    return bool(a and b) and max(a, b) / min(a, b) <= SIZE_CLASS_FACTOR


def _charged(a) -> bool:
    """An offer that charges for tokens: a row of 0 for input and output is a free tier or a local
    runtime, no price to break even against (the importer leaves those out; a hand-written row of 0
    divided the day's cost by zero, issue 42)."""
    return a.usd_per_million_input > 0 or a.usd_per_million_output > 0


def offers_for(model, catalog) -> tuple[str, tuple[str, ...], list]:
    """(match, models, API rows): the model's own offers, else those of the catalog models of its size class."""
    rows = [a for a in catalog.api_prices if a.model == model.id and _charged(a)]
    if rows:
        return "model", (model.id,), rows
    return size_class_offers(model, catalog)


def size_class_offers(model, catalog) -> tuple[str, tuple[str, ...], list]:
    """(match, models, API rows) of the catalog models of the model's size class ('none' without any)."""
    total, active = _figures(model)
    near = tuple(m.id for m in catalog.models.values()
                 if m.id != model.id and _close(total, _figures(m)[0]) and _close(active, _figures(m)[1]))
    rows = [a for a in catalog.api_prices if a.model in near and _charged(a)]
    if rows:
        return "size-class", tuple(sorted({a.model for a in rows})), rows
    return "none", (), []


def _offer_dict(a, usd: float) -> dict:
    return {"provider": a.provider, "provider_model": a.provider_model, "model": a.model,
            "usd_per_million_input": a.usd_per_million_input, "usd_per_million_cached_input": a.usd_per_million_cached_input,
            "usd_per_million_output": a.usd_per_million_output, "usd_per_million_tokens": round(usd, 6),
            "date": a.date, "source": a.source}


def busy_share(plan, w) -> float:
    """The share of the day the plan serves: on premises the utilisation its owning cost assumes, rented
    the workload's utilisation (24x7 when none is given)."""
    if w.constraints.deployment in ON_PREM and plan.tco:
        u = ((plan.tco.get("inputs") or {}).get("utilisation") or {}).get("value")
        if u:
            return float(u)
    return float(w.utilisation or 1.0)


def compare_all(plans, w, catalog) -> dict:
    """gpu id -> the comparison of each plan (none for training): the API offers of the workload are
    looked up and priced once, each plan's own figures beside them."""
    if w.training or not w.kind_spec.tokens:     # per-token APIs price tokens only
        return {}
    base = _offers_priced(w, catalog)
    return {p.gpu.id: compare(p, w, catalog, base) for p in plans}


def _offers_priced(w, catalog) -> ApiComparison:
    """The workload's API offers priced for its request shape (the plan's figures left out)."""
    match, models, rows = offers_for(w.model, catalog)
    if not rows:
        return ApiComparison("none", batch=batch_offer(w, catalog) if w.volume else None)
    p, o, h = w.prompt_tokens, w.output_tokens, w.prefix_cache_hit
    priced = sorted(((blended_usd_per_million(a, p, o, h), a) for a in rows), key=lambda x: (x[0], x[1].provider, x[1].provider_model))
    # an offer free for this request shape (all of its prompt cached at a cached price of 0, no output
    # price) is no price either
    priced = [(usd, a) for usd, a in priced if usd > 0]
    if not priced:
        return ApiComparison("none")
    best: dict[str, tuple] = {}
    for usd, a in priced:
        best.setdefault(a.provider, (usd, a))
    each = sorted(usd for usd, _ in best.values())
    mid = len(each) // 2
    median = each[mid] if len(each) % 2 else (each[mid - 1] + each[mid]) / 2
    # a listing far under what every other provider asks is more likely a stale or mistyped row of the
    # price table than a price one can buy at (the reviewer's Llama 3.1 405B at $0.16 against a $2.40
    # median): with three providers or more, those under OUTLIER_SHARE of the median, below a gap of at
    # least 2x to the next provider's price and at most a fifth of the providers, are set aside, named;
    # providers that sell cheap together (small models: many list $0.02-0.06) stay in the comparison
    low = median * OUTLIER_SHARE if len(each) >= 3 else 0.0
    gaps = [i for i in range(len(each) - 1) if each[i] < low and each[i + 1] >= 2 * each[i]
            and i + 1 <= max(1, len(each) // 5)]
    floor = each[gaps[-1]] * (1 + 1e-9) if gaps else 0.0
    aside = tuple(_offer_dict(a, usd) for usd, a in best.values() if usd < floor)
    priced = [(usd, a) for usd, a in priced if usd >= floor]
    best = {k: v for k, v in best.items() if v[0] >= floor}
    shown = tuple(_offer_dict(a, usd) for usd, a in list(best.values())[:OFFERS_SHOWN])
    api = priced[0][0]
    a0 = priced[0][1]
    why = {"api_usd_per_million_tokens": (
        f"{a0.provider} {a0.provider_model}: ({p:,} prompt tokens x {1 - h:.0%} x ${a0.usd_per_million_input:g}"
        + (f" + {p:,} x {h:.0%} cached x ${a0.usd_per_million_cached_input if a0.usd_per_million_cached_input is not None else a0.usd_per_million_input:g}" if h else "")
        + f" + {o:,} output tokens x ${a0.usd_per_million_output:g}) / {p + o:,} tokens, per million ({a0.date}, {a0.source})")}
    return ApiComparison(match, models, shown, len(rows), api, why=why, providers=len(each), median_usd_per_million_tokens=median,
                         set_aside=aside, batch=batch_offer(w, catalog) if w.volume else None)


def compare(plan, w, catalog, base: ApiComparison | None = None) -> ApiComparison | None:
    """The comparison for a serving plan (None for training). Without a price or a speed the plan's own
    figures are left out, the offers are still given. `base`: the workload's offers, priced already."""
    if w.training or not w.kind_spec.tokens:
        return None
    base = base or _offers_priced(w, catalog)
    if base.match == "none" or plan is None or not plan.fits or not plan.usd_per_hour or not plan.tokens_per_s:
        return base
    match, models, shown, n, api, why = base.match, base.models, base.offers, base.offers_considered, base.api_usd_per_million_tokens, base.why
    p, o = w.prompt_tokens, w.output_tokens
    owned = w.constraints.deployment in ON_PREM
    u = busy_share(plan, w)
    tps = plan.tokens_per_s * (p + o) / o
    paid_hours = 24 if owned else 24 * u
    per_day = plan.usd_per_hour * paid_hours
    load = tps * 3600 * 24 * u
    plan_usd = per_day / load * 1e6
    be = per_day / api * 1e6
    why = dict(why)
    why["plan_usd_per_million_tokens"] = (
        f"${plan.usd_per_hour:,.2f}/h x {paid_hours:g} h a day ({'owned: runs around the clock' if owned else 'rented for its busy hours'})"
        f" / {load:,.0f} tokens a day ({plan.tokens_per_s:,.0f} output tokens/s x {p + o:,}/{o:,} prompt+output per output token"
        f" x 86,400 s x {u:.0%} busy), per million")
    why["break_even_tokens_per_day"] = (f"${per_day:,.2f} a day / ${api:.4g} per million tokens = {be / 1e6:,.1f} million tokens a day "
                                        f"({be / (tps * 86400):.0%} of the plan's {tps * 86400 / 1e6:,.0f} million-token day)")
    return ApiComparison(match, models, shown, n, api, plan_usd, per_day, tps, u, load, be, be / (tps * 86400),
                         load / be, why, base.providers, base.median_usd_per_million_tokens, base.set_aside,
                         _batch_against(base.batch, plan, api))


def record(plan, w, catalog) -> dict | None:
    """The decision record's `api_comparison` for the recommended plan (None when training)."""
    a = compare(plan, w, catalog)
    if a is None:
        return None
    return {**a.as_dict(), "gpu": plan.gpu.id if plan is not None else None,
            "prompt_tokens": w.prompt_tokens, "output_tokens": w.output_tokens, "prefix_cache_hit": w.prefix_cache_hit,
            "deployment": w.constraints.deployment}


def batch_offer(w, catalog) -> dict:
    """An offline batch job against the providers' batch APIs: the cheapest row with a sourced batch price
    (catalog/api-prices.yaml usd_per_million_*_batch, LiteLLM's *_cost_per_token_batches: Bedrock batch
    inference, Vertex AI batch prediction at half their per-token price) for the model, else for its size
    class, priced for the job's prompt:output shape, and the whole job's cost there (`usd_per_job`: that
    price x the volume's input + output tokens). `match` 'none' when no provider lists a batch price for
    either: no batch price is derived from a discount the table does not state."""
    from advisor.numbers.batchjob import total_tokens
    match, models, rows = offers_for(w.model, catalog)
    rows = [a for a in rows if a.usd_per_million_input_batch is not None]
    if not rows and match == "model":
        match, models, rows = size_class_offers(w.model, catalog)
        rows = [a for a in rows if a.usd_per_million_input_batch is not None]
    tokens = total_tokens(w)
    if not rows:
        return {"match": "none", "models": [], "offers_considered": 0, "job_tokens": tokens}
    p, o = w.prompt_tokens, w.output_tokens
    priced = [((p * a.usd_per_million_input_batch + o * a.usd_per_million_output_batch) / (p + o), a) for a in rows]
    usd, a = min(priced, key=lambda x: (x[0], x[1].provider, x[1].provider_model))
    return {"match": match, "job_tokens": tokens, "models": sorted({r.model for r in rows}), "offers_considered": len(rows),
            "provider": a.provider, "provider_model": a.provider_model, "model": a.model,
            "usd_per_million_input_batch": a.usd_per_million_input_batch,
            "usd_per_million_output_batch": a.usd_per_million_output_batch,
            "usd_per_million_tokens": round(usd, 6), "usd_per_job": round(usd * tokens / 1e6, 4),
            "date": a.date, "source": a.source,
            "formula": (f"({p:,} prompt tokens x ${a.usd_per_million_input_batch:g} + {o:,} output tokens x "
                        f"${a.usd_per_million_output_batch:g}) / {p + o:,} per million, x {tokens / 1e6:,.1f} million "
                        f"tokens of the job ({a.provider} {a.provider_model}, batch price, {a.date})")}


def _batch_against(batch: dict | None, plan, api: float | None) -> dict | None:
    """The batch offer with the plan's own job cost beside it (the plan's $ per job over the batch API's)
    and the whole job at the cheapest per-token (not batch) price, `api`."""
    if batch is None or plan.usd_per_job is None:
        return batch
    out = {**batch, "plan_usd_per_job": round(plan.usd_per_job, 4),
           "api_usd_per_job": round(api * batch["job_tokens"] / 1e6, 4) if api else None}
    if batch.get("usd_per_job"):
        out["plan_share_of_api"] = round(plan.usd_per_job / batch["usd_per_job"], 4)
    return out
