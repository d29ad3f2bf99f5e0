"""The memo's one-screen summary: what to use, what it costs, the reasons in the forward direction, the
risks, the alternatives beside it, how close the call is (the stability band), drawn from the other sections."""
from __future__ import annotations

import re


from advisor.judgement.alternatives import ranking_field, titles_line as _titles
from advisor.numbers.objective import UNIT_LABELS, times
from advisor.shell import memokind
from advisor.shell.wording import (asked_rate, rate_beside, job_usd as _job_usd, money as _money, small_usd as _small_usd, duration as _duration, duration_short, machines as _machines, gist as _gist, offer as _offer, suggestion as _suggestion, usd as _usd,
                                   api_line as _api_line, month_shown)
from advisor.shell.memorecord import (_Record, _num, _layout_short, _unit_cost, _cost_sentence,
                                      _objective, _unpriced_line, _tco)


def _cheaper_per_token(x: _Record, alts: list[dict], short: bool = False) -> str:
    """Why the winner still wins when the table shows a dearer-per-hour alternative that is cheaper per
    million tokens under per-hour ranking: both hold the users within the service level, and the faster
    card's extra tokens are speed the users do not need, not extra users served."""
    r = x.r
    if not r or x.mode != "inference" or (r.get("unit") or "hour") != "hour":
        return ""
    w = x.cands[r["gpu"]]
    sl = (x.rec.get("service_level") or {}).get("tpot_ms")
    wm, wh, ws = w.get("usd_per_million_tokens"), w.get("usd_per_hour"), w.get("tokens_per_s_per_user")
    if None in (wm, wh, ws) or not sl or ws < 1000 / sl:
        return ""                       # a winner outside the service level is a risk, said by the rules
    cheaper = [a["gpu"] for a in alts if (x.cands[a["gpu"]].get("usd_per_million_tokens") or wm) < wm
               and (x.cands[a["gpu"]].get("usd_per_hour") or 0) > wh]
    if not cheaper:
        return ""
    who = " and ".join(cheaper[:2]) + (f" and {len(cheaper) - 2} more" if len(cheaper) > 2 else "")
    if short:
        return f"{who} {'is' if len(cheaper) == 1 else 'are'} cheaper per token only by being faster than the users need"
    return (f"{who} {'costs' if len(cheaper) == 1 else 'cost'} less per million tokens than {r['gpu']} only because "
            f"{'it is' if len(cheaper) == 1 else 'they are'} faster: both hold the users within the service level "
            f"({1000 / sl:,.0f} tokens/s each), so the faster card serves the same users, and its extra speed is not extra "
            f"work; per hour, which is what serving them costs, {r['gpu']} is cheaper ({_usd(wh)})")


def _short_reason(text: str, limit: int = 160) -> str:
    """An exclusion's reason for the summary: whole when short, else without its parenthesised detail."""
    text = text.strip().rstrip(".")
    return text if len(text) <= limit else _gist(text.split(" (")[0], limit).rstrip(".")


def _excluded_line(title: str, gpus: list[str], reason: str | None) -> str:
    """A rule and the GPUs it excluded, with a lone GPU's own reason (its name once)."""
    if reason and reason.startswith(gpus[0]):
        return f"{title}: {_short_reason(reason)}."
    named = ", ".join(gpus[:4]) + (f" and {len(gpus) - 4} more" if len(gpus) > 4 else "")
    return f"{title}: {named}" + (f": {_short_reason(reason)}" if reason else "") + "."


def _summary(x: _Record, v: dict) -> dict:
    """The one-screen summary, drawn from the sections: what to use, its cost, the reasons, the two best
    alternatives, the top risks, unpriced GPUs and the planner's suggestions."""
    r, d, cites = x.r, x.d, x.cites
    summary: dict = {"cost": [], "reasons": [], "risks": [], "alternatives": [], "suggestions": [], "unpriced": [],
                     "objective": "", "api": None, "fleet": None}
    if r:
        c = x.cands[r["gpu"]]
        summary["cost"] = _summary_cost(x, c)
        summary["objective"] = _objective(r)
        summary["api"] = memokind.api_line(x.rec.get("api_comparison")) or _api_line(x.rec.get("api_comparison"))
        summary["fleet"] = _fleet_line(x)
        summary["sentence"] = _closest_label(x) + (f"Use {r['count']} x {x.catalog.gpus[r['gpu']].name} on {_machines(r, x.catalog.gpus[r['gpu']].gpus_per_node)} "
                               f"({_layout_short(r)}).")
    else:
        summary["sentence"] = v["headline"]
        by_rule: dict = {}
        for g, rules in x.rec["no_candidate"].items():
            for k in rules:
                by_rule.setdefault(x.rule_titles.get(k, k), []).append(g)
        # one GPU under a rule: its own reason beside the rule's title (review 17: "no layout holds the
        # workload: mi300x" where the reason was that TensorRT-LLM does not run on it)
        why = {(x.rule_titles.get(e["rule"], e["rule"]), c["gpu"]): e.get("reason") for c in x.rec["candidates"]
               for e in (c.get("excluded_by") or [])}
        summary["reasons"] = [_excluded_line(t, gs, why.get((t, gs[0])) if len(gs) == 1 else None)
                              for t, gs in sorted(by_rule.items(), key=lambda kv: -len(kv[1]))][:3]
    if r:
        summary["reasons"] = _forward_reasons(x, v)
    elif v["decisive"]:
        first = v["decisive"]["because"]
        head = v["decisive"]["title"].split(":")[0]
        if first.startswith(head + ":"):
            first = first[len(head) + 1:].strip()
        summary["reasons"].append(f"{v['decisive']['title']}: {_gist(first, 90)}" if first else v["decisive"]["title"] + ".")
    if not r:
        summary["reasons"] += [s["title"] + "." for s in v["supporting"]][:3 - len(summary["reasons"])]
    summary["stability"] = _stability_lines(x)
    # the text memo's one-screen summary keeps the verdict; the detail (ends, measurement) is in md/html and below
    summary["stability_short"] = _stability_short(x)
    summary["cheaper_per_token"] = _cheaper_per_token(x, [a for a in v["alternatives"] if not a["excluded"]][:2])
    summary["cheaper_per_token_short"] = _cheaper_per_token(x, [a for a in v["alternatives"] if not a["excluded"]][:2], True)
    # the two best alternatives and the difference alone (the rule premium is in the alternatives table)
    summary["alternatives"] = [{"name": a["name"], "gpu": a["gpu"], "count": a["count"], "cost": a["cost"],
                                "diff": a["diff_short"].split(" effective cost")[0] + (" effective" if " effective cost" in a["diff_short"] else ""),
                                "diff_long": a["diff"], "why": a["reasons"][0] if a["reasons"] else "scored no rule",
                                "unit_cost": a["unit_cost"], "hour_cost": a["hour_cost"], "work_cost": a["work_cost"], "speed": a["speed"],
                                "layout": a["layout"], "plain": a["plain"], "plain_short": a["plain_short"]}
                               for a in [a for a in v["alternatives"] if not a["excluded"]][:2]]
    summary["alt_table"] = _alt_table(x, [a["gpu"] for a in summary["alternatives"]])
    # a runner-up cheaper per hour than the pick may carry a high risk the summary's own list (the pick's)
    # does not show: said beside the table (review 11, F10: 6 x RTX 4090 under the GeForce licence)
    summary["alt_risks"] = _alt_risks(x, [a["gpu"] for a in summary["alternatives"]])
    line = _unpriced_line([u for u in (x.rec.get("unpriced") or []) if isinstance(u, dict)])
    if line:
        summary["unpriced"].append(line)
    # the objective, unless the decisive reason already says it (the cost ranking rule)
    # and the default objective (cost) goes to the details, to keep the summary on one screen
    summary["objective_line"] = "" if (d and str(d.get("id", "")).startswith("ranking-cost")) or \
        (r or {}).get("objective") == "cost" else summary["objective"]
    summary["suggestions"] = [_suggestion(s, cites) for s in _best_per_setting(x.rec.get("suggestions") or [])]
    # the top three whole: md and html give each its full text; the text memo's one screen gives each its
    # first clause whole (never cut inside it with "(...)"), the rest of the sentence is in RISKS below;
    # the API rules' warning says what the summary's API line already says, with the same figures
    summary["risks"] = [{"severity": k["severity"], "text": k["text"], "clause": _first_clause(k["text"]),
                         "mitigation": k["mitigation"]}
                        for k in v["risks"] if (k["kind"] == "warn" or k["severity"] in ("high", "medium"))
                        and not (summary["api"] and k["rule"].startswith("api-"))][:3]
    # a plan without a warning has no Risk line: a note ("rented as whole instances") is not a risk
    return summary


def _fleet_line(x: _Record) -> str | None:
    """What becomes of the team's own GPUs when the plan does not use them: the best plan that does,
    and why it lost (a budget owner asks first why the cards already paid for sit idle)."""
    fleet = (x.rec.get("inputs") or {}).get("fleet") or []
    r = x.r
    if not fleet or not r or (x.cands[r["gpu"]].get("price") or {}).get("kind") == "owned":
        return None
    first = (x.cands[r["gpu"]].get("price") or {}).get("owned_first")
    if first:
        # owned first (numbers.ownedfirst): the team's replicas and the rented ones, each with its cost
        mine = "; ".join(f"{s['cards']} of its {s['fleet_cards']} {s['gpu']} ({s['replicas']} x {s['layout']})" for s in first["owned"])
        return (f"The team's own cards serve first: {mine} serve {first['users'] - first['rented_users']:,} of the "
                f"{first['users']:,} users at ${first['owned_usd_per_hour']:,.2f}/h running cost; {r['count']} x {r['gpu']} "
                f"rented serve the other {first['rented_users']:,} at ${first['rented_usd_per_hour']:,.2f}/h")
    owned = ", ".join(f"{f['count']} x {f['gpu']}" for f in fleet)
    best = next((a for a in x.rec.get("alternatives") or []
                 if not a["excluded"] and (x.cands[a["gpu"]].get("price") or {}).get("kind") == "owned"), None)
    if best is None:
        # the fleet GPU's plan was excluded: say by what (review 16: a plan of 64 owned and 480 rented H100,
        # refused for spanning the fleet's site and a provider's, had read "no plan on them holds the workload")
        mine = {f["gpu"] for f in fleet}
        out = next((c for c in x.rec.get("candidates") or [] if c.get("gpu") in mine and c.get("excluded") and c.get("excluded_by")), None)
        if out is not None:
            # excluded before it got a plan (no engine runs on it): no card count to quote (issue 42)
            on = f"its plan on them, {out['count']:,} x {out['gpu']}," if out.get("count") else f"{out['gpu']}"
            return f"The team's {owned} stay out of this plan: {on} is out: " + x.cites.prose(out["excluded_by"][0]["reason"])
        return f"The team's {owned} stay out of this plan: no plan on them holds the workload"
    p = x.cands[best["gpu"]]["price"]
    added = f", {p['added_gpus']} more rented" if p.get("added_gpus") else ""
    why = best["reason"][3:] if best["reason"].startswith("it ") else best["reason"]
    return (f"The team's {owned} stay out of this plan: the best plan on them, {best['count']} x {best['gpu']} "
            f"({p['owned_gpus']} owned{added}), {why}")


def _first_clause(text: str, at: str = r"; |: ", shortest: int = 20) -> str:
    """The first sentence of a text up to its first clause boundary (`at`: "; " or ": " outside
    parentheses), whole: a risk's claim without its explanation, never cut inside a clause; a head of
    `shortest` characters or fewer does not read as a sentence and is not cut off. A runner-up's risk
    cuts at "; " only, so that a claim keeps its reason (a GPU's name alone says nothing of the risk)."""
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0].rstrip(".")
    for m in re.finditer(at, first):
        head = first[:m.start()]
        if head.count("(") == head.count(")") and len(head) > shortest:
            return head + "."
    return first + "."


def _closest_label(x: _Record) -> str:
    """The words before the plan when no GPU meets the target: it is the nearest plan, not one that meets it."""
    what = "deadline" if x.mode != "inference" else "service level"
    closest = (x.r or {}).get("closest")
    within = " within the budget" if (closest or {}).get("over_budget") else ""
    if not closest:
        return ""
    # a miss inside the speed model's own error is not "no GPU meets it" (review 15, F9: a 3% miss)
    err = ((x.r or {}).get("cost_range_basis") or {}).get("model_error")
    gap = closest.get("shortfall")
    if err and gap and gap - 1 <= err:
        by = f"{gap - 1:.0%}" if gap - 1 >= 0.005 else "under 1%"
        return (f"No GPU{within} meets the {what} by the speed model's expected figure; the closest misses it by "
                f"{by}, within the model's {err:.1%} error: ")
    return f"No GPU{within} meets the {what}; the closest plan: "


def _forward_reasons(x: _Record, v: dict) -> list[str]:
    """Why the winner, in the forward direction: its cost per unit and its speed against the service
    level, the rules in its favour, then one line on why it beat the runner-up, then an excluded GPU
    only when an exclusion decided (the reader would have expected that GPU)."""
    r, c = x.r, x.cands[x.r["gpu"]]
    g = r["gpu"]
    # the costs themselves are on the summary's cost lines just above: the reason says what they mean
    unit = r.get("unit") or ""
    field = {"hour": "usd_per_hour", "job": "usd_per_job"}.get(unit or "hour", "usd_per_million_tokens")
    priced = [k[field] for g2, k in x.cands.items() if k.get("fits") and k.get(field) is not None
              and not (x.decided.get(g2) or {}).get("excluded")]
    # "lowest" only when it is, by price alone; else the rules' premiums made it first (the next line says how)
    lowest = c.get(field) is not None and priced and c[field] <= min(priced)
    beat = (x.d or {}).get("beaten") if (x.d or {}).get("id") == "ranking-cheaper-and-faster" else None
    per = UNIT_LABELS.get(unit, 'per unit of work')
    first = (f"{g} is the cheapest {per} that fits" if lowest else
             (f"{g} is cheaper and faster than {beat}, which the rules of thumb favour" if x.d.get("beaten_by") == g else
              f"{g} is the cheapest {per} after the rules' premiums ({beat}, which rules of thumb put first, "
              f"costs more and runs slower than {x.d.get('beaten_by')})") if beat else
             f"{g} is the cheapest {per} after the rules' premiums") \
        if r.get("objective") == "cost" and c.get(field) is not None else f"{g} ranks first"
    speed = _speed_against_level(x, c)
    favour = _titles([s["title"] for s in v["supporting"]])
    ru = x.rec.get("runner_up")
    alt = next((a for a in v["alternatives"] if ru and a["gpu"] == ru["gpu"]), None)
    # the rules in the winner's favour are named once: by the runner-up's line when it says what they are
    # worth against it ("worth paying up to 10% more for the winner (...)"), else here
    if alt and favour and favour.split(" and ")[0] in alt["plain_short"]:
        favour = ""
    out = [first + (f", at {speed}" if speed else "") + (f"; in its favour: {favour}" if favour else "") + "."]
    if r.get("closest"):
        # no plan meets the target: how near this one comes is the first thing the reader needs
        out[0] = (f"{g} comes closest to the {'deadline' if x.mode != 'inference' else 'service level'}: "
                  f"{r['closest']['missed']} ({times(r['closest']['shortfall'])} the target)."
                  + (f" {r['closest']['over_budget']['text']}" if r["closest"].get("over_budget") else ""))
    if alt:
        # "it costs 15% more" would read as the winner's cost after "It beats ...": name the runner-up
        why = alt["plain_short"]
        why = f"{alt['gpu']}{why[2:]}" if why.startswith("it ") else why
        # an excluded runner-up was not beaten (the closest plan's next, or a GPU a rule removed): "Next"
        out.append(f"{'Next' if alt.get('excluded') else 'It beats'} {alt['count']} x {alt['gpu']} ({alt['unit_cost']}): {why}.")
    cp = x.rec.get("closest_priced")
    if cp:
        # no price for the answer: the priced plan a budget owner can weigh against quotes for it
        out.append(cp["text"][0].upper() + cp["text"][1:] + ".")
    d = x.d
    if d and any(t["rule"] == d["id"] and t["effect"]["kind"] == "exclude" for t in x.rec["trace"]):
        # the rule's own sentence names the excluded GPU and why; its title is in WHY below
        out.append(_gist(v["decisive"]["because"], 140))
    return out[:4]


def _speed_against_level(x: _Record, c: dict) -> str:
    """The winner's speed per user against the service level, or its hours against the deadline."""
    dl = (x.inputs.get("constraints") or {}).get("deadline_hours")       # a constraint, not a top-level field
    if c.get("job_hours") is not None:
        # an offline batch job: its hours for the whole volume, and the deadline met (a plan that misses
        # it is no plan: exit 3)
        return f"about {_duration(c['job_hours'])} for the whole job" + (
            f", within the {dl:,.0f}-hour deadline" if isinstance(dl, (int, float)) else
            " (no deadline given: the cheapest plan per job)")
    if x.mode == "inference" and c.get("tokens_per_s_per_user") is not None:
        sl = x.rec.get("service_level") or {}
        text = f"{rate_beside(c['tokens_per_s_per_user'], sl)} tokens/s per user"
        if sl.get("tpot_ms"):
            text += f" (the service level asks {asked_rate(sl['tpot_ms'])})"
        return text
    if c.get("training_hours") is not None:
        return f"about {_duration(c['training_hours'])}" + (f" against a {dl:,.0f}-hour deadline" if isinstance(dl, (int, float)) else "")
    return ""


def _stability_lines(x: _Record) -> list[str]:
    """Whether the answer survives the speed model's own error (record: recommendation.within_error)."""
    r, o = x.r or {}, x.rec.get("runner_up_overlap")
    basis = r.get("cost_range_basis") or {}
    m = x.rec.get("service_level_margin")
    if m and r.get("within_error") is not None:
        return [_margin_line(r, m)]
    if not o or r.get("within_error") is None:
        return []
    unit, err = basis.get("unit", ""), basis.get("model_error") or 0
    w, ru = o["winner_range"], o["runner_up_range"]
    head = (f"{r['gpu']} {_range(w)} and {o['gpu']} {_range(ru)} {unit}, each with the speed model's "
            f"{err:.1%} median error (docs/accuracy.md)")
    if not o["overlap"]:
        return [f"Stable: {head}; the ranges do not overlap, so the model's error does not change the answer."]
    return [f"Close call: {head} overlap: at {r['gpu']}'s slow end and {o['gpu']}'s fast end "
            f"{o['if_winner_slow_runner_up_fast']} is cheaper, at the other ends {o['if_winner_fast_runner_up_slow']}. "
            f"To settle it, run {o['settle_by']}."]


def _stability_short(x: _Record) -> list[str]:
    """The stability verdict in one line for the text summary (the ends and the measurement are below)."""
    r, o = x.r or {}, x.rec.get("runner_up_overlap")
    m = x.rec.get("service_level_margin")
    if m and r.get("within_error") is not None:
        return [_margin_line(r, m, short=True)]
    if not o or r.get("within_error") is None:
        return []
    err = (r.get("cost_range_basis") or {}).get("model_error") or 0
    # the unit is the summary's "Per unit of work" line; the ends and the measurement are in the detail
    # the verdict is on the ranking: both costs moved by the model's median error (a training job's own
    # hours range wider, over the fits' spread: the Time line; review 16 read "Stable" as about the hours)
    head = "Close call" if o["overlap"] else "Stable ranking"
    return [f"{head} ({err:.1%} model error): {r['gpu']} {_range(o['winner_range'])}, {o['gpu']} {_range(o['runner_up_range'])}"
            + "."]


def _margin_line(r: dict, m: dict, short: bool = False) -> str:
    """Under per-hour ranking (quotes, not modelled): whether the winner still holds the service level
    when the speed model is off by its median error (record: service_level_margin)."""
    lo, hi = m["winner_tokens_per_s_per_user"]
    need, err = m["service_level_tokens_per_s_per_user"], m["model_error"]
    head = (f"{r['gpu']} {_num(lo, 0)}-{_num(hi, 0)} tokens/s per user with the speed model's {err:.1%} error, "
            f"against the {_num(need, 0)} the service level asks")
    verdict = "Stable" if m["holds_at_slow_end"] else "Close call"
    if short:
        # the text summary's one line, as long as the cost band's: the verdict and the figures behind it
        return f"{verdict} ({err:.1%} model error): {_num(lo, 0)}-{_num(hi, 0)} tokens/s per user, {_num(need, 0)} asked."
    if m["holds_at_slow_end"]:
        return f"Stable: {head}; even at its slow end it holds the service level, and its hourly price is a quote."
    ru, ru_ok = m.get("runner_up"), m.get("runner_up_holds_at_slow_end")
    other = (f"{ru} holds it at its slow end ({_num(m['runner_up_tokens_per_s_per_user'][0], 0)})" if ru and ru_ok else
             f"{ru} would miss it too ({_num(m['runner_up_tokens_per_s_per_user'][0], 0)} at its slow end), so more cards"
             if ru else "more cards")
    return (f"Close call: {head}; at its slow end it misses the service level, and then {other} would be the answer. "
            f"To settle it, run {m['settle_by']}.")


def _range(rg) -> str:
    if not rg:
        return ""
    lo, hi = rg

    return f"{_money(lo)}-{_money(hi)}"


def _ranking_cost(unit: str, c: dict) -> str:
    """The cost in the ranking's unit (per hour of interactive serving, per million tokens, per job)."""
    field = ranking_field(unit)
    v = c.get(field)
    if v is None:
        return "price unknown"
    return f"{_job_usd(v) if field == 'usd_per_job' else _small_usd(v)} {UNIT_LABELS.get(unit or 'hour', 'per hour')}"


def _speed_short(mode: str, c: dict) -> str:
    if not c.get("fits"):
        return "-"
    own = memokind.speed_short(c)      # a kind counted in images or clips
    if own is not None:
        return own
    if c.get("job_hours") is not None:
        return duration_short(c["job_hours"])
    if mode == "inference":
        return f"{_num(c.get('tokens_per_s_per_user'), 0)} tokens/s per user"
    return duration_short(c["training_hours"]) if c.get("training_hours") is not None else "-"


def _alt_risks(x: _Record, gpus: list[str]) -> list[dict]:
    """The high-severity warnings of the summary's runners-up that look cheaper than the pick (per hour or
    per unit of work before the rules' premiums): each its GPU, first clause and whole text. A dearer
    runner-up's risks are in the alternatives below; a cheaper-looking one's must not hide there."""
    warns = {c["gpu"]: c.get("warnings") or [] for c in x.rec.get("candidates") or [] if isinstance(c, dict)}
    pick = x.cands.get((x.r or {}).get("gpu")) or {}
    work = "usd_per_million_tokens" if x.mode == "inference" and pick.get("job_hours") is None else "usd_per_job"

    def cheaper(c: dict, field: str) -> bool:
        return c.get(field) is not None and pick.get(field) is not None and c[field] < pick[field]

    return [{"gpu": g, "clause": _first_clause(k["text"], at="; ", shortest=0), "text": k["text"]}
            for g in gpus if cheaper(x.cands[g], "usd_per_hour") or cheaper(x.cands[g], work)
            for k in warns.get(g, []) if k.get("kind") == "warn" and k.get("severity") == "high"]


def _alt_table(x: _Record, gpus: list[str]) -> dict:
    """The summary's small table of runners-up: cost per hour, per unit of work (per million output tokens
    or per job, whichever the ranking did not already show) and speed, with the units in the heads."""
    work = ("usd_per_million_tokens", "per M output tokens") if x.mode == "inference" else ("usd_per_job", "per job")
    if x.mode != "inference" and (x.r or {}).get("unit") == "million_training_tokens":
        work = ("usd_per_million_tokens", "per M training tokens")
    speed = ("tokens_per_s_per_user", "tokens/s per user", 0) if x.mode == "inference" else ("training_hours", "hours", 1)
    own = memokind.table_columns(x.r or {})       # a kind counted in images or clips
    if own:
        work, speed = own
    elif (x.cands.get((x.r or {}).get("gpu")) or {}).get("job_hours") is not None:
        # an offline batch job: the whole job's cost and hours
        work, speed = ("usd_per_job", "per job"), ("job_hours", "hours", 1)
    head = ["", "per hour", work[1], speed[1]]
    rows = []
    for g in gpus:
        c = x.cands[g]
        w = c.get(work[0])
        rows.append([f"{c['count']} x {g}", _usd(c["usd_per_hour"]) if c.get("usd_per_hour") is not None else "unknown",
                     "-" if w is None else _job_usd(w) if work[0] == "usd_per_job" else _small_usd(w),
                     "-" if c.get(speed[0]) is None else _num(c[speed[0]], speed[2])])
    return {"head": head, "rows": rows}


def _summary_cost(x: _Record, c: dict) -> list[tuple[str, str]]:
    """(label, text) pairs: per hour, per month at the workload's utilisation, per unit of work, the offer,
    and buy-or-rent when the record compares them."""
    month = month_shown(x.inputs, c)
    if c.get("usd_per_hour") is not None:
        cost = [("Per hour", _usd(c["usd_per_hour"]) + (f" ({_usd(c['usd_per_hour'] * month[0], 0)} a month, {month[1]})" if month else ""))]
        unit = _unit_cost(x.mode, c)
        price = c.get("price") or {}
        if unit and price.get("kind") == "contract" and (price.get("job_share_of_term") or 1) < 1 and price.get("term_usd"):
            # the cost per job is the job's hours of the term: what the team signs for is the whole term
            share = price["job_share_of_term"]
            unit += (f", the job's {'under 1%' if share < 0.005 else f'{share:.0%}'} of a {price['term_months']}-month contract that commits "
                     f"{_usd(price['term_usd'], 0)}")
        if unit:
            cost.append(("Per unit of work", unit))
        cost.append(("Offer", _offer(c["price"])))
    else:
        cost = [("Cost", _cost_sentence(x.mode, c, x.cites))]
    tco = x.r.get("tco")
    if isinstance(tco, dict) and tco:
        cost.append(("Buy or rent", _tco(tco)))
    return cost


def _best_per_setting(suggestions: list) -> list:
    """One suggestion per setting in the summary (precision at 4 bits beside 8 bits: the larger saving; the
    decision record keeps both), in the record's order."""
    best: dict = {}
    for s in suggestions:
        if isinstance(s, dict):
            key = str(s.get("change", "")).split(":")[0]
            if key not in best or (s.get("saving") or 0) > (best[key].get("saving") or 0):
                best[key] = s
    return [s for s in suggestions if isinstance(s, dict) and best.get(str(s.get("change", "")).split(":")[0]) is s]

