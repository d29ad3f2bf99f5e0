"""Offline batch LLM jobs (issue 44 item 5): a volume of requests or tokens and a deadline give the cards
that meet it, the job's hours, its total $ and its $ per million input + output tokens; every job with a
volume (batch or training) states job_hours and usd_per_job in its record's recommendation."""
import json

import pytest

from advisor.shell.cli import main
from conftest import EXAMPLES, decide, refuse

OVERNIGHT = {"name": "summarise a billion tokens overnight", "mode": "inference", "model": "llama-3.1-70b",
             "latency": "batch", "prompt_tokens": 3000, "output_tokens": 200, "volume": {"tokens": 1e9},
             "constraints": {"deadline_hours": 12}}


def _job(catalog, kb, **changes):
    data = {**OVERNIGHT, **changes}
    d = decide(catalog, kb, data)
    r = d.record["recommendation"]
    return d, r, d.estimate.candidate(r["gpu"]) if r else None


def test_a_billion_tokens_by_a_12_hour_deadline(catalog, kb):
    d, r, plan = _job(catalog, kb)
    assert d.estimate.workload.kind_spec.name == "llm-batch" and r["unit"] == "job"
    # the cards that meet the deadline: the job's hours are within it
    assert 0 < r["job_hours"] <= 12 and plan.misses is None
    # hours = the volume's output tokens (1e9 x 200 / 3,200) over the plan's own output tokens/s
    assert r["job_hours"] == pytest.approx(1e9 * 200 / 3200 / plan.tokens_per_s / 3600, rel=1e-9)
    # total $ = hours x the plan's price per hour (its per-GPU rate x the GPUs it rents)
    gpus_rented = plan.count + ((plan.price or {}).get("idle_gpus") or 0)
    per_gpu_hour = plan.usd_per_hour / gpus_rented
    assert r["usd_per_job"] == pytest.approx(r["job_hours"] * per_gpu_hour * gpus_rented, rel=1e-9)
    # $ per million input + output tokens: the job's $ over its 1,000 million tokens
    assert r["usd_per_million_io_tokens"] == pytest.approx(r["usd_per_job"] / 1000, rel=1e-9)
    # the plan runs each replica at its largest batch: an offline job, no user waiting
    assert d.estimate.workload.concurrency_max and plan.concurrency > 100


def test_the_deadline_adds_the_cards(catalog, kb):
    """Without a deadline the cheapest plan per job is fewer cards and runs past 12 h; the deadline
    adds replicas until it meets it."""
    _, r12, p12 = _job(catalog, kb)
    _, r, p = _job(catalog, kb, constraints={})
    assert r["gpu"] == r12["gpu"] == "h100-sxm"
    assert p.count < p12.count and r["job_hours"] > 12 >= r12["job_hours"]
    # the same volume in the same GPU-hours, give or take the replicas' batch (the cost per job stays near)
    assert r12["usd_per_job"] == pytest.approx(r["usd_per_job"], rel=0.1)


def test_a_prompt_heavy_job_is_prefill_bound(catalog, kb):
    """The hours count the prompts' prefill: the same requests and output with 15x the prompt take far
    longer, not the same decode time."""
    vol = {"requests": 100_000}
    _, long_prompt, _ = _job(catalog, kb, volume=vol, constraints={"gpus": ["h100-sxm"], "max_gpus": 8})
    _, short_prompt, _ = _job(catalog, kb, volume=vol, prompt_tokens=200, constraints={"gpus": ["h100-sxm"], "max_gpus": 8})
    assert long_prompt["count"] == short_prompt["count"]
    assert long_prompt["job_hours"] > 3 * short_prompt["job_hours"]


def test_a_deadline_beyond_max_gpus_exits_3_naming_the_binding_constraint(tmp_path, capsys):
    f = tmp_path / "w.yaml"
    f.write_text(json.dumps({**OVERNIGHT, "constraints": {"deadline_hours": 1, "max_gpus": 8}}))
    assert main(["recommend", str(f), "--format", "json"]) == 3
    out, err = capsys.readouterr()
    b = json.loads(out)["no_plan"]["binding"]
    assert b["constraint"] == "constraints.max_gpus" and b["value"] == 8 and b["count"] > 8
    assert "constraints.max_gpus (8) binds" in err


@pytest.mark.parametrize("volume, said", [
    ("{rows: 5}", "volume: must be one of {requests: N} or {tokens: N}"),
    ("{tokens: 0}", "volume.tokens: must be at least 1 tokens"),
    ("5", "volume: must be one of"),
    ("{requests: lots}", "volume.requests: must be a number"),
])
def test_a_bad_volume_is_one_line_naming_it(tmp_path, capsys, volume, said):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: llama-3.1-70b\nlatency: batch\n"
                 f"volume: {volume}\nconstraints: {{deadline_hours: 12}}\n")
    err = refuse(capsys, ["recommend", str(f)], said)
    assert len(err.strip().splitlines()) == 1 and f"w.yaml:4: {said}" in err


def test_a_volume_needs_latency_batch(tmp_path, capsys):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: llama-3.1-8b\nvolume: {requests: 1000}\n")
    refuse(capsys, ["recommend", str(f)], "volume: a volume is an offline batch job's: give latency: batch with it")


def test_batch_without_a_volume_stays_serving_per_million_output_tokens(catalog, kb):
    """T07: `latency: batch` without a volume is serving priced per million output tokens, as before."""
    d = decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-8b", "latency": "batch", "concurrency": "max"})
    r = d.record["recommendation"]
    assert r["unit"] == "million_tokens" and r["job_hours"] is None and r["usd_per_million_io_tokens"] is None


def test_a_training_job_with_a_budget_states_its_hours_as_job_hours(catalog, kb):
    d = decide(catalog, kb, {"mode": "fine-tuning", "model": "llama-3.1-8b", "method": "lora", "training_tokens": 1e8})
    r = d.record["recommendation"]
    plan = d.estimate.candidate(r["gpu"])
    assert r["unit"] == "job" and r["job_hours"] == plan.training_hours and r["usd_per_job"] == plan.usd_per_job


def test_the_example_is_the_overnight_job(capsys):
    assert main(["recommend", str(EXAMPLES / "batch-summarise-overnight.yaml"), "--format", "json"]) == 0
    r = json.loads(capsys.readouterr().out)["recommendation"]
    assert r["unit"] == "job" and r["job_hours"] <= 12 and r["usd_per_job"] > 0


def test_batch_api_prices_beside_the_plan(catalog, kb):
    """The providers' batch prices where the price table lists them (LiteLLM's *_cost_per_token_batches:
    Bedrock's Llama 3.1 70B at $0.36 per million in and out, half its $0.72), the job's cost there beside
    the plan's."""
    d, r, plan = _job(catalog, kb)
    b = d.record["api_comparison"]["batch"]
    assert b["match"] == "model" and b["provider"] == "bedrock"
    assert b["usd_per_million_input_batch"] == 0.36 and b["usd_per_million_output_batch"] == 0.36
    row = next(a for a in catalog.api_prices if a.provider_model == b["provider_model"])
    assert row.usd_per_million_input_batch == row.usd_per_million_input / 2
    # the job's 1,000 million tokens at that price, and the plan's own total beside it
    assert b["usd_per_job"] == pytest.approx(360.0) and b["plan_usd_per_job"] == pytest.approx(r["usd_per_job"], abs=1e-4)


def test_no_batch_price_is_derived_where_none_is_listed(catalog, kb):
    """A model whose providers list no batch price, nor any of its size class: none is made up."""
    with_batch = {a.model for a in catalog.api_prices if a.usd_per_million_input_batch is not None}
    assert "deepseek-v3" not in with_batch
    d = decide(catalog, kb, {**OVERNIGHT, "model": "deepseek-v3", "constraints": {}})
    b = d.record["api_comparison"]["batch"]
    assert b["match"] in ("none", "size-class") and (b["match"] == "none" or set(b["models"]) <= with_batch)


def test_the_memo_states_hours_total_and_per_million_tokens(capsys):
    """The summary says what a batch job's owner asks: the hours, the job's total $, $ per million input +
    output tokens, the deadline met, and the API and batch API for the same job (no tokens/s per user)."""
    assert main(["recommend", str(EXAMPLES / "batch-summarise-overnight.yaml"), "--format", "json"]) == 0
    r = json.loads(capsys.readouterr().out)["recommendation"]
    assert main(["recommend", str(EXAMPLES / "batch-summarise-overnight.yaml"), "--format", "summary"]) == 0
    short = " ".join(capsys.readouterr().out.split())
    assert f"${r['usd_per_job']:,.0f} per job ({r['job_hours']:,.1f} h)" in short
    assert main(["recommend", str(EXAMPLES / "batch-summarise-overnight.yaml"), "--format", "text"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"${r['usd_per_job']:,.0f} per job ({r['job_hours']:,.1f} h)" in out
    assert f"${r['usd_per_million_io_tokens']:.2f} per million input + output tokens" in out
    assert "within the 12-hour deadline" in out and "tokens/s per user" not in out.split("Runners-up")[0]
    assert "a batch API: $0.36 (bedrock" in out and "= $360" in out


def _dialogue(catalog, kb, answers: dict):
    """The guided dialogue answered by question id (Enter for the rest): the questions asked and the workload."""
    from advisor.judgement.advise import Setup
    from advisor.shell import dialogue
    d = dialogue.Dialogue(Setup(catalog, kb), dry_run=True)
    asked = []
    while d.stage == "questions":
        q = d.current().id
        asked.append(q)
        d.submit(answers.get(q, ""))
    return asked, d.workload_data()


def test_the_dialogue_asks_a_batch_job_its_volume_and_deadline(catalog, kb):
    answers = {"mode": "inference", "model": "llama-3.1-70b", "prompt_tokens": "3000", "output_tokens": "200",
               "latency": "offline", "volume": "1B tokens", "batch_deadline_hours": "12h"}
    asked, data = _dialogue(catalog, kb, answers)
    assert asked.index("volume") == asked.index("latency") + 1 and "batch_deadline_hours" in asked
    assert "service_level" not in asked and "deadline_hours" not in asked
    assert data["volume"] == {"tokens": 1_000_000_000} and data["constraints"]["deadline_hours"] == 12
    assert data["concurrency"] == "max"      # each replica at its largest batch, whatever was said before
    d = decide(catalog, kb, data)
    assert d.record["recommendation"]["unit"] == "job" and d.record["recommendation"]["job_hours"] <= 12
    # no volume: batch serving as before, and no deadline asked (serving has none)
    asked, data = _dialogue(catalog, kb, {**answers, "volume": ""})
    assert "volume" in asked and "batch_deadline_hours" not in asked and "volume" not in data
    # interactive serving is asked neither
    asked, _ = _dialogue(catalog, kb, {**answers, "latency": "interactive"})
    assert "volume" not in asked and "batch_deadline_hours" not in asked


def test_a_fixed_concurrency_or_an_arrival_rate_is_refused_for_a_batch_job(tmp_path, capsys):
    f = tmp_path / "w.yaml"
    f.write_text(json.dumps({**OVERNIGHT, "concurrency": 64}))
    refuse(capsys, ["recommend", str(f)], "concurrency: an offline batch job runs each replica at the largest batch")
    f.write_text(json.dumps({**OVERNIGHT, "concurrency": "max"}))
    assert main(["recommend", str(f), "--format", "summary"]) == 0
    capsys.readouterr()


def test_without_a_deadline_a_job_past_30_days_is_sized_on_the_knee(catalog, kb):
    """No deadline: the cheapest plan per job, unless it runs past the long-job bound (numbers/longjob.py,
    30 days): then, as a training job, the plan on the knee of cost against time (issue 45: the shortest
    run of at most 90 days within 10% of the cheapest of them), the cheapest plan and the one within 30
    days named beside it. (Before the train-size merge a batch job was held to the 30 days.)"""
    from advisor.numbers import longjob
    d, r, plan = _job(catalog, kb, model="llama-3.1-405b", volume={"tokens": 2e11}, constraints={"gpus": ["h100-sxm"]})
    # the cheapest plan, 16 x H100, would run 7,189 h (300 days): named beside, fewer cards and longer
    assert plan.beyond_bound["training_hours"] > longjob.KNEE_DAYS[0] * 24 and plan.beyond_bound["count"] < r["count"]
    # 112 x H100 for 1,027 h (43 days), the same $339,303 per job as the 60- and 90-day runs; 160 cards
    # within 30 days cost 19% more, past the 10% tolerance: named as the plan within the bound
    knee = plan.knee
    assert [x["limit"] for x in d.record["limits"]] == ["knee_of_cost_and_time"]
    assert longjob.LONG_JOB_HOURS < r["job_hours"] <= longjob.KNEE_DAYS[0] * 24 and r["count"] == 112
    low = knee["cheapest_run_usd_per_job"]
    near = [x for x in knee["runs"] if x["usd_per_job"] <= low * (1 + longjob.KNEE_TOLERANCE)]
    assert r["job_hours"] == pytest.approx(min(x["training_hours"] for x in near))
    month = next(x for x in knee["runs"] if x["days"] == 30)
    assert month["usd_per_job"] > low * (1 + longjob.KNEE_TOLERANCE) and knee["within_bound"].startswith(f"{month['count']} x h100-sxm")


def test_the_memo_speaks_of_a_job_not_of_users_or_a_month(capsys):
    """An offline job has no user waiting and no monthly bill: the memo's speed is the replicas' throughput
    at their largest batch (not 'a closed loop of N users' at 'tokens/s per user'), and the summary gives
    the job's cost, not 730 hours of it."""
    path = str(EXAMPLES / "batch-summarise-overnight.yaml")
    assert main(["recommend", path, "--format", "summary"]) == 0
    short = " ".join(capsys.readouterr().out.split())
    assert "per month" not in short
    assert main(["recommend", path, "--format", "md"]) == 0
    speed = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| Speed |"))
    assert "each replica at its largest batch" in speed and "per user" not in speed and "closed loop" not in speed
