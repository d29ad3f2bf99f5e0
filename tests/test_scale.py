"""A synthetic knowledge base of 5,000 rules loads and decides exactly as the evaluator says."""
import sys

from advisor.judgement import decision, knowledge
from advisor.inputs import workload
from advisor.numbers import estimate as estimator
from advisor.judgement.engine import normalise_fact, runner
from advisor.judgement.facts import facts_for
from advisor.judgement.knowledge import evaluate

from conftest import EXAMPLES, ROOT

sys.path.insert(0, str(ROOT / "bench"))
import synthetic  # noqa: E402


def test_5000_rules_decide_correctly(tmp_path, catalog):
    kb = knowledge.load([synthetic.write(tmp_path / "kb", 5000)])
    assert len(kb.rules) == 5000
    w = workload.load(EXAMPLES / "chat-assistant.yaml", catalog)
    est = estimator.estimate(w, catalog)
    d = decision.decide(est, kb, catalog)
    assert runner(kb).fallbacks == 0
    wf, cfs = facts_for(est)
    for c in cfs:
        c["id"] = c["c_gpu"]
    expected = sorted((r.id, c["id"]) for r in kb.rules for c in cfs if evaluate(r.when, normalise_fact(c)))
    got = sorted({(f.rule.id, f.fact_id) for f in d.firings})
    assert got == expected and len(got) > 1000
    assert d.record["recommendation"]["gpu"] == d.order[0]
