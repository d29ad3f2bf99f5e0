"""The alternatives a decision set aside, in the record's terms: each candidate's cost in the ranking's
unit and per unit of work, its speed, cards and layout, and why it lost in plain words. The record's
`alternatives` and the memo's tables are both built from these functions, so they cannot disagree.
"""
from __future__ import annotations

from advisor.judgement.ranking import PREMIUM_PER_WEIGHT, factor
from advisor.numbers.terms import rounded
from advisor.inputs.parallel import LAYOUT_FIELDS
from advisor.numbers.objective import UNIT_FIELD, UNIT_LABELS

#: the estimate's cost field for each ranking unit (per hour of interactive serving, per million tokens
#: of batch serving or of training without a token budget, per job)
RANKING_FIELD = {"hour": "usd_per_hour", "million_tokens": "usd_per_million_tokens", "job": "usd_per_job",
                 "million_training_tokens": "usd_per_million_tokens",
                 "thousand_images": "usd_per_thousand_images", "clip": "usd_per_clip"}
#: the units of kinds counted in their own work (images, clips): numbers.objective UNIT_FIELD
KIND_UNITS = ("thousand_images", "clip")


def ranking_field(unit: str | None) -> str:
    return RANKING_FIELD.get(unit or "hour", "usd_per_hour")


def work_field(training: bool, unit: str | None) -> tuple[str, str]:
    """The cost per unit of work beside the ranking's (field, label): per million output tokens for
    serving, per job for training (per million training tokens when no token budget makes a job)."""
    if unit in KIND_UNITS:        # a kind counted in its own units (images, clips): the ranking's cost is the work's
        return UNIT_FIELD[unit], UNIT_LABELS[unit]
    if not training:
        return "usd_per_million_tokens", "per million output tokens"
    if unit == "million_training_tokens":
        return "usd_per_million_tokens", "per million training tokens"
    return "usd_per_job", "per job"


def ratio(unit: str | None, c: dict, base: dict | None) -> float | None:
    """The alternative's cost over the winner's, in the ranking's unit (None when either is unpriced)."""
    field = ranking_field(unit)
    a, b = c.get(field), (base or {}).get(field)
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None


def titles_line(ts: list[str]) -> str:
    """The first two rule titles and how many more: a summary line names its reasons (an unnamed "and 1
    more" said nothing, review 11), the tables list them all."""
    return "; ".join(ts[:2]) + (f"; and {len(ts) - 2} more" if len(ts) > 2 else "") if ts else ""


def plain_reason(dc: dict, reasons: list[str], titles: dict, ratio_: float | None, win: dict | None,
                 short: bool = False) -> str:
    """Why an alternative lost, in plain words: its cost against the winner's, then the rules' premiums
    said as what they are worth ("worth paying up to X% more for ..."). The short form (the summary's one
    line) names the first rule only, and none when the price alone already decides. `dc` and `win` are
    record candidates; `reasons` what to say of an excluded one (or when nothing else applies)."""
    if dc["excluded"]:
        return "; ".join(reasons)
    join = titles_line if short else "; ".join
    parts = []
    if ratio_ is not None:
        parts.append(f"it costs {ratio_ - 1:.0%} more" if ratio_ > 1.005 else f"it costs {1 - ratio_:.0%} less"
                     if ratio_ < 0.995 else "it costs the same")
    elif win is not None:
        parts.append("no known price to rank it by")       # ranked after every priced plan, whatever its rules
    p, wp = dc.get("premium") or 0, (win or {}).get("premium") or 0
    # only the rules that separate the two: one both plans have at the same weight decides nothing (review
    # 13: "10% dearer (Serving on several GPUs ...)" where the winner carried the same -10)
    mine, theirs = _weights(dc["contributions"]), _weights((win or {}).get("contributions", []))
    against = [titles.get(r, r) for r, x in mine.items() if x < 0 and x < theirs.get(r, 0)]
    favour_win = [titles.get(r, r) for r, x in theirs.items() if x > 0 and x > mine.get(r, 0)]
    in_favour = factor(p) / factor(wp) - 1
    by = dc.get("dominated_by")
    if by and in_favour > 0.005:
        # a plan beats it on cost and time with no more against it: what favours it are rules of thumb
        # about cost and speed (prefer proxy: true), which the figures answer (ranking.dominates)
        who = "the winner" if win and by == win.get("gpu") else by
        same = dc.get("dominated_as_fast")
        parts = [(parts[0] if parts else "it costs no less") + ((" at the same speed" if same else " and is slower")
                                                                if who == "the winner" else ""),
                 f"the rules of thumb in its favour stand for cost and speed, and {who} is "
                 + ("as fast and cheaper" if same else "cheaper and faster")]
    elif in_favour > 0.005:
        # the rules favour it over the winner (2 x H100 at -10% beside 4 x RTX 5090 at -50%): the price
        # decided, as the decisive rule's sentence says, and the rules do not count it dearer still
        if ratio_ and ratio_ > 1:
            parts.append(f"the rules in its favour are worth {in_favour:.0%}, less than that")
    else:
        # its own penalties beyond the winner's, then what the rules in the winner's favour are worth beyond
        # its own (each side's penalties and preferences apart: a rule both have at one weight cancels)
        pen = {k: sum(x for x in v.values() if x < 0) * PREMIUM_PER_WEIGHT for k, v in (("mine", mine), ("theirs", theirs))}
        pref = {k: sum(x for x in v.values() if x > 0) * PREMIUM_PER_WEIGHT for k, v in (("mine", mine), ("theirs", theirs))}
        dearer = factor(pen["theirs"]) / factor(pen["mine"]) - 1 if pen["mine"] < pen["theirs"] else 0
        if dearer > 0.005 and ratio_ and ratio_ > 1:
            parts.append(f"the rules count it {dearer:.0%} dearer still" + ("" if short else f" ({join(against)})"))
        elif dearer > 0.005:
            parts.append(f"{'but ' if ratio_ is not None else ''}the rules count it {dearer:.0%} dearer ({join(against)})")
        more = pref["theirs"] - pref["mine"]
        if more > 0.005 and favour_win and not (short and ratio_ and ratio_ > 1):
            parts.append(f"worth paying up to {more:.0%} more for the winner ({join(favour_win)})")
    if not parts:
        return reasons[0] if reasons else "ranked lower"
    return ", ".join(parts)


def _speed(c: dict, training: bool) -> dict:
    return {"tokens_per_s_per_user": None if training else rounded(c.get("tokens_per_s_per_user")),
            "ttft_ms": None if training else rounded(c.get("ttft_ms"))}


def _weights(contributions: list) -> dict[str, float]:
    """Per rule, the weight it gave a candidate (a rule firing twice adds)."""
    out: dict[str, float] = {}
    for k in contributions:
        out[k["rule"]] = out.get(k["rule"], 0) + k["weight"]
    return out


def record(rec: dict, training: bool, spec=None) -> list[dict]:
    """The record's `alternatives`: every candidate but the winner, in rank order (excluded last), with
    both costs, speed, cards, layout and the plain-words reason. Built from the record's own candidates,
    estimate and trace, the figures the memo shows."""
    r = rec.get("recommendation")
    est = {c["gpu"]: c for c in rec["estimate"]["candidates"]}
    titles = {t["rule"]: t.get("title", t["rule"]) for t in rec["trace"]}
    decided = {c["gpu"]: c for c in rec["candidates"]}
    unit = (r or {}).get("unit")
    work, work_label = work_field(training, unit)
    base, win = (est[r["gpu"]], decided[r["gpu"]]) if r else (None, None)
    out = []
    for dc in rec["candidates"]:
        g = dc["gpu"]
        if r and g == r["gpu"]:
            continue
        c = est[g]
        excluded = [f"excluded by {titles.get(e['rule'], e['rule'])}" for e in dc["excluded_by"]]
        fallback = excluded or ([] if c["fits"] else [c.get("reason") or "does not fit"])
        layout = ({k: c[k] for k in LAYOUT_FIELDS if c.get(k) is not None} if c["fits"] else None)
        if c["fits"] and isinstance(c.get("layout"), dict) and "prefill" in c["layout"]:
            layout = c["layout"]          # a disaggregated plan: its two pools

        out.append({"gpu": g, "rank": dc["rank"], "excluded": dc["excluded"], "fits": c["fits"],
                    "count": c["count"] if c["fits"] else None, "nodes": c.get("nodes") if c["fits"] else None,
                    "layout": layout,
                    "usd_per_hour": rounded(c.get("usd_per_hour")),
                    "ranking_cost": {"unit": unit, "usd": rounded(c.get(ranking_field(unit)))} if r else None,
                    "work_cost": {"unit": work_label, "usd": rounded(c.get(work))},
                    "cost_range": dc.get("cost_range"),
                    **(_speed(c, training) if spec is None or spec.tokens else {spec.time_field: rounded(c.get(spec.time_field))}),
                    "training_hours": rounded(c.get("training_hours")) if training else None,
                    "premium": dc["premium"],
                    "reason": plain_reason(dc, fallback, titles, ratio(unit, c, base), win)
                    if c["fits"] or dc["excluded"] else fallback[0]})
    return out
