"""Random single-pattern rules through durable_rules and through the plain-Python evaluator.

    python bench/differential.py [DECISIONS] [RULES]
    bash bench/valgrind.sh        # the same under valgrind: reports invalid reads in the engine
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.judgement import knowledge  # noqa: E402
from advisor.judgement.engine import EngineRunner, normalise_fact  # noqa: E402
from advisor.judgement.knowledge import Leaf, Node, Rule, evaluate  # noqa: E402

NUM = {"candidate.per_card_gb": (0, 300), "candidate.count": (1, 64), "candidate.usd_per_hour": (0.5, 60.0),
       "workload.context_tokens": (1, 200_000)}
CAT = {"workload.mode": ["inference", "training", "fine-tuning"], "candidate.generation": ["ampere", "hopper", "blackwell"],
       "candidate.vendor": ["nvidia", "amd", "huawei"]}
BOOL = ["candidate.fits", "workload.import_restricted"]


def rnum(rng, f):
    lo, hi = NUM[f]
    return round(rng.uniform(lo, hi), 2) if isinstance(lo, float) else rng.randint(lo, hi)


def rcond(rng, depth=0):
    r = rng.random()
    if depth < 2 and r < 0.25:
        return Node(rng.choice(["all", "any"]), tuple(rcond(rng, depth + 1) for _ in range(rng.randint(2, 3))))
    if r < 0.55:
        f = rng.choice(list(NUM))
        return Leaf(f, rng.choice(["lt", "lte", "gt", "gte"]), rnum(rng, f))
    if r < 0.8:
        f = rng.choice(list(CAT))
        op = rng.choice(["eq", "ne", "in", "not_in"])
        return Leaf(f, op, tuple(rng.sample(CAT[f], 2)) if op in ("in", "not_in") else rng.choice(CAT[f]))
    if r < 0.9:
        return Leaf(rng.choice(BOOL), "eq", rng.random() < 0.5)
    return Leaf(rng.choice(list(NUM)), rng.choice(["exists", "not_exists"]))


def prop_of(name: str) -> str:
    return ("c_" if name.startswith("candidate") else "w_") + name.split(".")[1]


def run(decisions: int = 300, n_rules: int = 120, seed: int = 7) -> tuple[int, int]:
    """(mismatching decisions, engine fallbacks)."""
    rng = random.Random(seed)
    rules = [Rule(f"r{i}", "t", ("test",), "g", 100, rcond(rng), {"note": {"text": "x"}}, "", [], "random.yaml", i + 1,
                  scope="candidate") for i in range(n_rules)]
    kb = knowledge.KnowledgeBase(rules, ["random.yaml"], f"differential-{seed}-{n_rules}")
    run = EngineRunner(kb)
    mismatches = 0
    for _ in range(decisions):
        facts = []
        for j in range(12):
            f = {"id": f"g{j}"}
            for k in NUM:
                if rng.random() < 0.9:
                    f[prop_of(k)] = rnum(rng, k)
            for k, vals in CAT.items():
                f[prop_of(k)] = rng.choice(vals)
            for k in BOOL:
                f[prop_of(k)] = rng.random() < 0.5
            facts.append(f)
        got = run.fire(0, "candidate", facts)
        expected = sorted({(r.id, f["id"]) for r in rules for f in facts if evaluate(r.when, normalise_fact(f))})
        mismatches += got != expected
    return mismatches, run.fallbacks


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    m, fb = run(n, k)
    print(f"{n} decisions of {k} random rules: {m} mismatches, {fb} engine fallbacks")
