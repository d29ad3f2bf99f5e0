"""The planner: the layouts an expert would deploy, picked by the workload's objective, on workload
files under examples/ (figures a user would check: cards, nodes, TP/PP/DP, idle GPUs, hours)."""
import math
from dataclasses import replace

import pytest

from advisor.judgement import decision
from advisor.inputs import workload
from advisor.numbers import estimate as estimator, layouts, objective
from advisor.shell.cli import main

from conftest import EXAMPLES, ROOT

DATA = ROOT / "tests" / "data"
WORKLOADS = sorted(p.stem for p in EXAMPLES.glob("*.yaml") if p.stem != "grid")


def decide(catalog, kb, name, prices=None, **overrides):
    if prices:
        catalog = catalog.with_prices(DATA / prices)
    data = dict(workload.yamlio.load(EXAMPLES / f"{name}.yaml"))
    data.update(overrides)
    w = workload.parse(data, catalog, name)
    return decision.decide(estimator.estimate(w, catalog), kb, catalog)


@pytest.mark.parametrize("name", WORKLOADS)
def test_every_plan_keeps_tp_inside_a_node_and_pp_across_nodes(estimate_file, name):
    for c in estimate_file(name).candidates:
        if not c.fits:
            continue
        gpn = c.gpu.gpus_per_node
        assert c.tp <= gpn, (c.gpu.id, c.tp)                                  # no TP across nodes (K14)
        if c.pp > 1 and layouts.rack_unit(c.gpu):
            # an NVL72 rack is one 72-GPU node on one NVLink domain: stages of the widest tensor split (8) inside it
            assert min(max(c.tp, c.layout.ep), layouts.TENSOR_SPLIT_MAX) == layouts.TENSOR_SPLIT_MAX and c.count <= c.nodes * gpn, (c.gpu.id, c.tp, c.pp, c.nodes)
        elif c.pp > 1:                                                        # no PP stage inside a node when TP fits
            # (MoE training: a stage is the wider of TP and the EP group drawn from TP x DP)
            # (an EP group wider than a node spans whole nodes: its stage is at least a node)
            assert min(max(c.tp, c.layout.ep), gpn) == gpn and c.nodes >= c.pp, (c.gpu.id, c.tp, c.pp, c.nodes)
        if c.layout.pools:                                                    # disaggregated: each pool so, cards summed
            pf, dc = c.layout.pools.prefill, c.layout.pools.decode
            assert pf.tp <= gpn and dc.tp <= gpn and c.count == pf.count + dc.count, (c.gpu.id, c.layout.as_dict())
            continue
        assert c.count == c.tp * c.pp * c.dp


@pytest.mark.parametrize("name", WORKLOADS)
def test_no_recommended_plan_rents_an_idle_gpu_silently(catalog, kb, name):
    d = decide(catalog, kb, name)
    c = d.estimate.candidate(d.winner)
    idle = (c.price or {}).get("idle_gpus") or 0
    assert idle == 0 or "idle_gpus" in c.why
    for cand in d.estimate.candidates:         # nor any candidate's plan
        if cand.price and cand.price["idle_gpus"]:
            assert "idle_gpus" in cand.why and "does not fill" in cand.why["idle_gpus"]


@pytest.mark.parametrize("name", WORKLOADS)
def test_winner_costs_at_most_its_stated_premium_over_the_cheapest(catalog, kb, name):
    d = decide(catalog, kb, name)
    rec = d.record
    priced = [c for c in rec["candidates"] if c["rank"] and c["effective_cost"] is not None]
    if not priced:
        return
    win = next(c for c in rec["candidates"] if c["rank"] == 1)
    unit = rec["recommendation"]["unit"]
    cost = {c.gpu.id: objective.unit_cost(c, unit) for c in d.estimate.candidates}
    cheapest = min(priced, key=lambda c: cost[c["gpu"]])
    # the winner's cost is within its premium (over the cheapest's) of the cheapest priced candidate's
    ratio = cost[win["gpu"]] / cost[cheapest["gpu"]]
    assert ratio <= (1 + win["premium"]) / (1 + max(cheapest["premium"], 0)) + 1e-9 or \
        win["effective_cost"] <= cheapest["effective_cost"] + 1e-9
    # first by effective cost, unless it displaced those ahead of it by costing less and running faster
    # with no more against it (ranking-cheaper-and-faster)
    ahead = [c for c in priced if c["effective_cost"] < win["effective_cost"]]
    assert all(c["dominated_by"] for c in ahead)
    assert not ahead or rec["decisive_rule"]["id"] == "ranking-cheaper-and-faster"


def test_7b_lora_with_default_settings_fits_one_24_to_48_gb_card(catalog, kb):
    # the 48 GB L40S holds it with the planner's activation checkpointing and wins on cost per million
    # training tokens ($0.0307 against one H100's $0.0328; C10's rule also favours it); one card either way
    d = decide(catalog, kb, "llama-8b-lora-defaults", prices="market-prices.yaml")
    r = d.record["recommendation"]
    assert r["count"] == 1 and r["gpu"] == "l40s"
    assert d.record["decisive_rule"]["id"] == "ranking-cost-per-unit-of-work"
    assert d.estimate.candidate("h100-sxm").count == 1
    c = d.estimate.candidate("l40s")
    assert c.fits and c.count == 1
    assert c.activation_checkpointing is True and "chosen by the planner" in c.why["activation_checkpointing"]
    assert d.estimate.ledger.bytes("total_gb") / 1e9 > 100          # without checkpointing: over 100 GB
    assert c.per_card_gb <= 48


def test_fixed_knob_that_costs_a_lot_is_named_with_the_alternative_plan(catalog, kb):
    # the case: the dialogue's defaults fixed (no checkpointing, micro-batch 4 at 4,096 tokens),
    # on L40S instances of 1-8 GPUs from one provider (a price file of the tests, not the shipped market)
    d = decide(catalog, kb, "llama-8b-lora-defaults", prices="l40s-one-provider.yaml", activation_checkpointing=False,
               constraints={"gpus": ["l40s"], "providers": ["Cudo Compute (test snapshot)"]})
    assert d.record["recommendation"]["price"]["provider"] == "Cudo Compute (test snapshot)"
    assert d.estimate.ledger.bytes("total_gb") / 1e9 > 100
    assert d.record["recommendation"]["count"] > 1
    now = d.record["recommendation"]
    sug = next(s for s in d.record["suggestions"] if s["change"].startswith("micro_batch 1"))
    plan = sug["plan"]
    # the same workload decided with the knob turned: one 24-48 GB card, at least 25% less after premiums
    assert plan["count"] == 1 and 24 <= catalog.gpus[plan["gpu"]].memory_gb <= 48
    assert sug["saving_after_premiums"] >= 0.25 and sug["saving"] > 0
    cost_now = d.estimate.candidate(now["gpu"]).usd_per_million_tokens
    assert plan["unit_cost"] == pytest.approx(cost_now * (1 - sug["saving"]), rel=1e-3)
    win = next(c for c in d.record["candidates"] if c["gpu"] == now["gpu"])
    assert plan["effective_cost"] == pytest.approx(win["effective_cost"] * (1 - sug["saving_after_premiums"]), rel=1e-2)


def test_bf16_training_on_fp8_hardware_is_named(catalog, kb):
    d = decide(catalog, kb, "gpt-oss-120b-training")
    sug = next(s for s in d.record["suggestions"] if s["change"].startswith("precision: fp8"))
    assert sug["saving"] >= 0.25 and catalog.gpus[sug["plan"]["gpu"]].tflops("fp8")


def test_13b_full_fine_tune_is_sharded_on_whole_nodes_or_two_h200(catalog, kb):
    for prices in (None, "comparable-h100-h200.yaml"):
        d = decide(catalog, kb, "llama-13b-full-finetune", prices=prices)
        r = d.record["recommendation"]
        c = d.estimate.candidate(r["gpu"])
        if r["gpu"] == "h200-sxm" and r["count"] == 2:
            continue
        # ZeRO/FSDP data parallel (with at most a pair of cards' tensor split inside the node: 8 L40S at TP 2
        # since plans keep the headroom free, issue 45 item 5, where 3 H100 now need checkpointing)
        assert c.zero_stage >= 1 and c.tp <= 2 and c.pp == 1
        # whole instances (8-GPU nodes, or e.g. a 3-GPU H100 instance), every rented GPU used
        assert c.price["idle_gpus"] == 0 and c.count % c.price["gpus_per_instance"] == 0
        assert c.count == c.price["instances"] * c.price["gpus_per_instance"]


def test_a_deadline_sets_the_card_count_by_compute(catalog, kb):
    d = decide(catalog, kb, "7b-pretraining-deadline")
    c = d.estimate.candidate(d.winner)
    deadline = d.estimate.workload.constraints.deadline_hours
    assert c.training_hours <= deadline
    gpn = c.gpu.gpus_per_node
    # the deadline sets the fewest cards by compute; at the same cost per job the planner then takes
    # the fastest plan within 5% of the cheapest (issue 21): 64 cards at ZeRO-2 (80 at ZeRO-1 before plans
    # kept the headroom free, issue 45 item 5: ZeRO-1 left 0.1 GB of 80), 50.7 h of steps / goodput 0.800
    # (52.0 h / 0.792 before the training refit's MoE/goodput fit: a 2.85 s step, goodput_base 0.690,
    # step_overhead_s 0.08 in catalog/efficiency.yaml, where they were 2.93 s, 0.667 and 0.05).
    # 64 GPUs are 8 nodes of the 32 of the smallest whole run fitted (256 GPUs), so they pay ln 8 / ln 32
    # = 0.600 of the whole-run factors (review 10, F7): base 1 - 0.310 x 0.600 = 0.814 (goodput_base 0.690),
    # x 2.85 s step / (2.85 + 0.08 x 0.600 s), with 64 GPUs' interruptions = 63.3 h of wall-clock
    assert c.count == 64 and c.step_hours == pytest.approx(50.66, abs=0.01)
    scale = math.log(8) / math.log(32)
    step_s = c.speed_explained["goodput"]["factor"]["step_s"]
    by_hand = (1 - (1 - 0.690) * scale) * step_s / (step_s + 0.08 * scale) / (1 + 64 * 2.195e-5 * 0.278)
    assert step_s == pytest.approx(2.85, abs=0.01) and c.goodput == pytest.approx(by_hand, abs=0.001)
    assert c.goodput == pytest.approx(0.800, abs=0.001) and c.training_hours == pytest.approx(63.31, abs=0.01)
    assert c.training_hours == pytest.approx(c.step_hours / c.goodput, rel=1e-6)
    assert c.count % gpn == 0 and "for memory" in c.why["layout"]


def test_a_missed_deadline_or_service_level_excludes_with_the_figure(catalog, kb):
    d = decide(catalog, kb, "7b-pretraining-deadline", constraints={"deadline_hours": 72, "max_gpus": 16})
    ex = d.excluded["h100-sxm"][0]
    assert ex["rule"] == "misses-stated-target" and "over the 72 h deadline" in ex["reason"]
    # 20 ms per output token: out of an A100 40GB plan's reach on the speed model (about 22 ms even
    # prefilled apart, its decode replicas at one or two sequences each), within an H100's
    d = decide(catalog, kb, "llama-70b-128-users", latency={"ttft_ms": 2000, "tpot_ms": 20})
    ex = d.excluded["a100-40gb-sxm"][0]
    assert ex["rule"] == "misses-stated-target" and "time per output token" in ex["reason"] and "20 ms target" in ex["reason"]
    missed = d.estimate.candidate("a100-40gb-sxm").decode_ms_per_token
    assert missed > 20 and f"{missed:,.1f} ms" in ex["reason"]                # the figure that missed
    r = d.record["recommendation"]
    c = d.estimate.candidate(r["gpu"])
    assert c.decode_ms_per_token <= 20 and c.prefill_ms <= 2000


def test_service_level_adds_replicas(catalog, kb):
    # a loose target one replica of A100 80GB meets, then a tighter one that needs more replicas
    # (each serving fewer users, T06)
    loose = decide(catalog, kb, "llama-70b-128-users", constraints={"gpus": ["a100-80gb-sxm"]},
                   latency={"ttft_ms": 2000, "tpot_ms": 200})
    tight = decide(catalog, kb, "llama-70b-128-users", constraints={"gpus": ["a100-80gb-sxm"]},
                   latency={"ttft_ms": 2000, "tpot_ms": 100})
    a, b = loose.estimate.candidates[0], tight.estimate.candidates[0]
    assert not a.misses and not b.misses
    # TP 4: 164.5 ms per token with the 128 users on one replica, 92.6 ms on two
    assert b.dp > a.dp and (b.tp, b.pp) == (a.tp, a.pp) and b.decode_ms_per_token <= 100 < a.decode_ms_per_token


def test_workstation_cards_share_one_box(catalog, kb):
    d = decide(catalog, kb, "rtx-pro-6000-pair")
    r = d.record["recommendation"]
    assert r["gpu"] == "rtx-pro-6000" and r["count"] == 2 and r["nodes"] == 1
    assert "no-multi-node-workstations" not in [t["rule"] for t in d.record["trace"]]
    assert catalog.gpus["rtx-pro-6000"].fig("gpus_per_node").sources == ("SKYPILOT_BOXES",)


def test_a_given_layout_is_evaluated_as_given_on_every_gpu(estimate_file):
    est = estimate_file("llama-70b-fp16-serving", layout={"tp": 4, "pp": 1, "dp": 2})
    fitting = [c for c in est.candidates if c.fits]
    assert len(fitting) >= 5
    assert all((c.tp, c.pp, c.dp, c.count) == (4, 1, 2, 8) for c in fitting)
    small = est.candidate("t4")
    assert not small.fits and "TP 4 x PP 1 x DP 2" in small.reason


def test_objectives_order_one_gpus_layouts(estimate_file):
    cost = estimate_file("7b-pretraining-deadline", constraints={"max_gpus": 64})
    time = estimate_file("7b-pretraining-deadline", objective="time", constraints={"max_gpus": 64})
    cards = estimate_file("7b-pretraining-deadline", objective="cards", constraints={"deadline_hours": None})
    a, b = cost.candidate("h100-sxm"), time.candidate("h100-sxm")
    assert b.training_hours < a.training_hours and b.count == 64
    assert cards.candidate("h100-sxm").count == cards.candidate("h100-sxm").min_count


def test_planner_chooses_zero_stage_only_when_not_given(estimate_file):
    free = estimate_file("llama-13b-full-finetune").candidate("h100-sxm")
    fixed = estimate_file("llama-13b-full-finetune", zero_stage=0).candidate("h100-sxm")
    assert free.zero_stage >= 1 and "chosen by the planner" in free.why["zero_stage"]
    assert fixed.zero_stage == 0 and "zero_stage" not in fixed.why
    assert fixed.tp > 1                      # without sharding, tensor parallelism inside the node holds it


def test_recommend_json_adds_the_ranking_keys(capsys):
    assert main(["recommend", str(EXAMPLES / "gpt-oss-120b-training.yaml"), "--format", "json"]) == 0
    import json
    rec = json.loads(capsys.readouterr().out)
    assert rec["recommendation"]["objective"] == "cost" and rec["recommendation"]["unit"] == "job"
    c = rec["candidates"][0]
    assert {"effective_cost", "premium"} <= set(c) and c["premium"] == pytest.approx(0.15)
    assert rec["unpriced"] and {"gpu", "count", "break_even_usd_per_gpu_hour"} == set(rec["unpriced"][0])
    assert rec["suggestions"] and {"change", "plan", "saving"} <= set(rec["suggestions"][0])
    h200 = next(x for x in rec["candidates"] if x["gpu"] == "h200-sxm")
    assert math.isclose(h200["premium"], 0.45)


def test_workload_rejects_bad_service_levels_and_layouts(tmp_path, capsys):
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: gpt-oss-120b\nlatency: {ttft_ms: 500, tbt: 3}\nlayout: {tp: 0}\nobjective: speed\n")
    assert main(["recommend", str(w)]) == 2
    err = capsys.readouterr().err
    assert "w.yaml:3" in err and "latency.tbt" in err
    assert "layout.tp: must be at least 1" in err and "objective" in err and "Traceback" not in err


def test_interactive_serving_without_targets_meets_the_mlperf_interactive_limits(catalog, kb):
    # 256 users of a 70B model with 6,000-token prompts: the cheapest plan that holds them (batch use)
    # gives each user a token every few hundred ms; interactive use takes MLPerf's Interactive limits of
    # the model's class (catalog/efficiency.yaml service_levels: a dense model up to 150B holds
    # llama2-70b-interactive's 450 ms / 40 ms) when the workload states none
    doc = {"name": "busy-70b", "mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "context_tokens": 8192,
           "prompt_tokens": 6000, "output_tokens": 500, "concurrency": 256}
    w = workload.parse(doc, catalog, "busy-70b")
    # the 450 ms first-token limit covers 2,048 prompt tokens; beyond, it grows with the prompt (a stated choice)
    assert (w.ttft_ms, w.tpot_ms) == (pytest.approx(450 * 6000 / 2048), 40)
    assert w.service_level_refs == ("MLPERF_CONF", "CHOICE_LONG_PROMPT")
    assert "grown to 1,318 ms for a 6,000-token prompt" in w.service_level_source
    assert "MLPerf" in w.service_level_source and "[" not in w.service_level_source      # no raw source IDs in the text
    assert w.inputs()["latency"] == "interactive"               # a default, not written back as the user's own
    d = decision.decide(estimator.estimate(w, catalog), kb, catalog)
    c = d.estimate.candidate(d.winner)
    assert c.tpot_ms <= 40 and c.ttft_ms <= w.ttft_ms
    assert d.record["service_level"] == {"ttft_ms": w.ttft_ms, "tpot_ms": 40, "stated": False, "source": w.service_level_source,
                                         "sources": ["MLPERF_CONF", "CHOICE_LONG_PROMPT"]}
    missed = [e["reason"] for ex in d.excluded.values() for e in ex if e["rule"] == "misses-stated-target"]
    assert all("the default for interactive use" in r for r in missed)
    # without the floor the cheapest plan that holds the users leaves them seconds behind
    bare = replace(w, ttft_ms=None, tpot_ms=None, service_level_source=None)
    b = decision.decide(estimator.estimate(bare, catalog), kb, catalog)
    slow = b.estimate.candidate(b.winner)
    assert slow.tpot_ms > 40 or slow.ttft_ms > w.ttft_ms
    batch = workload.parse({**doc, "latency": "batch"}, catalog, "busy-70b")
    assert batch.ttft_ms is None and batch.tpot_ms is None       # batch use: throughput, no latency floor
    offline = workload.parse({**doc, "concurrency": "max"}, catalog, "busy-70b")
    assert offline.ttft_ms is None and offline.tpot_ms is None   # concurrency: max is an offline run
    # a default service level may widen tensor parallelism too: replicas never shorten a long prefill
    long = workload.parse({**doc, "prompt_tokens": 32000, "output_tokens": 500, "context_tokens": 32768, "concurrency": 4},
                          catalog, "long-prompts")
    d = decision.decide(estimator.estimate(long, catalog), kb, catalog)
    assert d.winner and d.estimate.candidate(d.winner).ttft_ms <= long.ttft_ms == pytest.approx(450 * 32000 / 2048)
    stated = workload.parse({**doc, "latency": {"tpot_ms": 300}}, catalog, "busy-70b")
    assert stated.tpot_ms == 300 and stated.ttft_ms is None and stated.service_level_source is None


def test_replicas_are_rented_whole_instances_each():
    # three TP-4 replicas in 6-GPU instances take three instances (one replica each, 2 GPUs idle in each),
    # never two with a replica split between them; in 8-GPU instances two replicas share one
    from advisor.inputs.prices import Price
    from advisor.numbers import cost
    six = Price("h100-sxm", 6, 12.0, "P", "2026-11-30", "test", cost.PRICE_TIERS[0], "t.yaml", 1)
    eight = Price("h100-sxm", 8, 16.0, "P", "2026-11-30", "test", cost.PRICE_TIERS[0], "t.yaml", 2)
    usd, p, n = cost.pick_price([six], 12, 4)
    assert (n, usd) == (3, 36.0)
    usd, p, n = cost.pick_price([six, eight], 12, 4)
    assert (p.gpus_per_instance, n, usd) == (8, 2, 32.0)
    usd, p, n = cost.pick_price([six], 12, 2)                  # TP 2: three replicas per instance
    assert (n, usd) == (2, 24.0)


def test_a_zero3_stage_chosen_by_the_planner_is_timed_as_zero3(catalog, kb):
    # the planner's ZeRO-3 plan and the same plan with zero_stage: 3 written in the workload take the
    # same hours (the FSDP gathers and the fitted ZeRO-3 share follow the layout, not the workload)
    doc = {"name": "z", "mode": "training", "model": "llama-3.1-70b", "precision": "bf16", "context_tokens": 4096,
           "training_tokens": 2e10, "constraints": {"gpus": ["h100-sxm"]}, "layout": {"tp": 1, "pp": 1, "dp": 32}}
    chosen = estimator.estimate(workload.parse(doc, catalog, "z"), catalog).candidate("h100-sxm")
    assert chosen.zero_stage == 3                                 # 70B on 32 cards without TP: only FSDP fits
    stated = estimator.estimate(workload.parse({**doc, "zero_stage": chosen.zero_stage}, catalog, "z"), catalog).candidate("h100-sxm")
    assert chosen.training_hours == pytest.approx(stated.training_hours)
    assert "ZeRO-3/FSDP" in chosen.speed_explained["matmul_share"]["formula"]


def test_when_every_gpu_misses_the_closest_plan_is_the_answer_labelled_so(catalog, kb):
    # DeepSeek-V3 FP8 for 256 users on one 8-GPU node (DEP 8) against MLPerf's deepseek-r1-interactive
    # 15 ms per token: neither H200 nor B200 meets it; the nearer (B200) is the answer, never "no GPU"
    doc = {"name": "ds-node", "mode": "inference", "model": "deepseek-v3", "precision": "fp8", "concurrency": 256,
           "latency": {"ttft_ms": 1500, "tpot_ms": 15}, "layout": {"tp": 8, "pp": 1, "dp": 1, "ep": 8, "attention_dp": 8},
           "constraints": {"gpus": ["h200-sxm", "b200"]}}
    w = workload.parse(doc, catalog, "ds-node")
    d = decision.decide(estimator.estimate(w, catalog), kb, catalog)
    b200, h200 = d.estimate.candidate("b200"), d.estimate.candidate("h200-sxm")
    assert b200.tpot_ms > 15 and h200.tpot_ms > b200.tpot_ms            # both miss; B200 by less
    r = d.record["recommendation"]
    assert r["gpu"] == "b200" and r["count"] == 8
    assert r["closest"]["shortfall"] == pytest.approx(b200.tpot_ms / 15, rel=1e-3)
    assert f"{b200.tpot_ms:,.1f} ms" in r["closest"]["missed"]                 # the figure that missed
    assert d.record["decisive_rule"]["id"] == "ranking-closest-to-target"
    assert all(e["rule"] == "misses-stated-target" for e in d.excluded["h200-sxm"])
    from advisor.shell import memo
    text = " ".join(memo.render(d.record, catalog, "text").split())
    assert "No GPU meets the service level; the closest plan: Use 8 x NVIDIA B200" in text


def test_a_budget_per_hour_picks_the_plan_of_a_gpu_that_fits_it(catalog, kb):
    # the reviewer's F1: Qwen3-32B LoRA on 200M tokens within $10/h. The fastest H100 plan within 5% of
    # the cheapest per job is 8 cards ($10.32/h), over the budget; 4 cards ($5.16/h, $22.04 per job since the
    # 2026-12-07 refit, $22.35 before; the same
    # money) fit it, so the H100 is not excluded for a plan the search did not have to choose
    w = workload.parse({"name": "w14", "mode": "fine-tuning", "model": "qwen3-32b", "method": "lora", "context_tokens": 4096,
                        "micro_batch": 2, "training_tokens": 200e6, "constraints": {"budget_usd_per_hour": 10}}, catalog, "w14")
    d = decision.decide(estimator.estimate(w, catalog), kb, catalog)
    r = d.record["recommendation"]
    assert (r["gpu"], r["count"]) == ("h100-sxm", 4)
    assert r["usd_per_hour"] == pytest.approx(5.16) and r["usd_per_job"] == pytest.approx(22.04, abs=0.01)
    assert not d.excluded["h100-sxm"]


@pytest.mark.parametrize("constraints", [{"gpus": ["h100-sxm"], "max_gpus": 40}, {"budget_usd_per_hour": 60}])
def test_when_a_limit_keeps_the_deadline_out_of_reach_the_closest_plan_uses_what_it_allows(catalog, kb, constraints):
    # the second review's n9: Llama 3.1 8B on 100B tokens in 72 h needs about 48 H100 (41 before the width
    # term of the training share). Within 40 GPUs, or within $60/h (5 nodes at $10.32), the plan kept was 8
    # cards at 316 h (4.4x the deadline); the most the limit allows, 40 cards in DP 40, comes closest (1.17x)
    w = workload.parse({"name": "n9", "mode": "training", "model": "llama-3.1-8b", "precision": "bf16", "context_tokens": 4096,
                        "micro_batch": 2, "training_tokens": 100e9, "constraints": {"deadline_hours": 72, **constraints}},
                       catalog, "n9")
    d = decision.decide(estimator.estimate(w, catalog), kb, catalog)
    r, c = d.record["recommendation"], d.estimate.candidate("h100-sxm")
    assert (r["gpu"], r["count"], r["dp"]) == ("h100-sxm", 40, 40) and r["closest"]
    # (84.4 h before the 2026-12-07 refit; 81.6 h, 1.13x, since)
    assert c.training_hours == pytest.approx(81.6, abs=0.1) and c.usd_per_hour == pytest.approx(51.60)
    assert "(1.1x the target)" in d.record["decisive_rule"]["because"]


def test_a_wider_tp_on_as_many_cards_is_weighed_where_the_cards_have_a_scale_up_link(catalog):
    # the on-premises example (Llama 3.1 70B BF16, 64 users): TP 4 x DP 2 held the 450 ms / 40 ms service level
    # on 8 H100, and the wider TP 8 was tried only on fewer cards, never on the same 8; on NVLink it is the cheaper
    import yaml
    doc = yaml.safe_load((EXAMPLES / "on-prem-70b-serving.yaml").read_text())
    h100 = estimator.estimate(workload.parse(doc, catalog, "onprem"), catalog).candidate("h100-sxm")
    assert (h100.count, h100.tp, h100.dp) == (8, 8, 1)
    pair = estimator.estimate(workload.parse({**doc, "layout": {"tp": 4, "pp": 1, "dp": 2}}, catalog, "onprem"),
                              catalog).candidate("h100-sxm")
    assert not pair.misses and h100.usd_per_million_tokens < pair.usd_per_million_tokens * 0.85
    # over PCIe the replicas stay (K14): 4 RTX PRO 6000 for 32 users of the 70B at FP8 on premises, in 5 kW air-cooled
    # nodes (the on-prem-no-liquid-5kw transcript), keep TP 2 x DP 2; weighing TP 4 on the 4 cards had taken it
    doc = {"name": "rtx", "mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "context_tokens": 8192,
           "prompt_tokens": 1000, "output_tokens": 1000, "concurrency": 32, "latency": "interactive",
           "constraints": {"deployment": "on-prem", "liquid_cooling": False, "power_kw_per_node": 5.0, "gpus": ["rtx-pro-6000"]}}
    rtx = estimator.estimate(workload.parse(doc, catalog, "rtx"), catalog).candidate("rtx-pro-6000")
    assert (rtx.count, rtx.tp, rtx.dp) == (4, 2, 2)
