"""The decision: fire the knowledge base on an estimate's facts, apply the effects, rank the
candidates, find the decisive rule, and build the decision record (JSON-ready)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from advisor import __version__
from advisor.catalog import Catalog, _norm
from advisor.engine import runner
from advisor.errors import InputError, Problem
from advisor.estimator import Estimate
from advisor.facts import facts_for, prop
from advisor.knowledge import SELECTORS, KnowledgeBase, Rule, compiled_template

COST_RULE = {"id": "ranking-cost-per-unit-of-work", "title": "Equal scores: the lower cost per unit of work wins",
             "file": "advisor/decision.py", "line": None,
             "source": ["T07", "C16"]}


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
        if kind == "exclude" and "reason" not in self.effect:
            self.effect["reason"] = _render(self.rule, eff.get("reason", ""), self.fact, "then.exclude.reason", self._ctx()) or self.text
        return self.effect

    def exclusion(self) -> dict:
        return {"rule": self.rule.id, "reason": self.rendered()["reason"], "source": list(self.rule.source),
                "file": self.rule.file, "line": self.rule.line}

    def warning(self) -> dict:
        e = self.rendered()
        return {"rule": self.rule.id, "source": list(self.rule.source), "severity": e["severity"], "text": e["text"],
                "kind": e["kind"], "gpu": self.gpu}


@dataclass(eq=False)
class Decision:
    """What the knowledge base made of an estimate: scores, exclusions, ranking, decisive rule."""

    estimate: Estimate
    kb: KnowledgeBase
    firings: list[Firing]
    scores: dict[str, float]
    contributions: dict[str, list[dict]]
    exclusions: dict[str, list[Firing]]          # per candidate, the exclude firings
    ranking: list[str]
    winner: str | None
    runner_up: str | None
    decisive: dict | None
    advice: list[Firing]                         # warn/note firings on the workload or the winner
    candidate_advice: dict[str, list[Firing]] = field(default_factory=dict)
    catalog: Catalog | None = field(default=None, repr=False)
    facts: list = field(default_factory=list, repr=False)
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
            self._record = _record(self, self.catalog, self.facts)
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
            want = [catalog.gpu(str(x)).id if _norm(str(x)) in catalog._gpu_names else str(x) for x in want]
        if have not in want:
            return False
    return True


def _unit_name(c: dict) -> str:
    if c.get("w_mode") in ("training", "fine-tuning"):
        return "USD per job" if "c_usd_per_job" in c else "USD per hour"
    return "USD per million tokens" if c.get("w_latency") == "batch" and "c_usd_per_million_tokens" in c else "USD per hour"


def _unit_cost(c: dict):
    """Cost per unit of work: per job for training (C16); for batch inference per million tokens
    (T07: throughput is the product); for interactive inference the hour of serving the workload's
    users, since every fitting layout serves the same users and extra speed is latency, not output (T06)."""
    if c.get("w_mode") in ("training", "fine-tuning"):
        keys = ("c_usd_per_job", "c_usd_per_hour")
    elif c.get("w_latency") == "batch":
        keys = ("c_usd_per_million_tokens", "c_usd_per_hour")
    else:
        keys = ("c_usd_per_hour",)
    for k in keys:
        if k in c:
            return c[k]
    return None


def decide(est: Estimate, kb: KnowledgeBase, catalog: Catalog) -> Decision:
    wf, cfs = facts_for(est)
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
                                             if k not in ("text", "reason")}}) for kind, eff in rule.effects.items())]
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
                            contributions[c["id"]].append({"rule": rid, "weight": w})
                elif kind in ("warn", "note"):
                    (warnings if fid == "workload" else cand_warn[fid]).append(f)
                elif kind == "derive":
                    targets = [wf] + cfs if fid == "workload" else [fact]
                    for name, value in rule.effects[kind].items():
                        for t in targets:
                            t[prop(f"derived.{name}")] = value

    def key(c):
        cost = _unit_cost(c)
        return (-scores[c["id"]], cost is None, cost if cost is not None else 0, c.get("c_count", 0), c["id"])

    alive = sorted((c for c in cfs if not excluded[c["id"]]), key=key)
    ranking = [c["id"] for c in alive]
    winner = ranking[0] if ranking else None
    runner_up = ranking[1] if len(ranking) > 1 else None
    decisive = None
    if winner:
        warnings += cand_warn[winner]
        wc = next(c for c in cfs if c["id"] == winner)
        better = [c for c in sorted(cfs, key=key) if key(c) < key(wc) and c.get("c_fits") and excluded[c["id"]]]
        if better:
            ex = excluded[better[0]["id"]][0].exclusion()
            decisive = {"id": ex["rule"], "title": kb.rule(ex["rule"]).title, "file": ex["file"], "line": ex["line"], "source": ex["source"],
                        "because": f"{better[0]['id']} would rank first but is excluded: {ex['reason']}"}
        elif runner_up:
            diff: dict[str, float] = {}
            for item in contributions[winner]:
                diff[item["rule"]] = diff.get(item["rule"], 0) + item["weight"]
            for item in contributions[runner_up]:
                diff[item["rule"]] = diff.get(item["rule"], 0) - item["weight"]
            positive = {r: d for r, d in diff.items() if d > 0}
            if positive and scores[winner] > scores[runner_up]:
                rid = max(positive, key=lambda r: (positive[r], -rule_index[r]))
                rule = kb.rule(rid)
                f = next(x for x in firings if x.rule.id == rid and x.gpu in (winner, runner_up, None))
                decisive = {"id": rid, "title": rule.title, "file": rule.file, "line": rule.line, "source": list(rule.source),
                            "because": (f.text or rule.title) + f" It separates {winner} (score {scores[winner]:g}) "
                                       f"from {runner_up} (score {scores[runner_up]:g})."}
            else:
                rc = next(c for c in cfs if c["id"] == runner_up)
                a, b = _unit_cost(wc), _unit_cost(rc)
                unit = _unit_name(wc)
                if a is not None and b is not None:
                    what = f"Equal scores: {winner} costs {a:,.2f} vs {b:,.2f} for {runner_up} {unit}."
                elif a is not None:
                    what = f"Equal scores: {winner} has a known price ({a:,.2f} {unit}) and {runner_up} has none."
                    priced = [c for c in alive[1:] if _unit_cost(c) is not None and scores[c["id"]] == scores[winner]]
                    if priced:
                        what += f" The next priced option with the same score, {priced[0]['id']}, costs {_unit_cost(priced[0]):,.2f}."
                else:
                    what = f"Equal scores and no known prices: {winner} needs {wc.get('c_count')} card(s), {runner_up} {rc.get('c_count')}."
                decisive = {**COST_RULE, "because": what}
        else:
            decisive = {**COST_RULE, "because": f"{winner} is the only candidate no rule excluded"}
    return Decision(est, kb, firings, scores, contributions, excluded, ranking, winner, runner_up, decisive,
                    warnings, cand_warn, catalog, cfs)


def _record(d: Decision, catalog: Catalog, cfs: list[dict]) -> dict:
    d.excluded, d.warnings, d.candidate_warnings      # every rule text the record shows, rendered now
    est = d.estimate
    by_id = {c.gpu.id: c for c in est.candidates}
    rec: dict = {}
    if d.winner:
        c = by_id[d.winner]
        rec["recommendation"] = {"gpu": c.gpu.id, "name": c.gpu.name, "count": c.count, "nodes": c.nodes,
                                 "tp": c.tp, "pp": c.pp, "dp": c.dp, "usd_per_hour": c.usd_per_hour,
                                 "usd_per_million_tokens": c.usd_per_million_tokens, "usd_per_job": c.usd_per_job,
                                 "price": c.price, "price_unknown": c.price_unknown, "tco": c.tco}
    else:
        rec["recommendation"] = None
        rec["no_candidate"] = {g: [e["rule"] for e in ex] for g, ex in d.excluded.items()}
    rec["decisive_rule"] = d.decisive
    if d.runner_up:
        r = by_id[d.runner_up]
        why = [f"{x['rule']} ({x['weight']:+g})" for x in d.contributions[d.runner_up]]
        rec["runner_up"] = {"gpu": r.gpu.id, "count": r.count, "score": d.scores[d.runner_up],
                            "why": (f"score {d.scores[d.runner_up]:g} vs {d.scores[d.winner]:g}"
                                    + (f": {', '.join(why)}" if why else "") + f"; decided by {d.decisive['id']}")}
    else:
        rec["runner_up"] = None
    rec["candidates"] = [{"gpu": g, "count": by_id[g].count, "fits": by_id[g].fits, "excluded": bool(d.excluded[g]),
                          "excluded_by": d.excluded[g], "score": d.scores[g], "contributions": d.contributions[g],
                          "rank": (d.ranking.index(g) + 1) if g in d.ranking else None,
                          "warnings": d.candidate_warnings.get(g, [])}
                         for g in sorted(d.scores, key=lambda g: (g not in d.ranking, d.ranking.index(g) if g in d.ranking else 0, g))]
    rec["estimate"] = est.as_dict()
    shown = {None, d.winner, d.runner_up}        # rule texts are rendered for what a memo or explain shows
    rec["trace"] = [{"order": f.order, "rule": f.rule.id, "title": f.rule.title, "file": f.rule.file, "line": f.rule.line,
                     "source": list(f.rule.source), "gpu": f.gpu, "bindings": f.bindings, "effect": f.effect,
                     "because": f.text if f.gpu in shown else None, "overrides": f.rule.overrides,
                     "replaces": f.rule.replaces} for f in d.firings]
    rec["warnings"] = d.warnings
    rec["inputs"] = est.workload.inputs()
    rec["defaults_filled"] = list(est.workload.defaults)
    rec["versions"] = {"advisor": __version__, "rules_sha256": d.kb.digest, "catalog_sha256": catalog.digest,
                       "rule_files": d.kb.files, "engine": "durable_rules 2.0.28"}
    return rec
