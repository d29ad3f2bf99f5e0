"""Wording shared by the memo and the short summary: knowledge IDs named for people, money and counts
in words, no raw Python values. Plain functions over the decision record (no Jinja, so that
`recommend --format summary` and the dialogue stay light)."""
from __future__ import annotations

import re

from advisor.numbers.terms import HOURS_PER_MONTH

_ID = r"[KTCAW]\d\d"


def usd(x, nd=2) -> str:
    return "unknown" if x is None else f"${x:,.{nd}f}"


def small_usd(x: float) -> str:
    """A cost that may be small (per million tokens, a difference): cents from $0.10, three significant
    figures below ($0.0352, not $0.04)."""
    return usd(x) if x >= 0.1 else f"${x:.3g}"


def money(x: float) -> str:
    """Cents only where they matter: $0.77, $3,875 (not $3,875.08), $0.0352."""
    return usd(x, 0) if x >= 100 else small_usd(x)


def job_usd(x) -> str:
    """A job's cost: whole dollars from $100, cents below (a LoRA job of $0.46 is not "$0")."""
    return usd(x, 0 if x is not None and x >= 100 else 2)


def asked_rate(tpot_ms: float) -> str:
    """A service level's time per token as the tokens/s per user it asks, to a tenth where rounding would
    hide what the level excludes (80 ms: 12.5, not 12, beside a plan of 12.3 excluded)."""
    return per_user_rate(1000 / tpot_ms)


def per_user_rate(rate: float) -> str:
    """Tokens/s per user to a tenth below 100, as the level it is read against (a plan of 33.47 had shown
    as "33" beside "the service level asks 33.3": review 17)."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:,.1f}".rstrip("0").rstrip(".")


def rate_beside(rate: float, level: dict) -> str:
    """A plan's tokens/s per user: to a tenth beside a service level's time per token, whole otherwise."""
    return per_user_rate(rate) if level.get("tpot_ms") else f"{rate:,.0f}"


def machines(r: dict, gpus_per_node: int) -> str:
    """Where the cards sit: "2 nodes", or the rented instances when they are smaller than a node
    ("3 x 4-GPU instances"): the plan's node count is in whole 8-GPU nodes, the offer's in what is rented."""
    o = r.get("price") or {}
    n, per = o.get("instances"), o.get("gpus_per_instance")
    if o.get("kind") in ("on-demand", "spot", "reserved", "contract") and n and n > 1 and per and per < gpus_per_node:
        return f"{n} x {per}-GPU instances"
    return f"{r['nodes']} node{'s' if r['nodes'] > 1 else ''}"


def duration_short(hours: float) -> str:
    """Hours for a table cell: 24 min, 1.5 h, 42 h (a 24-minute job had shown as "0 h": review 17, F3)."""
    if hours < 1:
        return f"{max(1, round(hours * 60))} min"
    return f"{hours:.1f} h" if hours < 10 else f"{hours:,.0f} h"


def duration(hours: float) -> str:
    """Hours in words a reader takes in at once: 40 minutes, 1.5 hours, 42 hours, 12 days."""
    if hours < 1:
        return f"{max(1, round(hours * 60)):,} minutes" if round(hours * 60) != 1 else "1 minute"
    if hours < 10:
        return f"{hours:.1f} hours" if round(hours, 1) != 1 else "1 hour"
    if hours < 72:
        return f"{hours:,.0f} hours"
    return f"{hours:,.0f} hours ({hours / 24:,.0f} days)"


def count(x) -> str:
    """A large count in words a budget owner reads at a glance: 60 million, 1.5 trillion."""
    if x is None:
        return "unknown"
    for size, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if abs(x) >= size:
            return f"{x / size:,.3g} {word}"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.3g}"


class Cites:
    """Knowledge IDs (K12, T08, ...) and seed numbers named for people: the short title of the statement,
    with its document and section in the Sources list. The bare IDs stay in the audit."""

    def __init__(self, catalog):
        know = catalog.knowledge or {}
        self.items = {**know.get("heuristics", {}), **know.get("examples", {})}
        self.docs = know.get("documents", {})
        self.used: list[str] = []

    def title(self, kid: str) -> str:
        item = self.items.get(kid)
        if not item:
            return kid
        if kid not in self.used:
            self.used.append(kid)
        return item.get("title") or item.get("says") or item.get("expected") or kid

    def document(self, seed: str) -> str:
        return self.docs.get(seed) or "a seed document"

    def full(self, kid: str) -> str:
        """'Short title - document, section': what a reader needs to look the statement up."""
        item = self.items.get(kid)
        if not item:
            return kid
        self.title(kid)
        section = item.get("section")
        return f"{self.title(kid)} - {self.document(item['seed'])}" + (f", section '{section}'" if section else "")

    def names(self, sources) -> str:
        """A source list (knowledge IDs, catalog source ids, 'workload file') in words."""
        return "; ".join(self.title(s) if re.fullmatch(_ID, s) else source_name(s) for s in sources)

    def prose(self, text, own=()) -> str:
        """Text from a rule or the estimator with its IDs named: a parenthesis of IDs the text's own
        sources already name (`own`) is dropped; any other ID becomes its short title."""
        if not text:
            return text or ""
        text = str(text)
        own = set(own)

        def group(m):
            ids = re.findall(_ID, m.group(1))
            if own and set(ids) <= own:
                for i in ids:
                    self.title(i)
                return ""
            return " (" + "; ".join(self.title(i) for i in ids) + ")"
        text = re.sub(rf"\s*\(((?:{_ID})(?:,\s*{_ID})*)\)", group, text)
        text = re.sub(r"\bseed (\d{3})\b", lambda m: self.document(m.group(1)), text)
        text = re.sub(rf"\b{_ID}\b", lambda m: self.title(m.group(0)), text)
        return plain(text)


def plain(text: str) -> str:
    """No raw Python values in a memo: lists, booleans, None and exponent notation made readable."""
    text = re.sub(r"\[(\d+(?:, \d+)*)\]", lambda m: m.group(1).replace(", ", " or "), text)
    text = re.sub(r"\bTrue\b", "yes", text)
    text = re.sub(r"\bFalse\b", "no", text)
    text = re.sub(r"\bNone\b", "none", text)
    return re.sub(r"\b\d+(?:\.\d+)?e[+-]?\d+\b", lambda m: count(float(m.group(0))), text)


def offer(p: dict) -> str:
    """Where the price comes from: provider, instance, region, kind, date (one line of visible text)."""
    if p.get("kind") == "owned":
        return _owned_offer(p)
    parts = [p.get("provider") or "unknown provider"]
    inst = p.get("instance")
    count = p.get("instances") or 1
    shape = (f"{count} x {p['gpus_per_instance']}-GPU instance{'s' if count > 1 else ''}"
             if p.get("gpus_per_instance") and p.get("kind") != "purchase" else "")   # bought: the instance names it
    parts.append(f"{inst} ({shape})" if inst and shape else inst or shape)
    if p.get("region"):
        parts.append(str(p["region"]))
    if p.get("kind") == "contract":
        # no listing rents this many instances on demand (numbers/cost.py contract): say so where the price is
        parts.append("contracted capacity: beyond any listing's on-demand capacity")
    elif p.get("kind") == "reserved" and p.get("on_demand_offer"):
        # beyond on-demand capacity, booked ahead (numbers/capacity.py reserve_for_job): the reservation to make
        days = f" for {p['term_days']} days" if p.get("term_days") else ""
        parts.append(f"needs a reservation of {count:,} instances{days} at ${p['usd_per_gpu_hour']:.2f}/GPU-h "
                     "(beyond any listing's on-demand capacity)")
    elif p.get("kind"):
        parts.append(str(p["kind"]).replace("_", " "))
    date = p.get("date")
    parts.append(f"quoted {date}" if date and date != "unknown" else "date unknown")
    if p.get("basis"):          # a price one analyst guessed is not a quote: the reader must know
        parts.append(str(p["basis"]))
    idle = p.get("idle_gpus") or 0
    if idle:
        parts.append(f"{idle} GPU{'s' if idle > 1 else ''} rented but idle")
    text = ", ".join(x for x in parts if x)
    first = p.get("owned_first")
    if isinstance(first, dict) and first.get("owned"):
        # the team's own replicas beside the rented ones (numbers.ownedfirst): both parts and the cost of each
        mine = "; ".join(f"{s['cards']} x {s['gpu']} ({s['replicas']} x {s['layout']})" for s in first["owned"])
        text = (f"${first['rented_usd_per_hour']:,.2f}/h rented for {first['rented_users']:,} of {first['users']:,} users: {text}; "
                f"the team's own {mine} serve the other {first['users'] - first['rented_users']:,} "
                f"at ${first['owned_usd_per_hour']:,.2f}/h running cost")
    return clean(text)     # the names are a price file's: cleaned for every output


def _owned_offer(p: dict) -> str:
    """The team's fleet (numbers.cost.fleet_cost): its cards in its nodes, and the offer of the cards added
    beside them; no quote date (the team's own hardware) and no location twice."""
    n = p.get("instances") or 1
    text = f"{p.get('provider') or 'the team'}, {p.get('instance')} ({n} x {p.get('gpus_per_instance')}-GPU node{'s' if n > 1 else ''}), owned"
    added = p.get("added")
    if p.get("added_gpus") and isinstance(added, dict):
        how = "bought" if added.get("kind") == "purchase" else "rented"
        text += f"; {p['added_gpus']} more {how}: {offer(added)}"
    return clean(text)


def _share(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= 1 else None


def month_hours(inputs: dict, c: dict) -> tuple[float, str]:
    """(hours a month the plan is paid for, what they rest on) for the memo's monthly cost of plan `c`:
    owned hardware is paid every hour (its busy share, given or the default, only sets the energy and the
    rent it is compared with); a rental for the hours the workload gives (utilisation, busy_share, or
    jobs_per_month x the job's hours); 24x7, said as such, when it gives none."""
    cons = inputs.get("constraints") or {}
    kind = (c.get("price") or {}).get("kind")
    jobs = cons.get("jobs_per_month")
    jobs = jobs if isinstance(jobs, (int, float)) and not isinstance(jobs, bool) and jobs > 0 else None
    if kind == "purchase":
        busy = ((c.get("tco") or {}).get("inputs") or {}).get("utilisation") or {}
        b, src = _share(busy.get("value")), busy.get("source") or ""
        if jobs and c.get("training_hours"):
            used = jobs * c["training_hours"] / HOURS_PER_MONTH
            return HOURS_PER_MONTH, (f"{HOURS_PER_MONTH} h: owned; {jobs:g} jobs a month of "
                                     f"{c['training_hours']:,.1f} h keep it {min(used, 1):.0%} busy")
        said = "given" if src == "workload file" else "the default"
        # owning is paid every hour: the busy share (given or the default) sets only the energy and the rent compared
        return HOURS_PER_MONTH, (f"{HOURS_PER_MONTH} h: owned" + (f", busy {b:.0%} ({said})" if b else ""))
    if kind == "owned":
        added = (c.get("price") or {}).get("added_gpus")
        return HOURS_PER_MONTH, (f"{HOURS_PER_MONTH} h: the team's cards run 24x7 at their running cost"
                                 + (f", the {added:g} added ones rented as long" if added else ""))
    u = _share(inputs.get("utilisation"))
    if u:
        return HOURS_PER_MONTH * u, f"{HOURS_PER_MONTH * u:,.0f} h: {u:.0%} utilisation"
    b = _share(cons.get("busy_share"))
    if b:
        return HOURS_PER_MONTH * b, f"{HOURS_PER_MONTH * b:,.0f} h: busy {b:.0%} (busy_share)"
    if jobs and c.get("training_hours"):
        h = min(jobs * c["training_hours"], HOURS_PER_MONTH)
        return h, f"{h:,.0f} h: {jobs:g} jobs a month x {c['training_hours']:,.1f} h (jobs_per_month)"
    return HOURS_PER_MONTH, f"{HOURS_PER_MONTH} h: 24x7, no utilisation given"


def month_shown(inputs: dict, c: dict) -> tuple[float, str] | None:
    """month_hours, or None for a rented job (training, or an offline batch job) the workload gives no monthly use for (no
    utilisation, busy_share or jobs_per_month): a bill for 730 h of a seven-minute job is no figure a
    budget owner should read (review 13: "$7,534 a month" beside a $1.22 job); its cost is per job."""
    cons = inputs.get("constraints") or {}
    rented = (c.get("price") or {}).get("kind") not in ("purchase", "owned")
    said = _share(inputs.get("utilisation")) or _share(cons.get("busy_share")) or cons.get("jobs_per_month")
    job = inputs.get("mode") in ("training", "fine-tuning") or c.get("job_hours") is not None   # an offline batch job too
    if job and rented and not said:
        return None
    return month_hours(inputs, c)


def gist(text: str, limit: int = 110) -> str:
    """The first sentence of a text, cut at a clause boundary near `limit` characters (the summary's
    one-liners; the full text is in the evidence)."""
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0].rstrip(".")
    if len(first) <= limit:
        return first + "."
    # a clause ends at a semicolon or a colon; a comma may sit inside a list ("the model, kernels and stack")
    cuts = [m.start() for m in re.finditer(r"; |: ", first[:limit])
             if first[:m.start()].count("(") == first[:m.start()].count(")")]     # never inside a parenthesis
    cut = max(cuts, default=-1)
    if cut > 20:                        # a whole clause reads as a sentence of its own
        return first[:cut] + "."
    short = first[:limit].rsplit(" ", 1)[0]
    if short.count("(") > short.count(")"):
        short = short[:short.rfind("(")].rstrip()
    return short + " (...)."


def source_name(sid: str) -> str:
    return "unverified (no source found)" if sid == "unknown_explicit" else sid


def plan(c: dict) -> str:
    """A candidate's (recommendation's, alternative's) layout in the declared notation (advisor.inputs.parallel)."""
    return notation(from_record(c))


def fmt_input(val) -> str:
    """A workload value in words: yes/no, lists joined, large numbers with separators (never Python's repr)."""
    if isinstance(val, bool):
        return "yes" if val else "no"
    if val is None:
        return "none"
    if isinstance(val, dict):
        return ", ".join(f"{k.replace('_', ' ')} {fmt_input(x)}" for k, x in val.items()) or "none"
    if isinstance(val, (list, tuple)):
        return ", ".join(fmt_input(x) for x in val) or "none"
    if isinstance(val, (int, float)):
        return count(val) if abs(val) >= 1e6 else (f"{val:,}" if isinstance(val, int) else f"{val:,.6g}")
    return str(val)


def why_lost(g: str, rec: dict, decided: dict, titles: dict, cites: Cites) -> list[str]:
    """Why an alternative lost, in words: its exclusions, or the rules against it and the rules for the
    winner that it lacks; never a rule in its favour."""
    dc = decided[g]
    r = rec.get("recommendation")
    if dc["excluded"]:
        return [f"excluded: {cites.prose(e['reason'], e.get('source', ()))}" for e in dc["excluded_by"]]
    mine = {x["rule"]: x["weight"] for x in dc["contributions"]}
    out = [f"against it: {titles.get(rule, rule)} ({w:+g})" for rule, w in mine.items() if w < 0]
    if r:
        win = {x["rule"]: x["weight"] for x in decided[r["gpu"]]["contributions"]}
        out += [f"the winner has: {titles.get(rule, rule)} ({w:+g})" for rule, w in win.items()
                if w > 0 and mine.get(rule, 0) < w]
        d = rec.get("decisive_rule")
        if dc.get("score") == decided[r["gpu"]].get("score"):
            # at an equal score the ranking decided: the effective cost when both are priced, else the
            # tie-break; the decision's decisive rule (an exclusion or a preference that set the winner
            # apart from others) did not rank this alternative lower
            mine_priced = dc.get("effective_cost") is not None
            win_priced = decided[r["gpu"]].get("effective_cost") is not None
            ranking = d.get("title", d["id"]) if d is not None and str(d.get("id", "")).startswith("ranking-") else "its cost"
            if mine_priced and win_priced:
                out.append(f"equal score; decided by: {ranking}")
            elif not mine_priced and not win_priced:
                out.append("equal score; ranked lower by the tie-break")
            # unpriced beside a priced winner: ranked after the priced ones, as its reason says
        elif not out:
            out.append("ranked lower")
    return out


def suggestion(s: dict, cites: Cites) -> str:
    """One planner suggestion (issue 7) as a sentence: the change, the plan it allows, the saving."""
    def words(x):
        if isinstance(x, dict):
            if "gpu" in x:
                n = x.get("count")
                return (f"{n} x " if n else "") + str(x["gpu"]) + (f" ({plan(x)})" if {"tp", "pp", "dp"} <= set(x) else "")
            return ", ".join(f"{k.replace('_', ' ')} {fmt_input(v)}" for k, v in x.items())
        return cites.prose(fmt_input(x))
    change, new_plan, saving = s.get("change"), s.get("plan"), s.get("saving")
    text = f"Changing {words(change)}" if change else "A different plan"
    if new_plan:
        text += f" would allow {words(new_plan)}"
    if isinstance(saving, (int, float)) and not isinstance(saving, bool):
        # `saving` is the share of the cost per unit of work saved (decision._suggestions), not dollars
        cost = new_plan.get("unit_cost") if isinstance(new_plan, dict) else None
        label = new_plan.get("unit_label", "") if isinstance(new_plan, dict) else ""
        if saving >= 0.005:
            text += f", {saving:.0%} cheaper"
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                text += f" ({usd(cost) if cost >= 1 else f'${cost:.3g}'} {label})".replace(" )", ")")
        elif isinstance(s.get("saving_after_premiums"), (int, float)) and s["saving_after_premiums"] >= 0.005:
            # no cheaper, but better once the rules' premiums are counted (the reason it is suggested)
            text += f", {s['saving_after_premiums']:.0%} better after the rules' premiums"
    elif saving:
        text += f", saving {words(saving)}"
    if s.get("meets_target"):
        text += f", and it meets the {s['meets_target']} the current plan misses"
    return text + "."


# --- names from configs and price files, made safe for each output ----------------------------------------
# A provider, an instance or a model name is whatever a price file or a config.json says: it may hold a
# terminal control sequence ('\x1b]0;...\x07' retitles the window), a line break (a forged memo line),
# bidirectional overrides, or Markdown and HTML markup.

from advisor.base.text import clean, clean_all  # noqa: E402,F401  (one sanitiser, in the base layer)
from advisor.inputs.parallel import from_record, notation


# What makes markup in a line of CommonMark/GFM, escaped with a backslash (which renders as nothing):
# emphasis and strikethrough (`*`, `~`, and `_` unless inside a word: 4x_L40S_SECURE stays as it is),
# code (`` ` ``), raw HTML and autolinks (`<`), table cells (`|`), a link or image (`](` or `][`), the
# escape itself; and, as the value may start a line, a heading, quote, list, rule or link definition.
_MD_INLINE = re.compile(r"[\\`*~<|]|\](?=[(\[])|_+")
_MD_BLOCK = re.compile(r"^(\s*)(?:([#>\[])|([-+=])(?=\s|[-+=\s]*$)|(\d{1,9})(?=[.)](?:\s|$)))")


def _md_inline(m: re.Match) -> str:
    run = m.group(0)
    if run[0] != "_":
        return "\\" + run
    text, a, b = m.string, m.start(), m.end()
    inside_word = a > 0 and text[a - 1].isalnum() and b < len(text) and text[b].isalnum()
    return run if inside_word else "\\_" * len(run)


def _md_block(m: re.Match) -> str:
    lead, mark, line_mark, number = m.groups()
    return lead + (number + "\\" if number else "\\" + (mark or line_mark))


def markdown(text) -> str:
    """A value as Markdown that shows exactly its text: cleaned (one line, no control characters) and
    with whatever would be markup escaped, so that it never becomes markup or leaves a table cell."""
    return _MD_BLOCK.sub(_md_block, _MD_INLINE.sub(_md_inline, clean(str(text))), count=1)


class MarkdownText(str):
    """Markdown the advisor made (a code span): markdown_finalize leaves it as it is."""


def markdown_code(text) -> MarkdownText:
    """A value as a Markdown code span: fenced with more backticks than it holds, a table's '|' escaped
    (GFM reads '\\|' inside a cell's code span as '|')."""
    text = clean(str(text)).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return MarkdownText(f"{fence}{pad}{text}{pad}{fence}")


def markdown_finalize(value):
    """What a Markdown template prints, as Jinja's `finalize`: every value shows as its text, so the
    escaping is done once here, not in each template; the advisor's own code spans pass as they are."""
    return value if isinstance(value, MarkdownText) else markdown(value)


def _per_m(x: float) -> str:
    return f"${x:,.2f}" if x >= 0.1 else f"${x:.3f}"


def api_line(a: dict | None) -> str | None:
    """The memo's one line on self-hosting against paying per token (the record's api_comparison; tokens
    are prompt + output tokens, the plan at the workload's concurrency and busy hours)."""
    if not a:
        return None
    if a.get("batch") is not None:
        return job_api_line(a, a["batch"])
    if a.get("match") == "none":
        return "No API in catalog/api-prices.yaml sells this model or one of its size: self-hosting is the only way to serve it"
    o = (a.get("offers") or [{}])[0]
    what = "" if a["match"] == "model" else f" for a model of its size ({', '.join(a.get('models') or [])})"
    n, median = a.get("providers") or 0, a.get("median_usd_per_million_tokens")
    aside = a.get("set_aside") or []
    spread = (f"; cheapest of {n - len(aside)}, median {_per_m(median)}" if n > 1 and median is not None else "")
    if aside:
        spread += ("; not counted: "
                   + ", ".join(f"{x.get('provider')} {_per_m(x.get('usd_per_million_tokens') or 0)}" for x in aside[:3])
                   + (f" and {len(aside) - 3} more" if len(aside) > 3 else "")
                   + (", under a quarter of the median and apart from the rest: likely a stale row" if len(aside) == 1
                      else ", under a quarter of the median and apart from the rest: likely stale rows"))
    be = a.get("break_even_tokens_per_day")
    plan, api = a.get("plan_usd_per_million_tokens"), a["api_usd_per_million_tokens"]
    # the plan's price counted as the API's, in + out (its price per million output tokens, on the line
    # above in the summary, is another count: issue 42); at a load above what the plan carries, more copies
    # of it cost the same per token, so "at any load"
    text = f"An API: {_per_m(api)} per million tokens in + out{what} ({o.get('provider')}, {o.get('date')}{spread})"
    if be is None:
        return text + "; the plan has no price or speed to compare"
    # the verdict and the break-even in one clause keep the line to two lines of the text summary
    if plan is not None and api is not None and plan > api and (a.get("break_even_utilisation") or 0) > 1:
        # the plan would have to serve more than a whole day's worth of its own capacity to break even
        # (the record's break_even_utilisation says by how much)
        return text + f"; this plan {_per_m(plan)} in + out: the API is cheaper at any load"
    if plan is not None and api is not None and plan > api:
        verdict = f"the API is cheaper below {be / 1e6:,.0f} million a day"
    else:
        verdict = f"self-hosting is cheaper above {be / 1e6:,.0f} million a day"
    return text + f"; this plan {_per_m(plan)} in + out at {a['load_tokens_per_day'] / 1e6:,.0f} million a day: {verdict}"


def job_api_line(a: dict, b: dict) -> str:
    """An offline batch job against the APIs, each for the whole job: the cheapest per-token offer, the
    cheapest sourced batch API price (record api_comparison.batch) and the plan's own total."""
    tokens = f"{b['job_tokens'] / 1e6:,.0f} million tokens"
    parts = []
    if a.get("match") != "none":
        o = (a.get("offers") or [{}])[0]
        what = "" if a["match"] == "model" else f" for a model of its size ({', '.join(a.get('models') or [])})"
        whole = f" = {job_usd(b['api_usd_per_job'])} for the job" if b.get("api_usd_per_job") is not None else ""
        parts.append(f"An API: {_per_m(a['api_usd_per_million_tokens'])} per million tokens in + out{what} "
                     f"({o.get('provider')}, {o.get('date')}){whole}")
    else:
        parts.append("No API in catalog/api-prices.yaml sells this model or one of its size")
    if b.get("match") != "none":
        what = "" if b["match"] == "model" else f" for a model of its size ({', '.join(b.get('models') or [])})"
        parts.append(f"a batch API{what}: {_per_m(b['usd_per_million_tokens'])} ({b['provider']} {b['provider_model']}, "
                     f"{b['date']}) = {job_usd(b['usd_per_job'])}")
    else:
        parts.append("no provider lists a batch price for it or its size")
    if b.get("plan_usd_per_job") is not None:
        parts.append(f"this plan {job_usd(b['plan_usd_per_job'])} for the {tokens}")
    return "; ".join(parts)
