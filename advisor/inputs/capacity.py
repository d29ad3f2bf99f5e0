"""capacity.yaml: how many instances of an offer can be had on demand (a sourced default, a provider's
own figure where one is known), the contracted $/GPU-hour of a cluster beyond that, and the spot
figures (interruptions per month, restart time, checkpoint bandwidth) the spot term prices. Checked
for the shape numbers/cost.py and numbers/spot.py read: every figure a number with a source and a date.
"""
from __future__ import annotations

from pathlib import Path

from advisor.base import yamlio
from advisor.base.errors import Collector
from advisor.inputs.figures import is_number

CAPACITY_FILE = "capacity.yaml"


def _figure(col: Collector, fig, line, field: str, share: bool = False) -> dict | None:
    """{v, src, date[, range]}: a positive number (a share: at most 1) with its source and date."""
    v = fig.get("v") if isinstance(fig, dict) else None
    if not is_number(v) or v <= 0 or (share and v > 1):
        col.add("must be {v: " + ("SHARE from 0 to 1" if share else "a positive number") + ", src: ..., date: ...}", line, field)
        return None
    if not fig.get("src") or not fig.get("date"):
        col.add("needs its src and date", line, field)
        return None
    rng = fig.get("range")
    if rng is not None and not (isinstance(rng, list) and len(rng) == 2 and all(is_number(x) for x in rng) and rng[0] <= v <= rng[1]):
        col.add("range must be [low, high] around v", line, field)
        return None
    return {"v": float(v), "range": [float(x) for x in rng] if rng else None, "src": str(fig["src"]), "date": str(fig["date"])}


def load_capacity(path: Path, gpus: dict) -> dict:
    """{on_demand: {default_instances: figure, providers: {name: {instances, src, date}}},
    contract: {gpu id: {usd_per_gpu_hour, term_months, provider, src, date, range}}, reserved: {gpu id: [tier]},
    spot: {interruption_share_per_month: {gpu id | default: figure}, restart_minutes: figure,
    checkpoint_gb_s_per_gpu: figure}}; one problem per bad field, with its line."""
    col = Collector(str(path))
    data = yamlio.load(path)
    if not isinstance(data, dict):
        col.add("expected a mapping with on_demand, contract and spot", getattr(data, "line", 1))
        col.raise_if_any()
    out: dict = {"on_demand": {"providers": {}}, "contract": {}, "spot": {"interruption_share_per_month": {}}}
    od = data.get("on_demand") or {}
    line = yamlio.line_of(data, "on_demand", 1)
    fig = _figure(col, od.get("default_instances"), yamlio.line_of(od, "default_instances", line), "on_demand.default_instances")
    if fig is not None:
        if fig["v"] != int(fig["v"]):
            col.add("must be a whole number of instances", yamlio.line_of(od, "default_instances", line), "on_demand.default_instances")
        out["on_demand"]["default_instances"] = fig
    provs = od.get("providers") or {}
    for name, e in provs.items():
        at = yamlio.line_of(provs, name, line)
        n = e.get("instances") if isinstance(e, dict) else None
        if not isinstance(n, int) or isinstance(n, bool) or n < 1 or not e.get("src") or not e.get("date"):
            col.add("expected {instances: WHOLE NUMBER >= 1, src: ..., date: ...}", at, f"on_demand.providers.{name}")
            continue
        out["on_demand"]["providers"][str(name)] = {"instances": n, "src": str(e["src"]), "date": str(e["date"])}
    rows = data.get("contract") or []
    if not isinstance(rows, list):
        col.add("must be a list of rates", yamlio.line_of(data, "contract", 1), "contract")
        rows = []
    for i, e in enumerate(rows):
        at = yamlio.line_of(rows, i, 1)
        if not isinstance(e, dict) or e.get("gpu") not in gpus:
            col.add(f"needs a known gpu id (got {e.get('gpu') if isinstance(e, dict) else e!r})", at, "contract.gpu")
            continue
        fig = _figure(col, {"v": e.get("usd_per_gpu_hour"), "src": e.get("src"), "date": e.get("date"), "range": e.get("range")},
                      at, f"contract.{e['gpu']}.usd_per_gpu_hour")
        term = e.get("term_months")
        if fig is None:
            continue
        if not isinstance(term, int) or isinstance(term, bool) or term < 1 or not e.get("provider"):
            col.add("needs term_months (a whole number >= 1) and provider", at, f"contract.{e['gpu']}")
            continue
        out["contract"][e["gpu"]] = {"usd_per_gpu_hour": fig["v"], "range": fig["range"], "term_months": term,
                                     "provider": str(e["provider"]), "src": fig["src"], "date": fig["date"]}
    out["expired"] = {}
    out["reserved"] = _reserved(col, data, gpus, out["expired"])
    out["as_of"] = str(data["as_of"]) if data.get("as_of") is not None else None
    spot = data.get("spot") or {}
    sline = yamlio.line_of(data, "spot", 1)
    shares = spot.get("interruption_share_per_month") or {}
    for gid, f in shares.items():
        at = yamlio.line_of(shares, gid, sline)
        if gid != "default" and gid not in gpus:
            col.add(f"unknown GPU id '{gid}'", at, "spot.interruption_share_per_month")
            continue
        fig = _figure(col, f, at, f"spot.interruption_share_per_month.{gid}", share=True)
        if fig is not None:
            out["spot"]["interruption_share_per_month"][gid] = fig
    if "default" not in shares:
        col.add("needs a default share for GPUs without their own", yamlio.line_of(spot, "interruption_share_per_month", sline),
                "spot.interruption_share_per_month")
    hyper = spot.get("hyperscaler_providers")
    if hyper is not None:
        names = hyper.get("v") if isinstance(hyper, dict) else None
        if not (isinstance(names, list) and names and all(isinstance(x, str) and x for x in names)) \
                or not hyper.get("src") or not hyper.get("date"):
            col.add("must be {v: [provider names], src: ..., date: ...}", yamlio.line_of(spot, "hyperscaler_providers", sline),
                    "spot.hyperscaler_providers")
        else:
            out["spot"]["hyperscaler_providers"] = {"v": [str(x) for x in names], "src": str(hyper["src"]), "date": str(hyper["date"])}
    # (the offer kinds, issue 45 item 6, are optional: without them every spot offer takes the shares above)
    optional = ("marketplace_interruptions_per_instance_day",)
    for k in ("restart_minutes", "checkpoint_gb_s_per_gpu") + tuple(k for k in optional if k in spot):
        fig = _figure(col, spot.get(k), yamlio.line_of(spot, k, sline), f"spot.{k}")
        if fig is not None:
            out["spot"][k] = fig
    col.raise_if_any()
    return out


def _reserved(col: Collector, data: dict, gpus: dict, expired: dict) -> dict:
    """{gpu id: [tier]}: capacity booked ahead at a published rate, each with its instance, rate, the
    most instances sold at once and the lengths on sale (days); a tier whose `valid_until` is on or
    before the file's `as_of` goes into `expired` instead."""
    rows = data.get("reserved") or []
    out: dict = {}
    as_of = str(data["as_of"]) if data.get("as_of") is not None else None
    if as_of is not None and not _is_day(as_of):
        col.add("as_of must be a date YYYY-MM-DD", yamlio.line_of(data, "as_of", 1), "as_of")
        as_of = None
    if not isinstance(rows, list):
        col.add("must be a list of reserved tiers", yamlio.line_of(data, "reserved", 1), "reserved")
        return out
    for i, e in enumerate(rows):
        at = yamlio.line_of(rows, i, 1)
        if not isinstance(e, dict) or e.get("gpu") not in gpus:
            col.add(f"needs a known gpu id (got {e.get('gpu') if isinstance(e, dict) else e!r})", at, "reserved.gpu")
            continue
        fig = _figure(col, {"v": e.get("usd_per_instance_hour"), "src": e.get("src"), "date": e.get("date")},
                      at, f"reserved.{e['gpu']}.usd_per_instance_hour")
        days = e.get("term_days") if isinstance(e.get("term_days"), dict) else {}
        whole = lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1  # noqa: E731
        if fig is None:
            continue
        if not (e.get("provider") and whole(e.get("gpus_per_instance")) and whole(e.get("max_instances"))
                and all(whole(days.get(k)) for k in ("min", "max", "daily_up_to", "step_beyond"))
                and days["min"] <= days["max"]):
            col.add("needs provider, gpus_per_instance and max_instances (whole numbers >= 1) and "
                    "term_days {min, max, daily_up_to, step_beyond} (whole days, min <= max)", at, f"reserved.{e['gpu']}")
            continue
        tier = {"provider": str(e["provider"]), "instance": str(e.get("instance") or ""), "gpus_per_instance": e["gpus_per_instance"],
                "usd_per_instance_hour": fig["v"], "max_instances": e["max_instances"], "term_days": dict(days),
                "src": fig["src"], "date": fig["date"]}
        until = e.get("valid_until")
        if until is not None:
            until = str(until)
            if not _is_day(until):
                col.add("valid_until must be a date YYYY-MM-DD", at, f"reserved.{e['gpu']}.valid_until")
                continue
            tier["valid_until"] = until
        # a rate past its own stated validity is not a current price (review 10, F8): kept aside under
        # `expired`, never priced; "current" is the file's as_of date (a fixed date: answers stay reproducible)
        (expired if until and as_of and until <= as_of else out).setdefault(e["gpu"], []).append(tier)
    return out


def _is_day(text: str) -> bool:
    import datetime
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def reserved_tiers(capacity: dict, gpu_id: str) -> list[dict]:
    """The sourced reserved tiers of this GPU (none: no reservation is published for it)."""
    return ((capacity or {}).get("reserved") or {}).get(gpu_id, [])


def on_demand_instances(capacity: dict, provider: str) -> tuple[int | None, str | None]:
    """How many instances of one on-demand or spot listing can be had at once, and the source of the
    figure: the provider's own where capacity.yaml has one, else the sourced default (None: no file)."""
    od = (capacity or {}).get("on_demand") or {}
    own = od.get("providers", {}).get(provider)
    if own:
        return own["instances"], f"{own['src']} ({own['date']})"
    d = od.get("default_instances")
    if not d:
        return None, None
    return int(d["v"]), f"default for a listing without a capacity figure: {d['src']} ({d['date']})"


def contract_rate(capacity: dict, gpu_id: str) -> dict | None:
    """The sourced contracted $/GPU-hour of a cluster of this GPU (None: unknown)."""
    return ((capacity or {}).get("contract") or {}).get(gpu_id)
