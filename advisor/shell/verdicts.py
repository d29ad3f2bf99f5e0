"""A rule example that states the verdict its rule changes (docs/rules.md, "Verdict examples"):

    - workload: {model: gpt-oss-120b, concurrency: 1, constraints: {gpus: [rtx-pro-6000, l40s]}}
      verdict: {recommends: rtx-pro-6000}

The workload (inline, or a workload file beside the rule file) is decided twice on the catalog in
force, with the knowledge base in force and without the example's rule. `recommends: GPU` (and
`count: N`) holds when the rule's decision recommends it and the decision without the rule does not;
`excludes: GPU` when this rule excludes the GPU and, without the rule, it is the one recommended;
`decisive: ID` also names the decisive rule of the decision with the rule. A weight too small to
move the ranking, or an exclusion of a GPU that would lose anyway, fails its own example.
"""
from __future__ import annotations

from pathlib import Path

from advisor import HOME
from advisor.base import yamlio
from advisor.base.errors import InputError
from advisor.inputs import catalog as catalog_mod
from advisor.inputs import workload as workload_mod
from advisor.inputs.catalog import Catalog
from advisor.judgement.decision import Decision, decide
from advisor.judgement.knowledge import KnowledgeBase, Rule
from advisor.kinds import estimate


def without(kb: KnowledgeBase, rule: Rule) -> KnowledgeBase:
    """The knowledge base less one rule (its own digest: the engine keeps one runner per digest)."""
    return KnowledgeBase([r for r in kb.rules if r.id != rule.id], kb.files, f"{kb.digest} without {rule.id}", kb.derived)


def _workload(rule: Rule, given) -> tuple[dict, str]:
    """The example's workload mapping and the name its errors carry."""
    if isinstance(given, dict):
        return dict(given), f"{rule.where} (example workload)"
    path = Path(given)
    if not path.is_absolute():
        path = (HOME / rule.file).parent / path          # beside the rule file, as the rule file names it
    data = yamlio.load(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: a workload file holds a mapping")
    return dict(data), str(path)


def _winner(d: Decision) -> tuple[str | None, int | None]:
    if d.winner is None:
        return None, None
    return d.winner, d.record["recommendation"].get("count")


def _said(gpu: str | None, count: int | None) -> str:
    return "no GPU" if gpu is None else f"{count} x {gpu}" if count else gpu


def check(rule: Rule, example: dict, kb: KnowledgeBase, catalog: Catalog | None = None) -> str | None:
    """Why the verdict example fails (None when it holds)."""
    cat = catalog or catalog_mod.default()
    try:
        data, source = _workload(rule, example["workload"])
        est = estimate(workload_mod.parse(data, cat, source), cat)
    except InputError as exc:
        return f"the workload cannot be decided: {exc}"
    verdict = example["verdict"]
    with_rule = decide(est, kb, cat)
    without_rule = decide(est, without(kb, rule), cat)
    got, got_count = _winner(with_rule)
    alt, alt_count = _winner(without_rule)
    if "recommends" in verdict:
        want, count = verdict["recommends"], verdict.get("count")
        if got != want or (count is not None and got_count != count):
            return f"recommends {_said(got, got_count)}, not {_said(want, count)}"
        if alt == want and (count is None or alt_count == count):
            return (f"recommends {_said(alt, alt_count)} without the rule too: the rule does not change this verdict "
                    "(a weight too small to move the ranking?)")
    else:
        gpu = verdict["excludes"]
        if not any(f.rule.id == rule.id for f in with_rule.exclusions.get(gpu, ())):
            return f"does not exclude {gpu} (recommends {_said(got, got_count)})"
        if alt != gpu:
            return (f"without the rule {_said(alt, alt_count)} is recommended, not {gpu}: "
                    "the exclusion does not change this verdict")
    decisive = verdict.get("decisive")
    if decisive and (with_rule.decisive or {}).get("id") != decisive:
        return f"the decisive rule is {(with_rule.decisive or {}).get('id')}, not {decisive}"
    return None
