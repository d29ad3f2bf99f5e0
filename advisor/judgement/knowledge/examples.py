"""The checks of a rule's examples (docs/rules.md, "Examples"): a fact example gives the facts and
says whether the rule fires on them; a verdict example gives a whole workload and the verdict the
rule changes on it (`rules test` runs both: advisor/shell/rulestools.py, advisor/shell/verdicts.py).
"""
from __future__ import annotations

from advisor.base import yamlio
from advisor.base.errors import Collector
from advisor.judgement.facts import FACTS
from advisor.judgement.knowledge.language import ID_RE

FACT_FORM = "an example is {given: {workload: {...}, candidate: {...}}, fires: true|false}"
VERDICT_FORM = ("a verdict example is {workload: {...} or FILE, verdict: {recommends: GPU, count: N} "
                "or {excludes: GPU}, and optionally decisive: RULE-ID}")


def check_examples(r: dict, col: Collector, line: int, vocab: dict | None) -> list:
    """The rule's examples, each checked for its form (problems go to `col`)."""
    examples = r.get("examples") or []
    if not isinstance(examples, list):
        col.add("examples must be a list of {given: {...}, fires: true|false} or {workload: ..., verdict: {...}}",
                yamlio.line_of(r, "examples", line), "examples")
        return []
    for i, ex in enumerate(examples):
        eline = yamlio.line_of(examples, i, line)
        if isinstance(ex, dict) and "verdict" in ex:
            _check_verdict(ex, col, eline, vocab)
        elif not isinstance(ex, dict) or not isinstance(ex.get("given"), dict) or not isinstance(ex.get("fires"), bool):
            col.add(f"{FACT_FORM}, or {VERDICT_FORM}", eline, "examples")
        else:
            _check_given(ex["given"], col, eline)
    return examples


def _check_given(given: dict, col: Collector, eline: int) -> None:
    for scope, vals in given.items():
        if scope not in ("workload", "candidate", "derived") or not isinstance(vals, dict):
            col.add(f"example 'given' has scopes workload, candidate, derived (got '{scope}')", eline, "examples")
            continue
        for k in vals:
            name = f"{scope}.{k}"
            if scope != "derived" and name not in FACTS:
                col.add(f"example uses unknown fact '{name}'", eline, "examples")


def _check_verdict(ex: dict, col: Collector, eline: int, vocab: dict | None) -> None:
    """A workload, inline or a file, and one GPU the rule makes recommended or excluded."""
    verdict, work = ex.get("verdict"), ex.get("workload")
    if set(ex) != {"workload", "verdict"} or not isinstance(verdict, dict) or not (
            isinstance(work, dict) or (isinstance(work, str) and work.strip())):
        col.add(VERDICT_FORM, eline, "examples")
        return
    kinds = [k for k in ("recommends", "excludes") if k in verdict]
    extra = set(verdict) - {"recommends", "excludes", "count", "decisive"}
    if len(kinds) != 1 or extra or ("count" in verdict and kinds != ["recommends"]):
        col.add(VERDICT_FORM, eline, "examples")
        return
    gpu = verdict[kinds[0]]
    gpus = (vocab or {}).get("candidate.gpu")
    if not isinstance(gpu, str) or (gpus and gpu not in gpus):
        col.add(f"verdict {kinds[0]}: unknown GPU {gpu!r} (a catalog GPU id)", eline, "examples")
    count = verdict.get("count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        col.add("verdict count: a whole number of GPUs, 1 or more", eline, "examples")
    decisive = verdict.get("decisive")
    if decisive is not None and (not isinstance(decisive, str) or not ID_RE.match(decisive)):
        col.add("verdict decisive: the id of the rule that decides the verdict", eline, "examples")
