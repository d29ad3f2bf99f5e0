"""The one path from a workload to a decision: parse -> estimate -> decide, with the record's
provenance (the rule folders and price files the decision was made with). `recommend`, `ask`,
`explain`, `sweep` and the replay of transcripts all decide through `advise`; a `Setup` is what they
decide with, loaded once.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
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
from advisor.numbers.estimate import estimate


@dataclass(frozen=True)
class Setup:
    """What decisions are made with: the catalog (with any price files), the knowledge base, and the
    rule folders (beyond the shipped rules/) and price files they came from, as the user named them."""

    catalog: Catalog
    kb: KnowledgeBase
    rule_dirs: tuple[Path, ...] = ()
    price_files: tuple[Path, ...] = ()

    @cached_property
    def provenance(self) -> dict:
        """The record's `versions` additions: each rule folder and price file with its digest (so that
        `explain` re-uses them and tells when they changed), and the shipped rules' digest."""
        rules = [{"path": str(d.resolve()), "given": str(d), "sha256": knowledge.folder_digest(d)} for d in self.rule_dirs]
        prices = [{"path": str(p.resolve()), "given": str(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                  for p in self.price_files]
        return {"rule_dirs": rules, "price_files": prices, "shipped_rules_sha256": knowledge.folder_digest(knowledge.RULES_DIR)}


def rule_dirs(extra=None) -> list[Path]:
    """The rule folders in force (rules/, GPU_ADVISOR_RULES, every --rules DIR); a path that is a FIFO,
    device or socket is refused before anything opens it (a folder's files are read only when regular)."""
    dirs = knowledge.rule_dirs(extra)
    for d in dirs:
        if not os.path.isdir(d):
            note_read(d, "rule file")
    return dirs


def load_catalog(prices: str | Path | None = None) -> Catalog:
    cat = catalog_mod.default()
    return cat.with_prices(prices) if prices else cat


def setup(rules=None, prices: str | Path | None = None, catalog: Catalog | None = None) -> Setup:
    """The shipped catalog and knowledge base with the user's price file and rule folders."""
    cat = catalog if catalog is not None else load_catalog(prices)
    dirs = rule_dirs(rules)
    kb = knowledge.load(dirs)
    return Setup(cat, kb, tuple(Path(d) for d in dirs if Path(d) != knowledge.RULES_DIR),
                 (Path(prices),) if prices else ())


def advise(work: Workload | dict, s: Setup, source: str = "workload") -> Decision:
    """Decide a workload (a parsed Workload, or a workload mapping read from `source`)."""
    w = work if isinstance(work, Workload) else workload_mod.parse(work, s.catalog, source)
    d = decide(estimate(w, s.catalog), s.kb, s.catalog)
    d.provenance = s.provenance
    return d
