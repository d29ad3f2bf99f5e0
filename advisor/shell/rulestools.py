"""`gpu-advisor rules lint|test|list|coverage|doc` and `gpu-advisor facts`."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from advisor import HOME
from advisor.numbers import estimate
from advisor.inputs.catalog import Catalog
from advisor.judgement.engine import runner
from advisor.judgement.facts import prop
from advisor.judgement.knowledge import KnowledgeBase, Node
from advisor.shell import verdicts

DOC_PATH = HOME / "docs" / "knowledge-base.md"


def example_fact(given: dict) -> dict:
    fact = {"id": "example"}
    for scope, vals in given.items():
        for k, v in vals.items():
            fact[prop(f"{scope}.{k}")] = v
    return fact


@dataclass
class TestRun:
    """What `rules test` ran and found: every example counted once, as passed or failed."""

    rules: int = 0                   # rules with at least one example
    examples: int = 0                # examples run (fires and verdicts)
    verdicts: int = 0                # of which verdicts on a whole workload
    failures: list[str] = field(default_factory=list)      # one line per failed example
    problems: list[str] = field(default_factory=list)      # rules whose examples leave a case untested
    untested: list[str] = field(default_factory=list)      # rules without examples

    @property
    def ok(self) -> bool:
        return not (self.failures or self.problems or self.untested)

    def summary(self) -> str:
        verdicts = f" ({self.verdicts} of them verdicts on a whole workload)" if self.verdicts else ""
        lines = [f"{self.examples} examples of {self.rules} {_plural(self.rules, 'rule')}{verdicts}: "
                 f"{self.examples - len(self.failures)} passed, {len(self.failures)} failed"]
        if self.problems:
            lines.append(f"{len(self.problems)} {_plural(len(self.problems), 'rule')} lack an example that fires "
                         "or one that does not")
        if self.untested:
            lines.append(f"{len(self.untested)} {_plural(len(self.untested), 'rule')} "
                         f"{'has' if len(self.untested) == 1 else 'have'} no examples: {', '.join(self.untested)}")
        return "\n".join(lines)


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def untested_rules(kb: KnowledgeBase) -> list[str]:
    """The rules without an example, as `ID (FILE:LINE)`: lint warns of them, `rules test` fails them."""
    return [f"{r.id} ({r.where})" for r in kb.rules if not r.examples]


def run_examples(kb: KnowledgeBase, full: KnowledgeBase | None = None, catalog: Catalog | None = None) -> TestRun:
    """Every example of every rule of `kb`: a fact example through the real engine, a verdict example
    through the whole decision with and without its rule (in `full`, the knowledge base in force:
    the shipped rules with the user's; `kb` itself when not given)."""
    run = runner(kb)
    out = TestRun()
    for r in kb.rules:
        if not r.examples:
            out.untested.append(f"{r.id} ({r.where})")
            continue
        out.rules += 1
        facts = [ex for ex in r.examples if "verdict" not in ex]
        for i, ex in enumerate(r.examples):
            out.examples += 1
            if "verdict" in ex:
                out.verdicts += 1
                why = verdicts.check(r, ex, full or kb, catalog)
                if why:
                    out.failures.append(f"{r.where}: {r.id}: example {i + 1}: {why}")
                continue
            fired = {rid for rid, _ in run.fire(r.stratum, r.scope, [example_fact(ex["given"])])}
            if (r.id in fired) != ex["fires"]:
                out.failures.append(f"{r.where}: {r.id}: example {i + 1} should {'fire' if ex['fires'] else 'not fire'} "
                                    f"but {'fired' if r.id in fired else 'did not'}")
        if {ex["fires"] for ex in facts} != {True, False}:
            out.problems.append(f"{r.where}: {r.id}: needs at least one example that fires and one that does not")
    return out


def coverage(kb: KnowledgeBase, catalog: Catalog) -> tuple[list[tuple[str, str]], list[str]]:
    ids = list(catalog.knowledge.get("heuristics", {}))
    rows, missing = [], []
    for k in ids:
        where = [r.where + f" ({r.id})" for r in kb.rules if k in r.source]
        if k in estimate.KNOWLEDGE:
            where.append("estimator: " + estimate.KNOWLEDGE[k])
        if where:
            rows.append((k, "; ".join(where)))
        else:
            missing.append(k)
    return rows, missing


def _cond_text(c, indent="") -> list[str]:
    if isinstance(c, Node):
        out = [f"{indent}- {c.kind} of:"]
        for x in c.items:
            out += _cond_text(x, indent + "  ")
        return out
    v = "" if c.op in ("exists", "not_exists") else f" `{list(c.value) if isinstance(c.value, tuple) else c.value}`"
    return [f"{indent}- `{c.fact}` {c.op.replace('_', ' ')}{v}"]


def doc_text(kb: KnowledgeBase, shipped: bool = True) -> str:
    """The reference of every rule, generated from the rule files (docs/knowledge-base.md); `shipped`
    false: a knowledge base with a user's rules, titled as such (never the shipped reference)."""
    out = (["# The shipped knowledge base", "", "Generated by `gpu-advisor rules doc` from `rules/*.yaml`; do not edit by hand.", ""]
           if shipped else ["# Your knowledge base", "",
                            f"Generated by `gpu-advisor rules doc` from {', '.join(f'`{f}`' for f in kb.files)}.", ""])
    groups: dict[str, list] = {}
    for r in kb.rules:
        groups.setdefault(r.group, []).append(r)
    for g, rules in groups.items():
        out += [f"## {g}", ""]
        for r in rules:
            out += [f"### `{r.id}`: {r.title}", "", f"Source: {', '.join(r.source)}. Defined in `{r.where}`.", "", "When:", ""]
            out += _cond_text(r.when)
            out += ["", "Then:", ""]
            for k, v in r.effects.items():
                desc = ", ".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict) else str(v)
                out.append(f"- {k}: {desc}")
            if r.because:
                out += ["", f"Because: {r.because}"]
            out += ["", "Examples:", ""]
            for ex in r.examples:
                out.append(f"- {_example_text(ex)}")
            out.append("")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).rstrip() + "\n"


def _example_text(ex: dict) -> str:
    """One example in the reference: the facts and whether the rule fires, or the verdict it changes."""
    if "verdict" in ex:
        v, work = ex["verdict"], ex["workload"]
        said = (f"recommends {v['count']} x {v['recommends']}" if v.get("count") else f"recommends {v['recommends']}"
                ) if "recommends" in v else f"excludes {v['excludes']}, which wins without it"
        on = work if isinstance(work, str) else ", ".join(f"{k}={w}" for k, w in work.items())
        return f"verdict: {said}{'; decided by ' + v['decisive'] if v.get('decisive') else ''} (workload: {on})"
    given = "; ".join(f"{s}: " + ", ".join(f"{k}={v}" for k, v in vals.items()) for s, vals in ex["given"].items())
    return f"{'fires' if ex['fires'] else 'does not fire'}: {given}"
