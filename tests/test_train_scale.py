"""Training at cluster scale (issue 21): no hidden limits, figures a user would check on
workloads sized like published runs (Llama 3.1 405B: 15.6T tokens; Llama 3.1 8B: 15T tokens)."""
import pytest

from advisor.inputs import workload
from advisor.judgement import decision, knowledge
from advisor.numbers import estimate as estimator

H100_CLASS = ("h100-sxm", "h200-sxm", "h100-pcie")


@pytest.fixture(scope="module")
def kb():
    return knowledge.load()


def decide(catalog, kb, data):
    w = workload.parse({"mode": "training", "precision": "bf16", "context_tokens": 8192, **data}, catalog, "w")
    return decision.decide(estimator.estimate(w, catalog), kb, catalog)


LLAMA_405B = {"model": "llama-3.1-405b", "training_tokens": 15.6e12, "constraints": {"deadline_hours": 90 * 24}}


def test_405b_on_15t_tokens_in_90_days_gets_a_cluster_of_h100_class_gpus(catalog, kb):
    d = decide(catalog, kb, LLAMA_405B)
    r = d.record["recommendation"]
    assert r is not None
    c = d.estimate.candidate("h100-sxm")
    assert 8_000 <= c.count <= 25_000 and c.training_hours <= 90 * 24
    assert not c.misses and c.count % 8 == 0


def test_a_binding_gpu_ceiling_is_stated_with_its_figure(catalog, kb):
    d = decide(catalog, kb, {**LLAMA_405B, "constraints": {"deadline_hours": 90 * 24, "max_gpus": 4096}})
    c = d.estimate.candidate("h100-sxm")
    assert c.misses and "max_gpus 4,096 (the workload) binds" in c.misses
    lim = [x for x in d.record["limits"] if x["gpu"] == "h100-sxm"]
    assert lim and lim[0]["limit"] == "max_gpus" and lim[0]["value"] == 4096
    assert 8_000 <= lim[0]["needed_gpus"] <= 25_000          # what meeting the deadline would take
    ex = d.excluded["h100-sxm"][0]
    assert "binds" in ex["reason"]                            # the memo's exclusion line names it
