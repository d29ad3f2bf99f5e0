"""Review 13's findings, each pinned by the figure or the words a user would check: a deadline's GPU
need beside the batch bound (11), no monthly bill for a job (9), a MoE training layout's model copies
(13), a rack-scale system under a smaller GPU ceiling (12) and a runner-up's reason (12), a rule both
plans carry (10), and a service level met only within the model's error (6). The long prompt's first
token at an arrival rate (1) is in tests/test_queueing.py."""
import json

import conftest
from advisor.judgement import alternatives
from advisor.shell.cli import main


def decide(catalog, kb, data):
    return conftest.decide(catalog, kb, data)


def run(tmp_path, capsys, doc: str, *args) -> str:
    f = tmp_path / "w.yaml"
    f.write_text(doc)
    assert main(["recommend", str(f), *args]) == 0
    return capsys.readouterr().out


def test_a_deadline_needs_its_own_count_of_gpus_not_the_batch_bounds(catalog, kb):
    # 8B on 1T tokens in one hour within 8 GPUs: "needs about 2,048 GPUs" was the batch bound's count,
    # a sixth of what the hour needs by the plan's own figures (8 x 1,637 h = 13,096 GPU-hours)
    d = decide(catalog, kb, {"mode": "training", "model": "llama-3.1-8b", "training_tokens": 1e12,
                             "constraints": {"deadline_hours": 1, "max_gpus": 8}})
    c = d.estimate.candidate(d.winner)
    lim = next(x for x in d.record["limits"] if x["gpu"] == d.winner and x["limit"] == "max_gpus")
    assert lim["needed_gpus"] >= c.count * c.training_hours           # at least the GPU-hours in the hour
    assert f"meeting the target needs about {lim['needed_gpus']:,} GPUs" in c.misses
    assert "feeds at most 2,048 GPUs at TP 1" in c.misses             # and the batch bound, said apart


LORA = "mode: fine-tuning\nmodel: llama-3.1-8b\nmethod: lora\ncontext_tokens: 4096\nmicro_batch: 4\ntraining_tokens: 50e6\n"


def test_a_rented_jobs_memo_shows_its_cost_per_job_not_a_month_of_24x7(tmp_path, capsys):
    # "$10.32 ($7,534 a month, 730 h: 24x7, no utilisation given)" beside a seven-minute, $1.22 job
    text = run(tmp_path, capsys, LORA)
    line = next(x for x in text.splitlines() if x.startswith("Per hour:"))
    assert "a month" not in line and "24x7" not in text.split("Per unit of work")[0]
    assert "Per unit of work:" in text and "per job" in text
    summary = run(tmp_path, capsys, LORA, "--format", "summary")
    # the cost line after the recommendation's (its continuation lines, wrapped at 100 columns, indented 4)
    cost = next(x for x in summary.splitlines()[1:] if not x.startswith("    "))
    assert "per month" not in summary and "per job" in cost
    # jobs a month give the month its hours: then the monthly cost is shown, on them
    monthly = run(tmp_path, capsys, LORA + "constraints: {jobs_per_month: 20}\n")
    assert "a month" in next(x for x in monthly.splitlines() if x.startswith("Per hour:"))


def test_a_moe_training_layout_counts_model_copies_not_data_parallel_ranks(tmp_path, capsys):
    # "24 replicas" for DP 24 with the experts over 8 cards: 3 copies of the model, not 24
    text = run(tmp_path, capsys, "mode: fine-tuning\nmodel: mixtral-8x7b\nmethod: full\ncontext_tokens: 4096\n"
                                 "micro_batch: 1\ntraining_tokens: 2e9\nconstraints: {deadline_hours: 72, gpus: [h100-sxm]}\n",
               "--format", "json")
    r = json.loads(text)["recommendation"]
    assert r["ep"] > 1 and r["dp"] > r["ep"]
    memo = run(tmp_path, capsys, "mode: fine-tuning\nmodel: mixtral-8x7b\nmethod: full\ncontext_tokens: 4096\n"
                                 "micro_batch: 1\ntraining_tokens: 2e9\nconstraints: {deadline_hours: 72, gpus: [h100-sxm]}\n")
    copies = r["tp"] * r["dp"] // r["ep"]
    flat = " ".join(memo.split())
    assert f"{r['dp']} data-parallel ranks, {copies} model copies" in flat
    assert f"the experts in {copies} copies of {r['ep']} cards" in flat and f"{r['dp']} replicas" not in flat


def test_a_rack_is_not_taken_under_a_ceiling_below_it_and_a_runner_up_says_why(catalog, kb, tmp_path, capsys):
    # 8B on 1T tokens in 14 days within 64 GPUs: 56 and 64 cards of a 72-GPU NVL72 rack ranked second and third
    d = decide(catalog, kb, {"mode": "training", "model": "llama-3.1-8b", "precision": "bf16", "context_tokens": 8192,
                             "micro_batch": 1, "training_tokens": 1e12, "constraints": {"deadline_hours": 336, "max_gpus": 64}})
    for g in ("gb200-nvl72", "gb300-nvl72"):
        c = next(x for x in d.record["candidates"] if x["gpu"] == g)
        assert c["excluded"] and c["excluded_by"][0]["rule"] == "rack-scale-system-above-the-gpu-ceiling"
    out = run(tmp_path, capsys, "mode: training\nmodel: llama-3.1-8b\nprecision: bf16\ncontext_tokens: 8192\nmicro_batch: 1\n"
                                "training_tokens: 1e12\nconstraints: {deadline_hours: 336, max_gpus: 64}\n", "--format", "summary")
    runner = next(x for x in out.splitlines() if x.startswith("Runner-up:"))
    assert not runner.rstrip().endswith(":") and len(runner.split(": ", 1)[1]) > 5


def test_a_rule_both_plans_carry_is_not_why_one_lost():
    # DeepSeek-V3 for 64 users: "the rules count it 10% dearer (Serving on several GPUs ...)" where the
    # winner carried the same -10; what separates them is the winner's +10
    several, heavy = "fewer-cards-for-serving", "large-model-inference-cards"
    titles = {several: "Serving on several GPUs adds latency and complexity", heavy: "Memory-heavy inference belongs on H200"}
    win = {"premium": 0.0, "contributions": [{"rule": heavy, "weight": 10}, {"rule": several, "weight": -10}]}
    lost = {"excluded": False, "premium": -0.1, "contributions": [{"rule": several, "weight": -10}]}
    text = alternatives.plain_reason(lost, [], titles, 1.06, win)
    assert text == "it costs 6% more, worth paying up to 10% more for the winner (Memory-heavy inference belongs on H200)"
    # a penalty the winner does not carry is still said, at what it is worth beside the winner's own
    lost2 = {"excluded": False, "premium": -0.2, "contributions": [{"rule": several, "weight": -10}, {"rule": "x", "weight": -10}]}
    text2 = alternatives.plain_reason(lost2, [], {**titles, "x": "Outside CUDA"}, 1.4, win)
    assert text2.startswith("it costs 40% more, the rules count it 9% dearer still (Outside CUDA)")


def test_a_service_level_met_only_within_the_model_error_is_a_risk(catalog, kb):
    # 100k-token prompts on Llama 3.1 70B FP8 with a 10 s TTFT: the plan met it by 0.4% and was called stable
    d = decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "context_tokens": 131072,
                             "prompt_tokens": 100000, "output_tokens": 500, "concurrency": 8,
                             "latency": {"ttft_ms": 10000, "tpot_ms": 60}})
    c = d.estimate.candidate(d.winner)
    err = catalog.efficiency["model_error"]["serving"]["v"]
    share = max(c.ttft_ms / 10000, c.tpot_ms / 60) * (1 + err)
    assert 1 < share < 1 + err + 0.01
    w = [x for x in d.candidate_warnings[d.winner] if x["rule"] == "risk-service-level-within-model-error"]
    assert w and "meets the service level only at the speed model's expected figure" in w[0]["text"]
    assert f"{c.ttft_ms:,.1f} ms against the 10,000 ms target, {c.ttft_ms * (1 + err):,.1f} ms at the model's" in w[0]["text"]
    # with room to spare (targets no plan comes near) no such risk
    loose = decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "context_tokens": 131072,
                                 "prompt_tokens": 100000, "output_tokens": 500, "concurrency": 8,
                                 "latency": {"ttft_ms": 120000, "tpot_ms": 1000}})
    lc = loose.estimate.candidate(loose.winner)
    assert max(lc.ttft_ms / 120000, lc.tpot_ms / 1000) * (1 + err) < 1
    assert not [x for x in loose.candidate_warnings[loose.winner] if x["rule"] == "risk-service-level-within-model-error"]


def test_at_a_rate_the_steps_terms_are_those_of_the_batch_in_flight(catalog, kb):
    # Qwen3-235B at 10 requests/s: the TPOT of 107 sequences per replica was explained by the terms of the
    # 32 of `concurrency`, which did not add up to it
    d = decide(catalog, kb, {"mode": "inference", "model": "qwen3-235b-a22b", "precision": "fp8", "context_tokens": 32768,
                             "prompt_tokens": 4000, "output_tokens": 500, "concurrency": 64, "requests_per_s": 10,
                             "latency": {"ttft_ms": 2000, "tpot_ms": 50}})
    c = d.estimate.candidate(d.winner)
    per_replica = c.concurrency // c.dp
    assert per_replica > 64 // c.dp
    terms = c.speed_explained
    assert terms["prefill_interference_ms"]["formula"].startswith(f"{per_replica} prompts' prefill")
    assert f"KV of {per_replica} sequences" in terms["weights_and_kv_read_ms"]["formula"]
    assert "at 10 requests/s" in terms["ttft_at_rate_ms"]["formula"]


def test_a_maturing_stack_other_than_cuda_trains_at_less_of_the_borrowed_share(catalog):
    # Ascend 910C (CANN, no training record) trained a 7B at 52% MFU, as a B200 does; serving already scaled
    # such stacks by the fitted maturing_software_share, training did not
    from advisor.numbers import speed
    cal = speed.calibration(catalog)
    share, how = cal.train_share_for(catalog.gpus["ascend-910c"], "bf16")
    # the serving fit's share (0.661 since serve-fit's refit, 0.662 before), read from the calibration
    assert cal.maturing_share == 0.661
    assert share == cal.train_default["bf16"] * cal.maturing_share
    assert f"x {cal.maturing_share:.3f} for its cann stack (limited" in how
    # a fitted family keeps its own share, and CUDA's newer parts keep the borrowed one (their records fit without it)
    assert cal.train_share_for(catalog.gpus["tpu-v6e"], "bf16")[0] == cal.train_share["tpu"]["bf16"]
    assert cal.train_share_for(catalog.gpus["b200"], "bf16")[0] == cal.train_default["bf16"]
