"""Service levels people hold (issue 20, item 4): MLPerf's Interactive limits per model class as the
interactive default, the figure that missed in every exclusion and the three issue-20 workloads (the
time to first token at an arrival rate: tests/test_queueing.py)."""

import pytest

from advisor.inputs import workload
from advisor.judgement import decision
from advisor.numbers import estimate as estimator
from advisor.numbers import objective, speed
from advisor.numbers.layouts import Layout
from advisor.numbers.ledger import inference_ledger

from conftest import ROOT

SLO = ROOT / "tests" / "data" / "slo"


def parse(catalog, **doc):
    return workload.parse({"name": "t", "mode": "inference", **doc}, catalog, "t")


@pytest.mark.parametrize("model, ttft, tpot, bench", [
    ("llama-3.1-8b", 500, 30, "llama3_1-8b-interactive"),        # dense up to 20B
    ("llama-3.1-70b", 450, 40, "llama2-70b-interactive"),         # dense up to 150B
    ("llama-3.1-405b", 4500, 80, "llama3_1-405b-interactive"),    # larger dense
    ("gpt-oss-120b", 500, 30, "llama3_1-8b-interactive"),         # MoE, 5.1B active: the 8B chat limits
    ("deepseek-v3", 450, 40, "llama2-70b-interactive"),           # MoE, 37B active: the 70B chat limits
])
def test_interactive_default_is_mlperfs_interactive_limit_of_the_models_class(catalog, model, ttft, tpot, bench):
    w = parse(catalog, model=model, prompt_tokens=1000, output_tokens=1000, concurrency=8)
    assert (w.ttft_ms, w.tpot_ms) == (ttft, tpot)
    assert f"MLPerf Inference's Interactive limits for {bench}" in w.service_level_source
    assert w.service_level_refs[0] == "MLPERF_CONF"
    moe = catalog.model(model).num("experts") is not None
    assert ("CHOICE_MOE_SLO" in w.service_level_refs) == moe      # the MoE mapping is a stated choice
    # batch use holds none, and a workload's own figures win whole
    assert parse(catalog, model=model, latency="batch").tpot_ms is None
    own = parse(catalog, model=model, latency={"tpot_ms": 120})
    assert (own.ttft_ms, own.tpot_ms, own.service_level_source) == (None, 120, None)


def test_the_ranking_unit_of_serving_is_the_million_output_tokens(catalog):
    # T07: per million tokens or per thousand requests, not per card (nor per hour) - interactive too
    assert objective.unit_of_work(parse(catalog, model="llama-3.1-70b")) == "million_tokens"
    assert objective.unit_of_work(parse(catalog, model="llama-3.1-70b", latency="batch")) == "million_tokens"


def decide_file(catalog, kb, name):
    w = workload.load(SLO / f"{name}.yaml", catalog)
    return w, decision.decide(estimator.estimate(w, catalog), kb, catalog)


def test_405b_fp8_for_32_users_gets_fp8_cards_cheaper_per_token(catalog, kb):
    w, d = decide_file(catalog, kb, "llama-405b-fp8-32-users")
    assert (w.ttft_ms, w.tpot_ms) == (4500, 80)                   # llama3_1-405b-interactive
    r = d.record["recommendation"]
    c = d.estimate.candidate(r["gpu"])
    assert (r["gpu"], r["count"], r["nodes"]) == ("h100-sxm", 8, 1)
    assert c.compute_precision == "fp8"                          # FP8 units, not weight-only FP8
    a100 = d.estimate.candidate("a100-80gb-sxm")
    assert a100.compute_precision == "bf16" and not a100.misses  # it holds 80 ms (65.7 ms) ...
    # ... at $8.28/h against $10.32/h, but serves 32 users' requests at $4.72 per million tokens against $3.40
    assert a100.usd_per_hour == pytest.approx(8.28) and c.usd_per_hour == pytest.approx(10.32)
    assert a100.usd_per_million_tokens == pytest.approx(4.72, abs=0.005)
    assert c.usd_per_million_tokens == pytest.approx(3.40, abs=0.005)
    assert c.tpot_ms <= 80 and c.ttft_ms <= 4500


def test_deepseek_v3_fp8_for_256_users_gets_one_8_gpu_b200_node_or_says_why_not(catalog, kb):
    # the issue: one 8-GPU H200 or B200 node "or says why not". With the expert GEMMs' reads and matmuls
    # timed one after the other (AIC_MOE_TABLES) 8 x H200 in DEP 8 takes 42.9 ms per output token, over the
    # 40 ms interactive limit, so H200 needs two nodes; 8 x B200 in DEP 8 holds it (35.9 ms; 35.8 before the
    # serving refit's factors, serve-fit) at $1.40 ($1.39 before) per
    # million tokens. Since DEP groups may span nodes (review 19, F1: SGLang served DeepSeek-V3 on two H100
    # nodes with DP attention and EP 16) two H100 nodes in DEP 16 had held it for $0.79, priced on listings that
    # state no network between their instances; since issue 46 a group across instances is priced only where
    # RDMA joins them (Nebius's InfiniBand: $1.81), and the one B200 node is the answer, two H200 nodes as
    # independent TP 8 replicas ($1.42) the runner-up
    w, d = decide_file(catalog, kb, "deepseek-v3-fp8-256-users")
    assert (w.ttft_ms, w.tpot_ms) == (450, 40)
    one_h200 = speed.inference_speed(w, inference_ledger(w), catalog.gpus["h200-sxm"], Layout(8, 1, 1, 0.0, ep=8, attention_dp=8),
                                     speed.achievable_tflops(catalog, catalog.gpus["h200-sxm"], "fp8"), speed.calibration(catalog))
    assert one_h200.tpot_ms == pytest.approx(42.9, abs=0.1)
    b200 = d.estimate.candidate("b200")
    assert (b200.count, b200.tp, b200.ep, b200.attention_dp) == (8, 8, 8, 8)   # DEP 8: the MLA cache split, not copied
    assert b200.tpot_ms == pytest.approx(35.94, abs=0.01) and b200.ttft_ms <= 450 and not b200.misses
    assert b200.usd_per_million_tokens == pytest.approx(1.40, abs=0.01)
    assert "new-generation-caution" not in [c["rule"] for c in d.contributions["b200"]]
    r = d.record["recommendation"]
    assert (r["gpu"], r["count"], r["nodes"], r["tp"], r["ep"], r["attention_dp"]) == ("b200", 8, 1, 8, 8, 8) and "closest" not in r
    assert d.record["runner_up"]["gpu"] == "h200-sxm"
    h100 = d.estimate.candidate("h100-sxm")
    assert (h100.count, h100.tp, h100.ep, h100.attention_dp) == (16, 16, 16, 16) and h100.price["fabric"]["rdma"] is True
    assert "a DEP group of 16 cards over 2 nodes" in h100.why["layout"]
    h200 = d.estimate.candidate("h200-sxm")
    assert (h200.count, h200.tp, h200.dp) == (16, 8, 2) and h200.tpot_ms <= 40 and h200.price["instances"] == 2


def test_new_generation_caution_counts_the_months_from_volume_shipping(catalog, kb):
    # K12: software lags hardware by about a year. B300 (HGX, January 2026) is 10 months old by the
    # catalog's as_of (2026-11-29) and still pays the premium; B200 (early 2025) is 20 months old and does not
    assert (catalog.gpus["b300"].months_shipping, catalog.gpus["b200"].months_shipping) == (10, 20)
    w = parse(catalog, model="llama-3.1-70b", concurrency=16, constraints={"gpus": ["b200", "b300"]})
    d = decision.decide(estimator.estimate(w, catalog), kb, catalog)
    fired = {g: [c["rule"] for c in d.contributions[g]] for g in ("b200", "b300")}
    assert "new-generation-caution" in fired["b300"] and "new-generation-caution" not in fired["b200"]


def test_120k_token_prompts_for_8_users_get_a_plan_within_the_long_prompt_allowance(catalog, kb):
    w, d = decide_file(catalog, kb, "llama-70b-120k-prompt-8-users")
    assert w.ttft_ms == pytest.approx(450 * 120_000 / 2048)       # 26,367 ms: in proportion beyond 2,048 tokens
    r = d.record["recommendation"]
    c = d.estimate.candidate(r["gpu"])
    assert r["gpu"] and "closest" not in r and not c.misses
    assert c.ttft_ms <= w.ttft_ms and c.tpot_ms <= 40


def test_a_plan_over_both_limits_names_both_figures(catalog, kb):
    w = parse(catalog, model="llama-3.1-70b", concurrency=16, latency={"ttft_ms": 20, "tpot_ms": 3},
              constraints={"gpus": ["h100-sxm", "a100-80gb-sxm"]})
    d = decision.decide(estimator.estimate(w, catalog), kb, catalog)
    a100 = d.estimate.candidate("a100-80gb-sxm")
    ex = [e["reason"] for e in d.excluded["a100-80gb-sxm"] if e["rule"] == "misses-stated-target"][0]
    assert f"time to first token {a100.ttft_ms:,.0f} ms, over the 20 ms target" in ex
    assert f"time per output token {a100.tpot_ms:,.1f} ms, over the 3 ms target" in ex
    r = d.record["recommendation"]              # every GPU misses: the closest plan, labelled, with its figures
    assert r["closest"]["missed"].startswith("time to first token") and "time per output token" in r["closest"]["missed"]



def test_a_plan_a_few_percent_nearer_a_target_nobody_meets_does_not_win_at_three_times_the_rent(catalog, kb):
    # second review, n5: Llama 3.1 8B for 16 users at 4 ms per token (below any GPU's per-layer floor)
    # got 24 x B200 disaggregated (8 prefill cards, 2 decode replicas of TP 8) at 4.2 ms and $107.76/h
    # over one TP 8 node at 4.3 ms and $35.92/h: 2% nearer for three times the money. Within
    # CLOSE_SHARE (10%) of the nearest shortfall plans are equally close and the cost decides
    import conftest
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-8b", "concurrency": 16,
                                      "latency": {"tpot_ms": 4}, "constraints": {"gpus": ["b200"]}})
    c = d.estimate.candidate("b200")
    assert c.misses and (c.count, c.tp) == (8, 8) and not c.layout.pools and c.tpot_ms == pytest.approx(4.3, abs=0.05)
    assert d.record["recommendation"]["closest"]["shortfall"] == pytest.approx(c.tpot_ms / 4, rel=1e-3)
    # the band by hand: 1.05x and 1.07x are equally close to a nearest 1.05x; 1.2x is not
    plan = type("P", (), {})
    def missing(tpot):
        p = plan(); p.misses, p.tpot_ms, p.ttft_ms, p.training_hours, p.capacity_requests_per_s = "x", tpot, None, None, None
        return p
    w = workload.parse({"mode": "inference", "model": "llama-3.1-8b", "latency": {"tpot_ms": 4}}, catalog)
    near, close, far = missing(4.2), missing(4.3), missing(4.8)
    best = objective.nearest(w, [near, close, far])
    assert best == pytest.approx(1.05)
    assert objective.closeness(w, close, best) == objective.closeness(w, near, best) < objective.closeness(w, far, best)


def test_a_context_beyond_the_models_trained_length_is_a_high_risk_of_the_plan(catalog, kb):
    # review 11, F8: Llama 3.1 8B (131,072 tokens) with 250k-token prompts got a priced plan and only a
    # note deep in the evidence; up to x4 (YaRN) is accepted, beyond is refused (crosschecks)
    import conftest
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-8b", "context_tokens": 300000,
                                      "prompt_tokens": 250000, "output_tokens": 1000})
    warn = [k for k in d.record["warnings"] if k["rule"] == "context-beyond-the-models-training"]
    assert warn and warn[0]["severity"] == "high" and "300,000 is beyond llama-3.1-8b's 131,072-token context" in warn[0]["text"]
    ok = conftest.decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-8b", "context_tokens": 131072})
    assert not [k for k in ok.record["warnings"] if k["rule"] == "context-beyond-the-models-training"]
    with pytest.raises(Exception, match="even at the x4"):
        workload.parse({"mode": "inference", "model": "llama-3.1-8b", "context_tokens": 600000}, catalog, "w")


def test_a_budget_no_16_bit_plan_meets_gets_the_fp8_plan_that_does_as_a_suggestion(catalog, kb):
    # review 11, F2: Llama 3.1 70B for 32 users within $3/h: "No GPU within the budget meets the
    # service level" (2 x RTX PRO 6000 at 78.9 ms per token, $1.36/M), while at FP8 2 x H100 meet it
    # for $2.58/h and $0.64/M; serving memos never suggested FP8
    import conftest
    w = {"mode": "inference", "model": "llama-3.1-70b", "context_tokens": 8192, "prompt_tokens": 1000, "output_tokens": 500,
         "concurrency": 32, "constraints": {"budget_usd_per_hour": 3}}
    d = conftest.decide(catalog, kb, w)
    assert d.record["recommendation"]["closest"]
    s = [x for x in d.record["suggestions"] if x["change"].startswith("precision: fp8")]
    assert s and s[0]["meets_target"] == "service level" and s[0]["plan"]["usd_per_hour"] <= 3
    fp8 = conftest.decide(catalog, kb, {**w, "precision": "fp8"})
    r = fp8.record["recommendation"]
    assert not r.get("closest") and (r["gpu"], r["count"]) == (s[0]["plan"]["gpu"], s[0]["plan"]["count"])
    # an answer that meets its service level is not decided twice for the suggestion
    ok = conftest.decide(catalog, kb, {**w, "constraints": {}})
    assert not [x for x in ok.record["suggestions"] if x["change"].startswith("precision: fp8")]


def test_fp8_weights_on_a_card_without_fp8_units_say_what_runs_them(catalog, kb):
    # review 11, F7: DeepSeek-V3's FP8 checkpoint on 24 x Ascend 910C (no FP8 in its precisions) said
    # only "[low] Weights are stored at fp8"
    import conftest
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "deepseek-v3", "concurrency": 64,
                                      "constraints": {"import_restricted": True}})
    g = d.record["recommendation"]["gpu"]
    assert g.startswith("ascend") and "fp8" not in catalog.gpu(g).native_precisions
    warn = [k for k in d.candidate_warnings[g] if k["rule"] == "fp8-weights-without-fp8-units"]
    assert warn and warn[0]["severity"] == "medium" and "has no FP8 units" in warn[0]["text"]
    free = conftest.decide(catalog, kb, {"mode": "inference", "model": "deepseek-v3", "concurrency": 64,
                                         "constraints": {"gpus": ["h200-sxm"]}})
    assert not [k for k in free.candidate_warnings["h200-sxm"] if k["rule"] == "fp8-weights-without-fp8-units"]
