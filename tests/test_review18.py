"""Review 18 (the session's own runs and a helper's workloads, read as a senior engineer would), the findings fixed."""
import pytest

import conftest
from advisor.shell import memo as memo_mod


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_an_engine_that_cannot_run_on_the_only_gpu_names_the_engines_that_can(catalog, kb):
    # TensorRT-LLM asked on MI300X alone: the memo said only that TensorRT-LLM runs on CUDA, its WHY section was
    # a bare heading and its risks an empty one; the way out (vLLM or SGLang, both on ROCm) was nowhere
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-70b", "engine": "trtllm", "concurrency": 32,
                                      "constraints": {"gpus": ["mi300x"]}})
    assert d.winner is None
    text = _flat(memo_mod.render(d.record, catalog, "text"))
    assert "TensorRT-LLM does not run on AMD Instinct MI300X 192GB: vLLM and SGLang do." in text
    assert "WHY No rule chose a GPU: every candidate was excluded" in text
    assert "RISKS AND PREREQUISITES None raised by the rules. ASSUMPTIONS" in text
    md = _flat(memo_mod.render(d.record, catalog, "md"))
    assert "## Why No rule chose a GPU" in md and "## Risks and prerequisites None raised by the rules." in md


FT_70B_OWNED = {"mode": "fine-tuning", "model": "llama-3.1-70b", "method": "full", "precision": "bf16", "context_tokens": 4096,
                "micro_batch": 1, "training_tokens": 2e9,
                "constraints": {"deployment": "on-prem", "busy_share": 0.6, "jobs_per_month": 4}}


def test_buying_is_weighed_against_the_cheapest_rental_of_the_same_work(catalog, kb):
    # F1: 8 owned MI300X were set against renting 8 MI300X ($8,725 a month: "buying pays off after 22 months")
    # where renting H100 did the same four jobs for about $3,200 a month, and the [high] warning did not fire
    d = conftest.decide(catalog, kb, FT_70B_OWNED)
    c = d.estimate.candidate(d.winner)
    t = c.tco
    assert d.winner == "mi300x" and t["rent_plan"]["gpu"] == "h100-sxm"
    cloud = conftest.decide(catalog, kb, {**FT_70B_OWNED, "constraints": {"deployment": "cloud"}})
    per_job = cloud.estimate.candidate(cloud.winner).usd_per_job
    # four jobs rented on the cheapest plan, within the few percent the two plans' layouts differ by
    assert t["rent_usd_per_month"] < 1.1 * 4 * per_job and t["rent_usd_per_month"] < 4000
    assert t["break_even_months"] > t["write_off_months"]
    assert "buying-does-not-pay-back" in {w["rule"] for w in d.record["warnings"]}
    text = _flat(memo_mod.render(d.record, catalog, "text"))
    # (29%, 38% before plans kept the headroom free, issue 45 item 5: the owned MI300X plan is slower now)
    assert "(24 x h100-sxm: renting it costs 29% of renting 8 x mi300x for the same work)" in text


def test_jobs_that_need_more_hours_than_the_stated_busy_share_set_the_busy_hours(catalog, kb):
    # F7: "4 jobs a month of 117.9 h keep it 65% busy" beside energy and rent "at 60% busy" (busy_share 0.6);
    # the jobs take 108.4 h since the training share's width term, so the stated share here is 0.5
    half = {**FT_70B_OWNED, "constraints": {**FT_70B_OWNED["constraints"], "busy_share": 0.5}}
    d = conftest.decide(catalog, kb, half)
    c = d.estimate.candidate(d.winner)
    share = c.training_hours * 4 / 730
    assert 0.5 < share and c.tco["inputs"]["utilisation"]["value"] == share
    text = _flat(memo_mod.render(d.record, catalog, "text"))
    assert "at 77% busy" in text and "at 50% busy" not in text      # 59% before the headroom (issue 45 item 5)
    # a stated share above the jobs' is other work the cluster does: it stays
    more = conftest.decide(catalog, kb, {**FT_70B_OWNED, "constraints": {**FT_70B_OWNED["constraints"], "busy_share": 0.9}})
    assert more.estimate.candidate(more.winner).tco["inputs"]["utilisation"]["value"] == 0.9


def test_a_data_centre_purchase_is_not_weighed_against_renting_geforce_cards(catalog, kb):
    # F13: 2 x A100 PCIe bought for a 16-user on-prem service were compared with "4 x rtx-4090 at Hyperbolic",
    # a card the advisor itself says is not licensed for data centres
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "mistral-small-24b", "precision": "bf16", "concurrency": 16,
                                      "constraints": {"deployment": "on-prem"}})
    plans = [c for c in d.estimate.candidates if c.fits and c.tco and c.tco.get("rent_plan")]
    assert plans and all(catalog.gpus[c.tco["rent_plan"]["gpu"]].gpu_class != "consumer" for c in plans)


def test_a_gpu_without_a_tdp_still_shows_what_buying_it_costs(catalog, kb):
    # F5: 16 Ascend 910C on premises read only "price unknown (no TDP known ...)" beside a sourced $28,571 a card
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "qwen2.5-72b", "precision": "bf16", "concurrency": 64,
                                      "constraints": {"deployment": "on-prem", "gpus": ["ascend-910c"]}})
    c = d.estimate.candidate("ascend-910c")
    assert c.usd_per_hour is None
    assert c.price_unknown.startswith("no TDP known for this GPU") and f"buying them alone costs ${c.count * 28571 * 1.3:,.0f} ({c.count} x $28,571, 2024, x 1.3 server overhead" in c.price_unknown


def test_a_purchase_priced_on_an_old_quote_is_flagged(catalog, kb):
    # F2: 2 x A100 PCIe 40GB bought at a "2020-2022" quote, four years before the catalog's newest, with no word
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "mistral-small-24b", "precision": "bf16", "concurrency": 16,
                                      "constraints": {"deployment": "on-prem", "gpus": ["a100-40gb-pcie"]}})
    warn = {w["rule"]: w for w in d.record["warnings"]}
    assert "purchase-price-quoted-years-ago" in warn
    assert "quoted 2020-2022, 4 years before the catalog's newest purchase quotes" in warn["purchase-price-quoted-years-ago"]["text"]
    fresh = conftest.decide(catalog, kb, {"mode": "inference", "model": "mistral-small-24b", "precision": "bf16", "concurrency": 16,
                                          "constraints": {"deployment": "on-prem", "gpus": ["h100-sxm"]}})
    assert "purchase-price-quoted-years-ago" not in {w["rule"] for w in fresh.record["warnings"]}


def test_a_stated_layout_that_costs_more_names_the_planners_plan(catalog, kb):
    # F4: a stated TP 8 of Llama 3.1 70B FP8 for 16 users: 8 x H100 at $2.36 per million output tokens, no word
    # that the planner's 1 x H200 does it for $1.21
    w = {"mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "context_tokens": 8192, "concurrency": 16,
         "layout": {"tp": 8, "pp": 1, "dp": 1}, "constraints": {"gpus": ["h100-sxm", "h200-sxm"]}}
    d = conftest.decide(catalog, kb, w)
    free = conftest.decide(catalog, kb, {k: v for k, v in w.items() if k != "layout"})
    s = next(x for x in d.record["suggestions"] if x["change"].startswith("layout"))
    assert s["change"] == "layout TP 8 x PP 1 x DP 1 to the one the planner chooses"
    assert (s["plan"]["gpu"], s["plan"]["count"]) == (free.winner, free.estimate.candidate(free.winner).count) and s["saving"] > 0.4
    # the planner's own plan gets no such suggestion
    assert not [x for x in free.record["suggestions"] if x["change"].startswith("layout")]


def test_a_budget_nothing_meets_names_the_cheapest_plan_that_meets_the_workload(catalog, kb):
    # F9: Llama 3.3 70B FP8 for 128 users within $5/h: "No GPU can be recommended" and thirty exclusion lines
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "llama-3.3-70b", "precision": "fp8", "context_tokens": 8192,
                                      "concurrency": 128, "constraints": {"budget_usd_per_hour": 5}})
    ob = d.record["over_budget"]
    assert d.winner is None and ob["usd_per_hour"] > 5
    held = [c for c in d.estimate.candidates if c.fits and c.misses is None and c.usd_per_hour]
    assert ob["usd_per_hour"] == round(min(c.usd_per_hour for c in held), 2) or ob["usd_per_hour"] <= min(c.usd_per_hour for c in held) + 0.01
    text = _flat(memo_mod.render(d.record, catalog, "text"))
    assert (f"No GPU can be recommended within the budget: the cheapest plan that meets the workload is {ob['count']} x {ob['gpu']} "
            f"at ${ob['usd_per_hour']:,.2f}/h") in text


def test_the_local_development_preference_is_not_given_to_a_service(catalog, kb):
    # F10: "in its favour: Local development and rendering fit a workstation card" for a 16-user on-prem service
    w = {"mode": "inference", "model": "mistral-small-24b", "precision": "bf16", "concurrency": 16,
         "constraints": {"deployment": "on-prem", "gpus": ["rtx-pro-6000"]}}
    fired = lambda d: {f["rule"] for f in d.record["trace"]}
    assert "local-development-workstation" not in fired(conftest.decide(catalog, kb, w))
    assert "local-development-workstation" in fired(conftest.decide(catalog, kb, {**w, "concurrency": 1}))


def test_the_shipped_api_price_table_is_what_the_importer_gives_now(catalog):
    # F6: eight ids of the shipped table's `unmapped:` list (Mistral Small 24B at DeepInfra, Together and
    # Fireworks; five Mistral Nemo ids) map to catalog models under today's mapper: the table had not been
    # imported again after the mapper learnt them, and the memo said no API sells mistral-small-24b
    from advisor.base import yamlio
    from advisor.inputs import apiprices
    data = yamlio.load(conftest.ROOT / "catalog" / "api-prices.yaml")
    index = apiprices.model_index(catalog)
    assert [u for u in data["unmapped"] if apiprices.map_model(u, index)] == []
    assert {r["provider"] for r in data["api_prices"] if r["model"] == "mistral-small-24b"} >= {"deepinfra", "together_ai", "fireworks_ai"}
    # and every shipped row's id still maps to the model it is filed under
    assert all(apiprices.map_model(r["provider_model"], index) == r["model"] for r in data["api_prices"])


def test_the_dialogue_does_not_ask_qlora_for_a_precision_it_would_refuse(catalog, kb, tmp_path):
    # F11: after `method: qlora` the dialogue took `precision: bf16` and refused it only at the confirmation
    # screen ("QLoRA keeps the frozen base weights in 4 bits ..."); the question is now not asked for QLoRA
    from advisor.judgement.advise import Setup
    from advisor.shell import dialogue

    def asked_after(method: str) -> list[str]:
        dlg = dialogue.Dialogue(Setup(catalog, kb), out_dir=tmp_path)
        said, ids = {"mode": "fine-tuning", "model": "llama-3.1-8b", "method": method}, []
        while "method" not in ids:
            ids.append(dlg.current().id)
            dlg.submit(said.get(ids[-1], ""))      # Enter takes the default of anything else
        return ids + [dlg.current().id]

    assert asked_after("qlora")[-2:] == ["method", "context_tokens"]
    assert asked_after("lora")[-2:] == ["method", "precision"]


def test_a_closest_plan_inside_the_models_error_is_not_called_a_plan_nothing_meets(catalog, kb):
    # review 15, F9: "No GPU meets the service level" headed a plan 3% short of it, inside the speed model's 11.8%
    from conftest import EXAMPLES
    from advisor.base import yamlio
    d = conftest.decide(catalog, kb, dict(yamlio.load(EXAMPLES / "workstation-gemma-27b.yaml")))
    r = d.record["recommendation"]
    err = r["cost_range_basis"]["model_error"]
    assert 1 < r["closest"]["shortfall"] < 1 + err
    text = _flat(memo_mod.render(d.record, catalog, "text"))
    assert (f"No GPU meets the service level by the speed model's expected figure; the closest misses it by "
            f"{r['closest']['shortfall'] - 1:.0%}, within the model's {err:.1%} error: Use 1 x NVIDIA RTX PRO 6000") in text
    # a miss beyond the error keeps the plain label (tests/test_planner.py: 8 x B200 for a 20 ms TPOT)


# Review 19 (a second helper: 17 workloads of MoE serving and cluster-scale training), the findings fixed here


def test_a_contracted_cluster_is_not_warned_about_pipeline_stages_over_rented_instances(catalog, kb):
    # F9: "[high] The plan splits each copy of the model over 2 pipeline stages on 2 rented b200 instances" of a
    # 2,048-node contracted cluster, whose InfiniBand fabric comes with it (Llama 3 405B ran PP 16 on one)
    d = conftest.decide(catalog, kb, {"mode": "training", "model": "llama-3.1-405b", "precision": "bf16", "context_tokens": 8192,
                                      "micro_batch": 1, "training_tokens": 15.6e12, "constraints": {"deadline_hours": 2160, "gpus": ["h100-sxm"]}})
    c = d.estimate.candidate("h100-sxm")
    assert c.price["kind"] == "contract" and c.pp > 1 and c.nodes > 1
    assert "model-split-across-rented-instances" not in {f["rule"] for f in d.record["trace"] if f["gpu"] == "h100-sxm"}


def test_a_max_batch_job_is_not_told_of_the_one_sequence_it_asked(catalog, kb):
    # F8: "room for 900 sequences of 3,000 tokens, for the 1 asked" under concurrency: max
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "kimi-k2", "precision": "fp8", "context_tokens": 8192,
                                      "prompt_tokens": 1500, "output_tokens": 1500, "concurrency": "max", "latency": "batch"})
    fired = [f for f in d.record["trace"] if f["rule"].startswith("kv-headroom-below-half")]
    assert fired and {f["rule"] for f in fired} == {"kv-headroom-below-half-the-weights-max-batch"}
    texts = [w["text"] for c in d.record["candidates"] for w in c["warnings"] if w["rule"].startswith("kv-headroom")]
    assert texts and all("asked" not in t and "with concurrency: max the batch it runs" in t for t in texts)


def test_a_stated_disaggregated_layout_that_copies_the_mla_cache_says_how_to_split_it(catalog, kb):
    # F4: DeepSeek-V3 with decode {tp: 8} was refused with "... and the model's KV size must be known", nothing
    # about TP copying the one latent KV head onto all 8 cards, or that attention_dp 8 with ep 8 holds it
    w = {"mode": "inference", "model": "deepseek-v3", "precision": "fp8", "context_tokens": 8192, "prompt_tokens": 4000,
         "output_tokens": 1000, "concurrency": 512, "constraints": {"gpus": ["h200-sxm"]},
         "layout": {"prefill": {"tp": 8, "replicas": 2}, "decode": {"tp": 8, "replicas": 4}}}
    c = conftest.decide(catalog, kb, w).estimate.candidate("h200-sxm")
    assert not c.fits and "the decode pool's TP 8 keeps 8 copies of each sequence's KV cache (the model has 1 KV head): " \
                          "attention_dp 8 with ep 8 splits the sequences over its cards instead" in c.reason
    split = {"prefill": {"tp": 8, "ep": 8, "attention_dp": 8, "replicas": 2}, "decode": {"tp": 8, "ep": 8, "attention_dp": 8, "replicas": 4}}
    assert conftest.decide(catalog, kb, {**w, "layout": split}).estimate.candidate("h200-sxm").fits


def test_a_stated_global_batch_is_whole_micro_batches_on_every_replica_the_planner_picks(catalog, kb):
    # F6: with global_batch 512 and micro_batch 2 the suggestion was TP 8 x PP 3 x DP 5: 51.2 micro-batches a replica
    w = {"mode": "training", "model": "llama-3.1-70b", "precision": "bf16", "context_tokens": 8192, "micro_batch": 2,
         "global_batch": 512, "training_tokens": 300e9, "constraints": {"gpus": ["h100-sxm"]}}
    d = conftest.decide(catalog, kb, w)
    plans = [c for c in d.estimate.candidates if c.fits] + [s["plan"] for s in conftest.decide(
        catalog, kb, {**w, "layout": {"tp": 8, "pp": 4, "dp": 8}}).record["suggestions"]]
    dps = [c.dp if hasattr(c, "dp") else c["dp"] for c in plans]
    assert dps and all(512 % (2 * dp) == 0 for dp in dps)


def test_a_dep_group_over_two_nodes_sends_its_in_node_share_over_nvlink(catalog, kb):
    # F1: MoE serving never used expert parallelism across nodes, and an EP group wider than the NVLink domain
    # would have sent its whole all-to-all over the network. By hand: 1,000 tokens x top-8 x 7,168 hidden x
    # (1.03 B FP8 dispatch with its scales + 2 B combine) = 173.8 MB from each card of a 16-card group; 7/16 to its
    # own node's peers at 450 GB/s, 8/16 to the other node at 50 GB/s, both at once: 1.738 ms + 2 x 10 us
    from advisor.numbers import comm
    sent = 1000 * 8 * 7168 * (comm.DISPATCH_FP8_BYTES + comm.COMBINE_BYTES)
    t = comm.moe_layer_alltoall_split_s(1000, 8, 7168, 16, 8, 450e9, 50e9, 10e-6, comm.DISPATCH_FP8_BYTES)
    assert t == pytest.approx(2 * 10e-6 + sent * 0.5 / 50e9) and sent * (7 / 16) / 450e9 < sent * 0.5 / 50e9
    # DeepSeek-R1 FP8 for 2,048 users: 320 H100 at TP 8 x PP 2 x DP 20 ($2.70 per million output tokens) was the
    # plan; DEP groups of 16 over two nodes hold the same service level on about a third of the cards
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "deepseek-r1", "precision": "fp8", "context_tokens": 16384,
                                      "prompt_tokens": 2000, "output_tokens": 4000, "concurrency": 2048,
                                      "constraints": {"gpus": ["h100-sxm"]}})
    c = d.estimate.candidate("h100-sxm")
    assert c.tp == c.ep == c.attention_dp == 16 and c.count <= 128 and not c.misses
    assert c.tokens_per_s / c.count > 450
    # the all-to-all crosses the rented instances: priced where they are joined by RDMA (issue 46: Nebius's
    # InfiniBand, $1.60 per million output tokens; $0.79 had been two listings that state no network between them)
    assert c.price["fabric"]["rdma"] is True and c.usd_per_million_tokens < 2.0
