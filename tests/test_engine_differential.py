"""Random rules through durable_rules and through the why-not evaluator: no disagreement."""
import random

from advisor import knowledge
from advisor.engine import EngineRunner, normalise_fact
from advisor.knowledge import Leaf, Node, Rule, evaluate

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


def test_engine_agrees_with_evaluator():
    rng = random.Random(7)
    rules = [Rule(f"r{i}", "t", ("test",), "g", 100, rcond(rng), {"note": {"text": "x"}}, "", [], "random.yaml", i + 1,
                  scope="candidate") for i in range(120)]
    kb = knowledge.KnowledgeBase(rules, ["random.yaml"], f"differential-{rng.random()}")
    run = EngineRunner(kb)
    mismatches = 0
    for e in range(60):
        facts = []
        for j in range(12):
            f = {"id": f"g{j}"}
            for k in NUM:
                if rng.random() < 0.9:
                    f[f"{'c_' if k.startswith('candidate') else 'w_'}{k.split('.')[1]}"] = rnum(rng, k)
            for k, vals in CAT.items():
                f[f"{'c_' if k.startswith('candidate') else 'w_'}{k.split('.')[1]}"] = rng.choice(vals)
            for k in BOOL:
                f[f"{'c_' if k.startswith('candidate') else 'w_'}{k.split('.')[1]}"] = rng.random() < 0.5
            facts.append(f)
        got = run.fire(0, "candidate", facts)
        expected = sorted({(r.id, f["id"]) for r in rules for f in facts if evaluate(r.when, normalise_fact(f))})
        mismatches += got != expected
    assert run.fallbacks == 0, "the engine failed and the evaluator stood in"
    assert mismatches == 0
