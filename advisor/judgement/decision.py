"""The decision: fire the knowledge base on an estimate's facts, apply the effects, have the
candidates ranked on money (advisor/ranking.py), find the decisive rule, and build the decision
record (JSON-ready)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from advisor.inputs.catalog import Catalog
from advisor.judgement.engine import runner
from advisor.base.errors import InputError, Problem
from advisor.judgement import ranking, record
from advisor import kinds
from advisor.numbers import knobs, planner
from advisor.numbers.estimate import Estimate
from advisor.numbers.objective import UNIT_LABELS, closeness, nearest, plan_time, shortfall, times, unit_cost, unit_of_work
from advisor.numbers.plan import Plan
from advisor.numbers.terms import rounded
from advisor.judgement.facts import facts_for, prop
from advisor.judgement.knowledge import SELECTORS, KnowledgeBase, Rule, compiled_template

COST_RULE = {"id": "ranking-cost-per-unit-of-work", "title": "The lower cost per unit of work, after the rules' premiums, wins",
             "file": "advisor/judgement/ranking.py", "line": None,
             "source": ["T07", "C16"]}
CLOSEST_RULE = {"id": "ranking-closest-to-target", "title": "When every plan misses its target, the one that comes closest is the answer",
                "file": "advisor/judgement/decision.py", "line": None, "source": ["T06", "C16"]}
DOMINANCE_RULE = {"id": "ranking-cheaper-and-faster",
                  "title": "A plan cheaper and faster than the one the rules of thumb favour, with no more against it, wins",
                  "file": "advisor/judgement/ranking.py", "line": None, "source": ["T07", "C16"]}
OBJECTIVE_RULE = {"id": "ranking-objective", "title": "The workload's objective (time or cards) orders the candidates",
                  "file": "advisor/judgement/ranking.py", "line": None, "source": ["T06", "C16"]}


@dataclass(eq=False)
class Firing:
    """One effect of one rule that fired on one fact, in firing order."""

    order: int
    rule: Rule
    fact_id: str
    gpu: str | None
    bindings: dict
    effect: dict
    fact: dict = field(repr=False, default_factory=dict)
    ctx: dict | None = field(repr=False, default=None)     # what the rule's texts see, built when one renders
    because: str | None = None      # the rule's `because`, rendered on first use (most are never shown)

    def _ctx(self) -> dict:
        if self.ctx is None:
            self.ctx = _contexts(self.fact)
        return self.ctx

    @property
    def text(self) -> str:
        if self.because is None:
            self.because = _render(self.rule, self.rule.because, self.fact, "because", self._ctx())
        return self.because

    def rendered(self) -> dict:
        """The effect with its text (warn, note) or reason (exclude) rendered, once."""
        kind, eff = self.effect["kind"], self.rule.effects[self.effect["kind"]]
        if kind in ("warn", "note") and "text" not in self.effect:
            self.effect["text"] = _render(self.rule, eff.get("text", ""), self.fact, f"then.{kind}.text", self._ctx()) or self.text
        if kind == "warn" and eff.get("mitigation") and "mitigation" not in self.effect:
            # the one line that says what to do about the risk (issue 23), rendered like its text
            self.effect["mitigation"] = _render(self.rule, eff["mitigation"], self.fact, "then.warn.mitigation", self._ctx())
        if kind == "exclude" and "reason" not in self.effect:
            self.effect["reason"] = _render(self.rule, eff.get("reason", ""), self.fact, "then.exclude.reason", self._ctx()) or self.text
        return self.effect

    def exclusion(self) -> dict:
        return {"rule": self.rule.id, "reason": self.rendered()["reason"], "source": list(self.rule.source),
                "file": self.rule.file, "line": self.rule.line}

    def warning(self) -> dict:
        e = self.rendered()
        return {"rule": self.rule.id, "source": list(self.rule.source), "severity": e["severity"], "text": e["text"],
                "kind": e["kind"], "gpu": self.gpu, **({"mitigation": e["mitigation"]} if e.get("mitigation") else {})}


@dataclass(eq=False)
class Decision:
    """What the knowledge base made of an estimate: scores, exclusions, ranking, decisive rule."""

    estimate: Estimate
    kb: KnowledgeBase
    firings: list[Firing]
    scores: dict[str, float]
    contributions: dict[str, list[dict]]
    exclusions: dict[str, list[Firing]]          # per candidate, the exclude firings
    order: list[str]                             # the candidates that may win, best first (see `ranked` for why)
    winner: str | None
    runner_up: str | None
    decisive: dict | None
    advice: list[Firing]                         # warn/note firings on the workload or the winner
    candidate_advice: dict[str, list[Firing]] = field(default_factory=dict)
    catalog: Catalog | None = field(default=None, repr=False)
    facts: list = field(default_factory=list, repr=False)
    ranked: ranking.Ranking | None = field(default=None, repr=False)
    provenance: dict = field(default_factory=dict)   # the rule folders and price files used (judgement.advise)
    #: when every candidate misses its deadline or service level: the winner is the closest plan, and
    #: this says by how much it misses ({"missed": text, "shortfall": figure / target}); None otherwise
    closest: dict | None = None
    _record: dict | None = field(default=None, repr=False)

    # rule texts are rendered when something reads them: a sweep reads none
    @cached_property
    def excluded(self) -> dict[str, list[dict]]:
        return {g: [f.exclusion() for f in fs] for g, fs in self.exclusions.items()}

    @cached_property
    def warnings(self) -> list[dict]:
        return [f.warning() for f in self.advice]

    @cached_property
    def candidate_warnings(self) -> dict[str, list[dict]]:
        return {g: [f.warning() for f in fs] for g, fs in self.candidate_advice.items()}

    @property
    def record(self) -> dict:
        """The decision record (JSON-ready), built on first use: a sweep needs only the winner."""
        if self._record is None:
            self._record = record.build(self, _suggestions(self, self.catalog))
        return self._record


def _contexts(fact: dict) -> dict:
    """What a rule text sees: the fact split back into workload, candidate and derived (one pass)."""
    out = {"w_": {}, "c_": {}, "d_": {}}
    for k, v in fact.items():
        bucket = out.get(k[:2])
        if bucket is not None:
            bucket[k[2:]] = v
    return {"workload": out["w_"], "candidate": out["c_"], "derived": out["d_"]}


def _render(rule: Rule, text: str, fact: dict, where: str, ctx: dict | None = None) -> str:
    if not text:
        return ""
    ctx = ctx or _contexts(fact)
    try:
        return compiled_template(text).render(**ctx).strip()
    except Exception as exc:
        if not isinstance(exc, (TypeError, ValueError, AttributeError, ArithmeticError)):
            from jinja2.exceptions import TemplateError      # only a Jinja template can raise one
            if not isinstance(exc, TemplateError):
                raise
        raise InputError(Problem(f"template failed when the rule fired: {exc}", rule.file, rule.line, where)) from None


def _selected(effect: dict, fact: dict, catalog: Catalog) -> bool:
    for s in SELECTORS:
        if s not in effect:
            continue
        want = effect[s] if isinstance(effect[s], list) else [effect[s]]
        have = fact.get(prop(f"candidate.{s}"))
        if s == "gpu":
            want = [catalog.gpu(str(x)).id if catalog.knows_gpu(str(x)) else str(x) for x in want]
        if have not in want:
            return False
    return True


def _option(c: Plan, score: float, unit: str, w, contributions: list) -> ranking.Option:
    """A candidate as the ranking sees it: count, premium score, cost per unit of work, and the
    hours each card runs per unit (to turn a cost into a break-even price per GPU-hour)."""
    t = plan_time(w, c)
    if unit == "hour":
        hours = 1.0
    elif unit == "job":
        hours = t                 # the job's hours: training hours, or a batch job's (the kind's time figure)
    elif c.hours_per_unit is not None:      # a kind counted in its own units (1,000 images, a clip)
        hours = c.hours_per_unit
    else:
        hours = c.hours_per_million_tokens
    # a third-party listing is not an offer one can rent at (K21): such a candidate is ranked as unpriced
    listed = bool(c.price) and c.price.get("tier") == "listing"
    # on premises a rental quote is not what the hardware costs: only an owning cost (kind purchase) ranks
    rental_on_prem = w.constraints.deployment != "cloud" and bool(c.price) and c.price.get("kind") not in ("purchase", "owned")
    penalty = sum(x["weight"] for x in contributions if x["weight"] < 0)
    policy = sum(x["weight"] for x in contributions if x["weight"] > 0 and not x.get("proxy"))
    return ranking.Option(c.gpu.id, c.count or 0, score, None if listed or rental_on_prem else unit_cost(c, unit), hours, t,
                          penalty, policy)


def _entry(rule: Rule, because: str) -> dict:
    return {"id": rule.id, "title": rule.title, "file": rule.file, "line": rule.line, "source": list(rule.source),
            "because": because}


def _separating(a: str, b: str | None, contributions, positive=True) -> dict[str, float]:
    """Per rule, how much more it gave `a` than `b` (only the rules in a's favour)."""
    diff: dict[str, float] = {}
    for item in contributions[a]:
        diff[item["rule"]] = diff.get(item["rule"], 0) + item["weight"]
    for item in (contributions[b] if b else []):
        diff[item["rule"]] = diff.get(item["rule"], 0) - item["weight"]
    return {r: d for r, d in diff.items() if (d > 0 if positive else d < 0)}


def _decisive(r: ranking.Ranking, options, excluded, contributions, firings, kb, rule_index, winner,
              on_prem: bool = False) -> dict:
    """The rule (or the cost) that separates the winner from the runner-up on this ranking, or the
    exclusion that removed an option that would otherwise have won."""
    W = options[winner]
    unit = UNIT_LABELS[r.unit]
    would_win = sorted((o for g, o in options.items() if excluded[g] and (o.cost is not None or r.basis == "preference")
                        and r.key(o)[:-1] <= r.key(W)[:-1]), key=r.key)   # a tie broken only by the id counts
    basis = ""
    if r.basis == "preference":
        # review 17, F1: "No candidate has a known price" beside the summary's priced H100 plan, which a rule excluded
        priced_out = any(o.cost is not None for g, o in options.items() if excluded[g])
        basis = (("On premises without purchase prices (rental quotes are not what owned hardware costs): "
                  if on_prem else "No plan the rules kept has a known price (each priced one was excluded): " if priced_out
                  else "No candidate has a known price: ") + "ranked on the rules' preferences, then card count. ")
    if would_win:
        g = would_win[0].gpu
        ex = excluded[g][0].exclusion()
        return {"id": ex["rule"], "title": kb.rule(ex["rule"]).title, "file": ex["file"], "line": ex["line"], "source": ex["source"],
                "because": f"{basis}{g} would rank first but is excluded: {ex['reason']}"}
    pool = r.priced if r.basis == "cost" else r.order
    rest = [g for g in pool if g != winner]
    unpriced_note = ""
    if r.basis == "cost" and r.unpriced:
        be = [(g, r.break_even.get(g)) for g in r.unpriced[:3]]
        unpriced_note = " Without a price: " + "; ".join(
            f"{g} would win below {ranking.money(v)} per GPU-hour" if v else f"{g} (no break-even: its time per unit is unknown)"
            for g, v in be) + "."
    if not rest:
        if r.basis == "cost":
            return {**COST_RULE, "because": f"{winner} is the only priced candidate no rule excluded "
                                            f"({ranking.money(W.cost)} {unit}).{unpriced_note}"}
        return {**COST_RULE, "because": f"{winner} is the only candidate no rule excluded"
                                        + (" (no price ranked)." if W.cost is None else ".")}
    R = options[rest[0]]

    def rule_entry(prefix: str) -> dict | None:
        pos = _separating(winner, R.gpu, contributions)
        if not pos:
            return None
        rid = max(pos, key=lambda x: (pos[x], -rule_index[x]))
        rule = kb.rule(rid)
        f = next(x for x in firings if x.rule.id == rid and x.gpu in (winner, R.gpu, None))
        return _entry(rule, prefix + (f.text or rule.title))

    if r.basis == "preference":
        head = basis
        if W.score > R.score:
            e = rule_entry(head)
            if e:
                e["because"] += f" It separates {winner} (premium {W.premium:+.0%}) from {R.gpu} ({R.premium:+.0%})."
                return e
        return {**COST_RULE, "because": head + f"Equal preferences: {winner} needs {W.count} card(s), {R.gpu} {R.count}."}
    if r.objective in ("time", "cards") and r.key(W)[0] != r.key(R)[0]:
        what = (f"{W.time:,.1f} vs {R.time:,.1f} {r.time_unit}"
                if r.objective == "time" and W.time is not None and R.time is not None else f"{W.count} vs {R.count} cards")
        return {**OBJECTIVE_RULE, "because": f"Objective {r.objective}: {winner} {what} for {R.gpu}; "
                                             f"{ranking.money(W.cost)} vs {ranking.money(R.cost)} {unit}.{unpriced_note}"}
    if r.objective == "cost":
        lead = min((options[g] for g in r.priced), key=lambda o: (o.effective, o.count, o.gpu))
        if lead is not W and W.effective > lead.effective:
            D = options[r.dominated_by[lead.gpu]]     # ranked behind it: the cost ranking found it dominated
            return {**DOMINANCE_RULE, "because": _dominance_because(r, W, lead, D, contributions, kb) + unpriced_note,
                    "beaten": lead.gpu, "beaten_by": D.gpu}
    gap = ranking.pct(W.cost, R.cost)
    worth = (ranking.factor(W.premium) / ranking.factor(R.premium) - 1) * 100   # what W may cost more and still win
    if W.cost > R.cost * (1 + 1e-9):
        more = f"{gap:.0f}% more" if gap >= 0.5 else "under 1% more"
        e = rule_entry(f"{winner} costs {more} {unit} than {R.gpu} ({ranking.money(W.cost)} vs "
                       f"{ranking.money(R.cost)}); the rules in its favour are worth {worth:.0f}%: {winner} wins. ")
        if e:
            return e
    if abs(W.cost - R.cost) <= R.cost * 1e-9 and W.score > R.score:
        e = rule_entry(f"{winner} and {R.gpu} cost the same {unit} ({ranking.money(W.cost)}); the rules favour {winner} by {worth:.0f}%. ")
        if e:
            return e
    saving = -ranking.pct(W.cost, R.cost)
    because = (f"Cost decides: {winner} costs {ranking.money(W.cost)} {unit}, {R.gpu} {ranking.money(R.cost)}: "
               f"{winner} is {saving:.0f}% cheaper")
    if R.score > W.score:
        # both on one base: what the runner-up costs more, against what the rules say it is worth more
        because += (f"; {R.gpu} costs {ranking.pct(R.cost, W.cost):.0f}% more and the rules in its favour are worth "
                    f"{(ranking.factor(R.premium) / ranking.factor(W.premium) - 1) * 100:.0f}%, less than that")
    elif W.score > R.score:
        because += f", and the rules also favour {winner} by {worth:.0f}%"
    return {**COST_RULE, "because": because + "." + unpriced_note}


def _dominance_because(r: ranking.Ranking, W: ranking.Option, lead: ranking.Option, D: ranking.Option, contributions, kb) -> str:
    """Why `lead`, first on the rules' premiums, is not the answer: a plan dominates it (costs less, runs
    faster, no more against it), and what favoured `lead` are rules of thumb about cost and speed
    (`proxy: true`); then, if the winner is not that plan, that it is the cheapest of the rest."""
    unit = UNIT_LABELS[r.unit]
    if D.time is not None and lead.time is not None:
        t = f"{D.time:,.3g} vs {lead.time:,.3g} {r.time_unit}"
    else:
        t = f"{D.hours_per_unit:,.3g} vs {lead.hours_per_unit:,.3g} h {unit}"
    favour = [kb.rule(x).title for x in _separating(lead.gpu, D.gpu, contributions)]
    out = (f"{lead.gpu} ranks first on the rules' premiums, but {D.gpu} costs less ({ranking.money(D.cost)} vs "
           f"{ranking.money(lead.cost)} {unit}) and is faster ({t}), with no more against it: the rules of thumb in "
           f"{lead.gpu}'s favour ({'; '.join(favour) or 'none'}) stand for cost and speed, which these figures measure.")
    if D is not W:
        out += (f" Of the plans no other beats on both, {W.gpu} is the cheapest after the rules' premiums "
                f"({ranking.money(W.cost)} {unit}, {W.premium:+.0%}).")
    return out


def decide(est: Estimate, kb: KnowledgeBase, catalog: Catalog) -> Decision:
    wf, cfs = facts_for(est, catalog)
    wf["id"] = "workload"
    for c in cfs:
        c["id"] = c["c_gpu"]
    run = runner(kb)
    firings: list[Firing] = []
    order = 0
    rule_index = {r.id: i for i, r in enumerate(kb.rules)}
    rank = {r.id: (r.priority, i) for i, r in enumerate(kb.rules)}
    by_id = kb.by_id
    fact_by_id = {c["id"]: c for c in cfs}
    fact_by_id["workload"] = wf
    scores = {c["id"]: 0.0 for c in cfs}
    contributions = {c["id"]: [] for c in cfs}
    excluded: dict[str, list[Firing]] = {c["id"]: [] for c in cfs}
    warnings, cand_warn = [], {c["id"]: [] for c in cfs}
    bases: dict[str, list] = {}      # per rule: each effect as a firing records it (texts unrendered), selective or not
    for stratum in range(kb.strata):
        fired = run.fire(stratum, "workload", [wf]) + run.fire(stratum, "candidate", cfs)
        fired.sort(key=lambda rf: (rank[rf[0]], rf[1]))
        for rid, fid in fired:
            rule = by_id[rid]
            fact = fact_by_id[fid]
            bindings = {f: fact.get(prop(f)) for f in rule.facts_used}
            effects = bases.get(rid)
            if effects is None:
                effects = bases[rid] = [(kind, base, any(s in base for s in SELECTORS)) for kind, base in (
                    (kind, {"kind": kind, **{k: v for k, v in (eff.items() if isinstance(eff, dict) else ())
                                             if k not in ("text", "reason", "mitigation")}}) for kind, eff in rule.effects.items())]
            for kind, base, selective in effects:
                order += 1
                f = Firing(order, rule, fid, fact.get("c_gpu"), bindings, dict(base), fact)
                firings.append(f)
                if kind in ("prefer", "avoid", "exclude"):
                    if selective:
                        targets = [c for c in cfs if _selected(base, c, catalog)]
                    else:
                        targets = cfs if fid == "workload" else [fact]
                    for c in targets:
                        if kind == "exclude":
                            excluded[c["id"]].append(f)
                        else:
                            w = base["weight"] * (1 if kind == "prefer" else -1)
                            scores[c["id"]] += w
                            contributions[c["id"]].append({"rule": rid, "weight": w, **({"proxy": True} if base.get("proxy") else {})})
                elif kind in ("warn", "note"):
                    (warnings if fid == "workload" else cand_warn[fid]).append(f)
                elif kind == "derive":
                    targets = [wf] + cfs if fid == "workload" else [fact]
                    for name, value in rule.effects[kind].items():
                        for t in targets:
                            t[prop(f"derived.{name}")] = value

    by_gpu = {c.gpu.id: c for c in est.candidates}
    w = est.workload
    unit = unit_of_work(w)
    options = {c["id"]: _option(by_gpu[c["id"]], scores[c["id"]], unit, w, contributions[c["id"]]) for c in cfs if c.get("c_fits")}
    alive = [options[g] for g in options if not excluded[g]]
    ranked = ranking.rank(alive, unit, w.objective)
    ranked.time_unit = w.kind_spec.time_unit
    ranking_ids = ranked.order
    winner = ranked.winner
    runner_up = ranking_ids[1] if len(ranking_ids) > 1 else None
    decisive = None
    closest = None
    if not winner and w.kind_spec.closest_plan:
        winner, ranking_ids, decisive, closest, near_ranked = _closest(est, options, excluded, unit)
        ranked = near_ranked or ranked
        runner_up = ranking_ids[1] if len(ranking_ids) > 1 else None
        if winner:
            warnings += cand_warn[winner]
    elif winner:
        warnings += cand_warn[winner]
        decisive = _decisive(ranked, options, excluded, contributions, firings, kb, rule_index, winner,
                             w.constraints.deployment != "cloud")
        if decisive and decisive.get("file", "").startswith("advisor/") and w.kind_spec.cost_sources:
            # a kind counted in its own units cites what its cost ranking rests on (not per-token pricing)
            decisive = {**decisive, "source": list(w.kind_spec.cost_sources)}
        if ranked.basis == "cost" and len(ranked.priced) > 1:
            runner_up = ranked.priced[1]
        elif ranked.basis == "cost" and ranked.unpriced:
            runner_up = ranked.unpriced[0]
    return Decision(est, kb, firings, scores, contributions, excluded, ranking_ids, winner, runner_up, decisive,
                    warnings, cand_warn, catalog, cfs, ranked, closest=closest)


def _closest(est: Estimate, options: dict, excluded: dict, unit: str):
    """When no candidate is left and some were excluded only for missing the deadline or service
    level, the one that comes closest (then the cheapest after premiums) is the answer, labelled so:
    a team told "no GPU" learns nothing, a team told how near the best plan comes can decide to relax
    the target or accept the wait. Returns (winner, order, decisive entry, closest, their ranking) or Nones."""
    w = est.workload
    by_gpu = {c.gpu.id: c for c in est.candidates}
    near = [g for g in options if by_gpu[g].misses is not None and record.missed_only(excluded[g])]
    if not near:
        return None, [], None, None, None
    ranked = ranking.rank([options[g] for g in near], unit, w.objective)
    best = nearest(w, [by_gpu[g] for g in near])
    near.sort(key=lambda g: (closeness(w, by_gpu[g], best),) + ranked.key(options[g]))
    ranked.order = near
    ranked.priced = [g for g in near if g in ranked.priced]
    best = by_gpu[near[0]]
    gap = shortfall(w, best)
    what = w.kind_spec.goal
    # plans that meet the target but a budget excluded: the choice the budget forces, said (second review, n2)
    held = sorted((by_gpu[g] for g in options if excluded[g] and by_gpu[g].misses is None and by_gpu[g].usd_per_hour
                   and any(f.rule.id == "over-budget" for f in excluded[g])), key=lambda c: c.usd_per_hour)
    over = (f" Within the {what} but over the ${w.constraints.budget_usd_per_hour:,.2f}/h budget: {held[0].count} x "
            f"{held[0].gpu.id} at ${held[0].usd_per_hour:,.2f}/h." if held else "")
    because = (f"Every candidate {'within the budget ' if held else ''}misses the {what}; {best.gpu.id} comes closest: {best.misses}"
               f" ({times(gap)} the target). " + (f"Next: {near[1]} at {times(shortfall(w, by_gpu[near[1]]))}." if len(near) > 1 else "")
               + over)
    closest = {"missed": best.misses, "shortfall": round(gap, 4)}
    if held:
        closest["over_budget"] = {"gpu": held[0].gpu.id, "count": held[0].count, "usd_per_hour": rounded(held[0].usd_per_hour),
                                  "text": over.strip()}
    return near[0], near, {**CLOSEST_RULE, "because": because.strip()}, closest, ranked


def _suggestions(d: Decision, catalog: Catalog) -> list[dict]:
    """Settings the user fixed that make the plan at least 25% dearer (after the rules' premiums) than
    the same workload decided with the knob turned, each with that decision's plan and saving."""
    if not d.winner or not d.ranked or d.ranked.basis != "cost":
        return []
    now = d.ranked.options[d.winner]
    if now.cost is None:
        return []
    unit = d.ranked.unit
    out = []
    missed = d.estimate.candidate(d.winner).misses is not None
    for change, w2 in knobs.knob_alternatives(d.estimate.workload, missed):
        alt = decide(kinds.estimate(w2, catalog), d.kb, catalog)
        if not alt.winner or not alt.ranked or alt.ranked.basis != "cost" or alt.ranked.unit != unit:
            continue
        o = alt.ranked.options[alt.winner]
        if o.cost is None or o.effective > now.effective * (1 - planner.SUGGEST_SAVING):
            continue
        c = alt.estimate.candidate(alt.winner)
        saving = 1 - o.cost / now.cost
        # the target the turned plan meets where the answer misses it, named once for the field and the text
        meets = d.estimate.workload.kind_spec.goal if missed and c.misses is None else None
        out.append({"change": change,
                    "plan": {"gpu": c.gpu.id, "count": c.count, "nodes": c.nodes, **c.layout.degrees(),
                             "zero_stage": c.zero_stage, "activation_checkpointing": c.activation_checkpointing,
                             "usd_per_hour": rounded(c.usd_per_hour), "unit_cost": rounded(o.cost), "unit": unit,
                             "unit_label": UNIT_LABELS[unit],
                             "effective_cost": rounded(o.effective)},
                    "saving": round(saving, 4),
                    "meets_target": meets,
                    "saving_after_premiums": round(1 - o.effective / now.effective, 4),
                    "text": (f"With {change}: {c.count} x {c.gpu.id} at {ranking.money(o.cost)} {UNIT_LABELS[unit]} "
                             f"instead of {ranking.money(now.cost)} ("
                             + (f"{saving:.0%} less" if saving >= 0 else f"{-saving:.0%} more")
                             + (f"; {1 - o.effective / now.effective:.0%} less after the rules' premiums" if abs(
                                 (1 - o.effective / now.effective) - saving) >= 0.01 else "") + ")"
                             + (f", and it meets the {meets} the current plan misses" if meets else "") + ".")})
    return out
