"""The one path from a workload to a decision: parse -> estimate -> decide, with the record's
provenance (the rule folders and price files the decision was made with). `recommend`, `ask`,
`explain`, `sweep` and the replay of transcripts all decide through `advise`; a `Setup` is what they
decide with, loaded once.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from advisor.base.files import note_read
from advisor.inputs import catalog as catalog_mod
from advisor.inputs import workload as workload_mod
from advisor.inputs.catalog import Catalog
from advisor.inputs.workload import Workload
from advisor.judgement import knowledge
from advisor.judgement.decision import Decision, decide
from advisor.judgement.knowledge import KnowledgeBase
from advisor.kinds import estimate


@dataclass(frozen=True)
class Setup:
    """What decisions are made with: the catalog (with any price files), the knowledge base, and the
    rule folders (beyond the shipped rules/) and price files they came from, as the user named them."""

    catalog: Catalog
    kb: KnowledgeBase
    rule_dirs: tuple[Path, ...] = ()
    price_files: tuple[Path, ...] = ()
    api_price_files: tuple[Path, ...] = ()      # --api-prices: per-token API prices (`prices import-api --out`)

    @cached_property
    def provenance(self) -> dict:
        """The record's `versions` additions: each rule folder and price file with its digest (so that
        `explain` re-uses them and tells when they changed), and the shipped rules' digest."""
        rules = [{"path": str(d.resolve()), "given": str(d), "sha256": knowledge.folder_digest(d)} for d in self.rule_dirs]
        prices = [{"path": str(p.resolve()), "given": str(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                  for p in self.price_files]
        out = {"rule_dirs": rules, "price_files": prices, "shipped_rules_sha256": knowledge.folder_digest(knowledge.RULES_DIR)}
        if self.api_price_files:
            out["api_price_files"] = [{"path": str(p.resolve()), "given": str(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                                      for p in self.api_price_files]
        return out


def rule_dirs(extra=None) -> list[Path]:
    """The rule folders in force (rules/, GPU_ADVISOR_RULES, every --rules DIR); a path that is a FIFO,
    device or socket is refused before anything opens it (a folder's files are read only when regular)."""
    dirs = knowledge.rule_dirs(extra)
    for d in dirs:
        if not os.path.isdir(d):
            note_read(d, "rule file")
    return dirs


def load_catalog(prices: str | Path | None = None, api_prices: str | Path | None = None) -> Catalog:
    cat = catalog_mod.default()
    cat = cat.with_prices(prices) if prices else cat
    return with_api_prices(cat, api_prices) if api_prices else cat


def with_api_prices(cat: Catalog, path: str | Path) -> Catalog:
    """A copy whose per-token API offers include a file's rows (`prices import-api --out FILE`, read by
    --api-prices or the workload's `api_prices:`); a row for the same model, provider and provider
    model id as a shipped one replaces it. Every row is checked as the shipped file's are."""
    from advisor.inputs.apiprices import load_api_prices
    rows = load_api_prices(Path(path), cat.models)
    keys = {(a.model, a.provider, a.provider_model) for a in rows}
    kept = [a for a in cat.api_prices if (a.model, a.provider, a.provider_model) not in keys]
    h = hashlib.sha256(cat.digest.encode())
    h.update(Path(path).read_bytes())
    return replace(cat, api_prices=kept + rows, digest=h.hexdigest())


def setup(rules=None, prices: str | Path | None = None, catalog: Catalog | None = None,
          api_prices: str | Path | None = None) -> Setup:
    """The shipped catalog and knowledge base with the user's price files and rule folders."""
    cat = catalog if catalog is not None else load_catalog(prices, api_prices)
    dirs = rule_dirs(rules)
    kb = knowledge.load(dirs)
    return Setup(cat, kb, tuple(Path(d) for d in dirs if Path(d) != knowledge.RULES_DIR),
                 (Path(prices),) if prices else (), (Path(api_prices),) if api_prices else ())


def catalog_for(w: Workload, cat: Catalog) -> Catalog:
    """The catalog a workload is decided with: its own `api_prices:` file added (a path resolved
    against the workload's folder when it was read)."""
    return with_api_prices(cat, w.api_prices) if w.api_prices else cat


def advise(work: Workload | dict, s: Setup, source: str = "workload", why_none: bool = False) -> Decision:
    """Decide a workload (a parsed Workload, or a workload mapping read from `source`); `why_none`: when
    no GPU is left, the record's `no_plan` says what the workload needs and which constraint binds
    (`no_plan`; a sweep, which decides thousands, does not ask)."""
    w = work if isinstance(work, Workload) else workload_mod.parse(work, s.catalog, source)
    if w.api_prices:
        s = replace(s, catalog=catalog_for(w, s.catalog), api_price_files=s.api_price_files + (Path(w.api_prices),))
    d = decide(estimate(w, s.catalog), s.kb, s.catalog)
    d.provenance = s.provenance
    if why_none and d.winner is None:
        d.record["no_plan"] = no_plan(d, s)
    return d


#: the constraints that can leave no plan, each with the value that lifts it, in the order tried: the
#: first whose lifting alone gives a recommendation is the one that binds
RELAXABLE = (("max_gpus", None), ("gpus", ()), ("budget_usd_per_hour", None), ("budget_usd", None), ("power_kw_per_node", None),
             ("power_kw_per_rack", None), ("liquid_cooling", True), ("import_restricted", False),
             ("providers", ()), ("regions", ()), ("deadline_hours", None), ("spot", True))


def no_plan(d: Decision, s: Setup) -> dict:
    """Why no GPU is left, in the estimator's figures: the memory the workload needs in all
    (`need_gb`), the constraint that binds (the first of RELAXABLE whose lifting alone leaves a
    plan, decided again without it) with that plan's GPU, cards and memory per card; or, when no single
    constraint lifts it, the largest card of the catalog beside the need."""
    w = d.estimate.workload
    need = d.estimate.need_bytes / 1e9 if d.estimate.need_bytes is not None else None
    out: dict = {"need_gb": round(need, 1) if need is not None else None, "binding": None}
    tries = [("layout", "given", replace(w, layout=None, pools=None))] if w.layout_given else []
    for key, lifted in RELAXABLE:
        given = getattr(w.constraints, key)
        if given != lifted and given is not None and given != ():
            tries.append((f"constraints.{key}", given, replace(w, constraints=replace(w.constraints, **{key: lifted}))))
    for name, given, lifted_w in tries:
        other = decide(estimate(lifted_w, s.catalog), s.kb, s.catalog)
        if other.winner is None:
            continue
        plan = other.estimate.candidate(other.winner)
        out["binding"] = {"constraint": name, "value": list(given) if isinstance(given, tuple) else given,
                          "gpu": plan.gpu.id, "count": plan.count,
                          "per_card_gb": round(plan.per_card_gb, 1) if plan.per_card_gb is not None else None,
                          "card_gb": plan.gpu.memory_gb}
        break
    largest = max(s.catalog.gpus.values(), key=lambda g: g.memory_gb)
    out["largest_card"] = {"gpu": largest.id, "card_gb": largest.memory_gb}
    out["text"] = _no_plan_text(out)
    return out


def _no_plan_text(n: dict) -> str:
    """The no-plan figures in one sentence (the record's `text`, as `over_budget` has one)."""
    need = f"the workload needs {n['need_gb']:,.0f} GB in all" if n.get("need_gb") is not None else "no plan holds the workload"
    b = n.get("binding")
    if b:
        value = ", ".join(map(str, b["value"])) if isinstance(b["value"], list) else b["value"]
        per_card = f", {b['per_card_gb']:,.0f} GB per card of {b['card_gb']:g}" if b.get("per_card_gb") is not None else ""
        return (f"{need}; {b['constraint']} ({value}) binds: without it the best plan is "
                f"{b['count']} x {b['gpu']}{per_card}")
    big = n["largest_card"]
    return f"{need}; no single constraint lifted leaves a plan (the largest card, {big['gpu']}, holds {big['card_gb']:g} GB)"
