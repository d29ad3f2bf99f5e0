"""The memo view's ground: the look-ups every section makes in one decision record (`_Record`) and the
wording of single values (costs, layouts, money differences, dates) that several sections share."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from advisor.base.errors import InputError, Problem
from advisor.inputs.catalog import Catalog
from advisor.numbers.objective import UNIT_LABELS
from advisor.numbers.owning import beyond_write_off
from advisor.shell import memokind
from advisor.shell.wording import Cites as _Cites, offer as _offer, plain as _plain, plan as _plan, usd as _usd, job_usd as _job_usd, small_usd as _small_usd
from advisor.inputs.parallel import describe, from_record




SEVERITY = {"high": 0, "medium": 1, "low": 2, "info": 3}


OBJECTIVES = {"cost": "Chosen for the lowest cost {unit}, after rule premiums.",
              "time": "Chosen for the shortest time, among the priced options.",
              "cards": "Chosen for the fewest cards, among the priced options."}


@dataclass
class _Record:
    """The look-ups every section makes in one decision record (built once per view)."""

    rec: dict
    catalog: Catalog
    cites: _Cites
    est: dict
    inputs: dict
    mode: str
    cands: dict            # gpu id -> the estimate's candidate (fit, counts, costs, speeds)
    decided: dict          # gpu id -> the decision's candidate (score, contributions, rank)
    rule_titles: dict
    r: dict | None         # the recommendation
    d: dict | None         # the decisive rule

    @classmethod
    def of(cls, rec: dict, catalog: Catalog) -> "_Record":
        est, inputs = rec["estimate"], rec["inputs"]
        return cls(rec, catalog, _Cites(catalog), est, inputs, inputs["mode"],
                   {c["gpu"]: c for c in est["candidates"]}, {c["gpu"]: c for c in rec["candidates"]},
                   {t["rule"]: t.get("title", t["rule"]) for t in rec["trace"]},
                   rec.get("recommendation"), rec.get("decisive_rule"))


def generation_date() -> str:
    """Today's date, or SOURCE_DATE_EPOCH's for reproducible builds and snapshots."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        try:
            return time.strftime("%Y-%m-%d", time.gmtime(int(epoch)))
        except (OverflowError, OSError, ValueError):
            raise InputError(Problem(f"SOURCE_DATE_EPOCH={epoch[:20]}{'...' if len(epoch) > 20 else ''} is not a date "
                                     "(seconds since 1970 up to the year 9999)")) from None
    return time.strftime("%Y-%m-%d", time.localtime())


def _num(x, nd=1) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def _layout(c: dict, gpus_per_node: int) -> str:
    """The layout in words (advisor.inputs.parallel.describe: each dimension's declared meaning, its
    notation and name on first use, where its cards sit)."""
    lay = from_record(c)
    return f"{_plan(c)}: " + describe(lay, gpus_per_node, _training(c), c.get("virtual_stages") or 1)


def _layout_short(c: dict) -> str:
    return describe(from_record(c), training=_training(c), short=True)


def _training(c: dict) -> bool:
    """A training plan's record (its EP ranks drawn from TP x DP: the memo counts the model's copies); an
    offline batch job's (priced per job too) is a serving plan: it has a cost per million tokens."""
    serving = c.get("usd_per_million_io_tokens") is not None or c.get("usd_per_million_tokens") is not None
    return c.get("training_hours") is not None or c.get("unit") == "million_training_tokens" or (c.get("unit") == "job" and not serving)


def _job_cost(c: dict) -> str:
    """An offline batch job's cost (a plan with `job_hours`): the whole job, its hours and per million
    input + output tokens."""
    return (f"{_job_usd(c['usd_per_job'])} per job ({_num(c['job_hours'])} h), "
            f"{_small_usd(c['usd_per_million_io_tokens'])} per million input + output tokens")


def _unit_cost(mode: str, c: dict) -> str:
    own = memokind.unit_cost(c)        # a kind counted in images or clips
    if own is not None:
        return own
    if c.get("job_hours") is not None and c.get("usd_per_job") is not None and c.get("usd_per_million_io_tokens") is not None:
        return _job_cost(c)
    if mode == "inference" and c.get("usd_per_million_tokens") is not None:
        return f"{_usd(c['usd_per_million_tokens'])} per million output tokens"
    if mode != "inference" and c.get("usd_per_job") is not None:
        return f"{_job_usd(c['usd_per_job'])} per job"
    if mode != "inference" and c.get("usd_per_million_tokens") is not None:      # no token budget: no job to price
        v = c["usd_per_million_tokens"]
        return f"{_small_usd(v)} per million training tokens"
    return ""


def _cost_sentence(mode: str, c: dict, cites: _Cites | None = None) -> str:
    if c.get("usd_per_hour") is None:
        why = c.get("price_unknown") or "no quote"
        return f"price unknown ({cites.prose(why) if cites else _plain(why)})"
    s = f"{_usd(c['usd_per_hour'])} per hour ({_offer(c['price'])})"
    unit = _unit_cost(mode, c)
    return s + (f", {unit}" if unit else "")


def _money_diff(x, base) -> str:
    if x is None or base is None:
        return ""                       # nothing to compare: the prices are shown beside it
    d = x - base
    if abs(d) < 0.005 and abs(d) <= 0.001 * max(abs(base), abs(x)):
        return "same cost"
    # a small unit cost (per million training tokens) keeps three significant figures, not two decimals
    return f"{'+' if d > 0 else '-'}{_small_usd(abs(d))}"


def _objective(r: dict) -> str:
    o = str(r.get("objective") or "")
    if not o:
        return ""
    unit = UNIT_LABELS.get(r.get("unit") or "", "")
    if o in OBJECTIVES:
        return OBJECTIVES[o].format(unit=unit).replace("cost ,", "cost,")
    return f"Chosen for the lowest {o.replace('_', ' ')}."


def _unpriced_line(unpriced: list[dict]) -> str:
    """One sentence for the summary: the unpriced GPUs likeliest to win (highest break-even) and their prices."""
    top = sorted(unpriced, key=lambda u: -(u.get("break_even_usd_per_gpu_hour") or 0))[:3]
    if not top:
        return ""
    names = [f"{u.get('count', '?')} x {u.get('gpu')}" for u in top]
    prices = [_usd(u["break_even_usd_per_gpu_hour"]) for u in top if u.get("break_even_usd_per_gpu_hour") is not None]
    more = len(unpriced) - len(top)
    who = (", ".join(names[:-1]) + " and " + names[-1]) if len(names) > 1 else names[0]
    if more > 0:
        who += f" (and {more} more)"
    if len(unpriced) == 1:
        return f"{who} has no known price" + (f"; it would be the better buy at under {prices[0]} per GPU-hour." if prices else ".")
    parts = []
    for k, u in enumerate(top):
        be = u.get("break_even_usd_per_gpu_hour")
        parts.append(names[k] + ("" if be is None else f" (would win under {_usd(be)} per GPU-hour)" if not parts else f" ({_usd(be)})"))
    listed = (", ".join(parts[:-1]) + (" and " if more <= 0 else ", ") + parts[-1]) + (f" and {more} more" if more > 0 else "")
    return f"no known price for {listed}."


def _premium(x) -> str:
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not x:
        return ""
    return f"{x:+.0%} rule premium"


def _id_order(kid: str) -> tuple:
    return ("KTCAW".index(kid[0]) if kid[0] in "KTCAW" else 9, kid)


def _tco(t: dict) -> str:
    parts = []
    if t.get("capex_usd") is not None:
        parts.append(f"buying costs {_usd(t['capex_usd'], 0)} up front")
    if t.get("opex_usd_per_month") is not None:
        parts.append(f"{_usd(t['opex_usd_per_month'], 0)} per month to run")
    if t.get("rent_usd_per_month") is not None:
        alt = t.get("rent_plan") or {}
        # a GPU rented nowhere is compared with another GPU's rental: which one, said (review 12)
        instead = f" ({alt['count']} x {alt['gpu']}: {alt['reason']})" if alt.get("gpu") and alt.get("reason") else ""
        parts.append(f"renting {_usd(t['rent_usd_per_month'], 0)} per month{instead}")
    be = t.get("break_even_months")
    if be is not None:
        parts.append(f"buying pays off after {be:,.0f} months{beyond_write_off(t)}" if be > 0 else "buying never pays off")
    elif (t.get("opex_usd_per_month") or 0) >= (t.get("rent_usd_per_month") or float("inf")):
        parts.append("buying never pays off: running the bought hardware costs more a month than renting it")
    return "; ".join(parts) or "no figures"


def _effect(e: dict) -> str:
    k = e["kind"]
    if k in ("prefer", "avoid"):
        return f"{k} {e['weight']:g}"
    if k == "exclude":
        return "exclude"
    if k == "derive":
        return "derive " + ", ".join(f"{a}={b}" for a, b in e.items() if a != "kind")
    return f"{k} ({e.get('severity', '')})"
