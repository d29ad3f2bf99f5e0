"""Time to first token at an arrival rate (issue 20, item 4): the batch engine's queue
(advisor/numbers/queueing.py) against MLPerf Server logs, the workload's `requests_per_s`, a plan's
TTFT at that rate by hand, a plan excluded for its capacity, and the replicas sized for the rate."""
import math
from dataclasses import replace

import pytest

from advisor.base.errors import InputError
from advisor.inputs import workload
from advisor.judgement import decision
from advisor.numbers import estimate as estimator
from advisor.numbers import poolspeed, queueing, speed
from advisor.numbers.calibration import engine_for
from advisor.numbers.layouts import Layout
from advisor.numbers.ledger import inference_ledger

from conftest import refuse


def parse(catalog, **doc):
    return workload.parse({"name": "t", "mode": "inference", **doc}, catalog, "t")


def pieces(catalog, w, gpu_id, tp, cal):
    led = inference_ledger(w)
    gpu = catalog.gpus[gpu_id]
    rate = speed.achievable_tflops(catalog, gpu, speed.compute_precision(w, gpu, led.sized))
    sh = speed._shape_of(w, led)
    rep = max(1.0, tp / led.kv.kv_heads)

    def at(b):
        return speed.serving_times(sh, led.kv.bytes_per_sequence, gpu, cal, rate.value, tp, 1, b, w.prompt_tokens,
                                   w.output_tokens, rep)
    b_max, _ = speed.max_batch(w, led, gpu, cal, tp, 1, w.prompt_tokens, w.output_tokens, rep)
    return led, gpu, rate, at, b_max


def test_the_slot_wait_is_md1_with_one_slot_and_vanishes_with_many():
    # one slot held 1 s, 0.9 requests/s: Pollaczek-Khinchine rho S / (2 (1 - rho)) = 0.9 / 0.2 = 4.5 s
    assert queueing.slot_wait_s(0.9, 1.0, 1) == pytest.approx(4.5)
    # 800 slots at the same 90% utilisation (each held 800 s): almost no one waits (Erlang C ~ 1e-4)
    assert queueing.slot_wait_s(0.9, 1.0, 800) < 0.01
    assert queueing.slot_wait_s(1.0, 1.0, 800) == math.inf


def test_mlperf_server_ttft_is_the_steps_of_the_batch_in_flight(catalog):
    # MLPerf Inference v4.1, NVIDIA DGX-H100 (8 x H100 SXM, TP1 x 8), mixtral-8x7b Server: 348 samples/s
    # offered, Offline 359.173 samples/s, gpu_batch_size 896; measured mean TTFT 180.0 ms (TPOT 102.6 ms)
    w = parse(catalog, model="mixtral-8x7b", precision="fp8", kv_precision="fp8", prompt_tokens=300, output_tokens=146,
              context_tokens=446, concurrency=1)
    cal = replace(speed.calibration(catalog), engine_max_batch=896)
    led, gpu, rate, at, b_max = pieces(catalog, w, "h100-sxm", 1, cal)
    load = queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 8, 0.0), rate, 348.0, cal, capacity_requests_per_s=359.173)
    lam, mu = 348.0 / 8, 359.173 / 8
    assert load.utilisation == pytest.approx(lam / mu) and load.slots == b_max
    # the batch in flight is the least that holds rate x (TTFT + output x TPOT) sequences (Little's law)
    b = load.in_flight

    def held(n):
        sv = at(n)
        return lam * (cal.request_ms / 1e3 + sv.prefill + cal.first_token_steps * sv.tpot + 146 * sv.tpot)
    assert b < b_max and held(b) <= b and held(b - 1) > b - 1
    wait = poolspeed.md_c_wait(lam, b_max / mu, b_max)       # one of 896 slots, each held 896 / mu s
    assert load.wait_ms == pytest.approx(wait * 1e3)
    sv = at(b)
    assert load.ttft_ms == pytest.approx((cal.request_ms / 1e3 + sv.prefill + cal.first_token_steps * sv.tpot + wait) * 1e3)
    assert 1.0 < cal.first_token_steps < 2.0          # fitted on the fit split: near the theory's 1.5
    assert 0.8 < load.ttft_ms / 180.0 < 1.3


def test_a_plans_ttft_at_the_workloads_rate_by_hand(catalog):
    # Llama 3.1 8B on one H100 at 20 requests/s (1,000 prompt, 200 output tokens)
    w = parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8, requests_per_s=20,
              layout={"tp": 1, "pp": 1, "dp": 1}, constraints={"gpus": ["h100-sxm"]})
    est = estimator.estimate(w, catalog)
    c = est.candidate("h100-sxm")
    cal = speed.calibration(catalog).for_engine(engine_for(catalog, catalog.gpus["h100-sxm"], w.model, w.engine)[0])
    led, gpu, rate, at, b_max = pieces(catalog, w, "h100-sxm", 1, cal)
    mu = at(b_max).tokens_per_s / 200                      # requests/s at the largest batch it holds
    b = next(b for b in range(1, b_max + 1)
             if 20 * (cal.request_ms / 1e3 + at(b).prefill + cal.first_token_steps * at(b).tpot + 200 * at(b).tpot) <= b)
    sv = at(b)
    ttft = cal.request_ms / 1e3 + sv.prefill + cal.first_token_steps * sv.tpot + poolspeed.md_c_wait(20, b_max / mu, b_max)
    assert c.ttft_ms == pytest.approx(ttft * 1e3)
    assert c.capacity_requests_per_s == pytest.approx(mu)
    assert "at 20 requests/s (requests_per_s)" in c.why["ttft_ms"] and f"{b:,} sequences in flight" in c.why["ttft_ms"]
    # at 97% of its capacity the wait for a slot is most of it, past the 500 ms interactive limit of an 8B model
    near = parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8,
                 requests_per_s=round(0.97 * mu, 2), layout={"tp": 1, "pp": 1, "dp": 1}, constraints={"gpus": ["h100-sxm"]})
    c2 = estimator.estimate(near, catalog).candidate("h100-sxm")
    assert c2.ttft_ms > c.ttft_ms and c2.misses.startswith(f"time to first token {c2.ttft_ms:,.0f} ms, over the 500 ms target")


def test_a_plan_below_the_rate_is_excluded_with_its_capacity(catalog, kb):
    w = parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8, requests_per_s=400,
              layout={"tp": 1, "pp": 1, "dp": 1}, constraints={"gpus": ["h100-sxm", "l40s"]})
    d = decision.decide(estimator.estimate(w, catalog), kb, catalog)
    for g in ("h100-sxm", "l40s"):
        c = d.estimate.candidate(g)
        cal = speed.calibration(catalog).for_engine(engine_for(catalog, catalog.gpus[g], w.model, w.engine)[0])
        *_, at, b_max = pieces(catalog, w, g, 1, cal)
        cap = at(b_max).tokens_per_s / 200
        assert cap < 400 and c.ttft_ms is None                 # no steady state past the capacity
        reason = [e["reason"] for e in d.excluded[g] if e["rule"] == "misses-stated-target"][0]
        assert f"capacity {cap:,.2f} requests/s < 400 requested" in reason
    # every plan misses: the answer is the one nearest the rate, labelled so
    assert d.record["recommendation"]["closest"]["missed"].startswith("capacity ")


def test_the_planner_adds_replicas_for_the_rate(catalog):
    # 8 users, but 60 requests/s: one H100 holds ~17 (llama-3.1-8b, 1,000/200 tokens): more replicas
    w = parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8, requests_per_s=60,
              constraints={"gpus": ["h100-sxm"]})
    c = estimator.estimate(w, catalog).candidate("h100-sxm")
    assert c.misses is None and c.capacity_requests_per_s > 60 and c.layout.dp > 1
    assert c.ttft_ms < w.ttft_ms
    # the same workload without a rate keeps the closed-loop figures of 8 users
    closed = estimator.estimate(parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8,
                                      constraints={"gpus": ["h100-sxm"]}), catalog).candidate("h100-sxm")
    assert closed.capacity_requests_per_s is None and "requests_per_s" not in closed.why.get("ttft_ms", "")


def test_requests_per_s_is_checked_and_recorded_only_when_given(catalog, tmp_path, capsys):
    assert "requests_per_s" not in parse(catalog, model="llama-3.1-8b").inputs()
    assert parse(catalog, model="llama-3.1-8b", requests_per_s=2.5).inputs()["requests_per_s"] == 2.5
    with pytest.raises(InputError):
        parse(catalog, model="llama-3.1-8b", requests_per_s=0)
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: llama-3.1-8b\nconcurrency: max\nrequests_per_s: 5\n")
    refuse(capsys, ["estimate", str(f)], f"{f}:4: requests_per_s: an arrival rate applies to online serving")
    f.write_text("mode: inference\nmodel: llama-3.1-8b\nrequests_per_s: 5\n"
                 "layout: {prefill: {tp: 1, replicas: 1}, decode: {tp: 1, replicas: 1}}\n")
    refuse(capsys, ["estimate", str(f)], f"{f}:3: requests_per_s: an arrival rate is timed for a layout")


def test_the_memo_says_which_rate_it_used(tmp_path, capsys):
    from advisor.shell.cli import main
    f = tmp_path / "w.yaml"
    f.write_text("name: rate\nmode: inference\nmodel: llama-3.1-8b\nprompt_tokens: 1000\noutput_tokens: 200\n"
                 "concurrency: 8\nrequests_per_s: 20\nconstraints: {gpus: [h100-sxm]}\n")
    assert main(["recommend", str(f), "--format", "md"]) == 0
    text = capsys.readouterr().out
    assert "Requests arriving per second (the time to first token is taken at this rate) | 20 requests/s" in text
    assert "at 20 requests/s (requests_per_s)" in text
