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
        return speed.serving_times(sh, led.kv.bytes_per_sequence, gpu, cal, rate.value, Layout(tp, 1, 1), b, w.prompt_tokens,
                                   w.output_tokens, rep)
    b_max, _ = speed.max_batch(w, led, gpu, cal, Layout(tp, 1, 1), w.prompt_tokens, w.output_tokens, rep)
    return led, gpu, rate, at, b_max


def test_the_slot_wait_is_md1_with_one_slot_and_vanishes_while_the_batch_is_below_the_slots():
    # one slot held 1 s, 0.9 requests/s: Pollaczek-Khinchine rho S / (2 (1 - rho)) = 0.9 / 0.2 = 4.5 s
    assert queueing.slot_wait_s(0.9, 1.0, 1) == pytest.approx(4.5)
    # 800 slots, each request holding one 800 s at 0.9 requests/s: 720 busy on average (the batch in
    # flight, Little's law), 80 free: almost no one waits (Erlang C ~ 1e-4)
    assert queueing.slot_wait_s(0.9, 800.0, 800) < 0.01
    # the same rate holding a slot 900 s would keep 810 of the 800 busy: no steady state
    assert queueing.slot_wait_s(0.9, 900.0, 800) == math.inf


def test_a_harness_group_waits_half_its_window_and_is_prefilled_in_one_step():
    # AMD's MLPerf vLLM harness (sync_sut.py batch_samples_loop: 0.3 s or 96 requests) at 76 requests/s:
    # 22.8 requests per group, each waiting 0.15 s on average; at 400 requests/s the 96 fill in 0.24 s
    assert queueing.harness_group(76.0, 0.3, 96) == pytest.approx((22.8, 0.15))
    assert queueing.harness_group(400.0, 0.3, 96) == pytest.approx((96.0, 0.12))


def mlperf(catalog, model, output, max_batch):
    w = parse(catalog, model=model, precision="fp8", kv_precision="fp8", prompt_tokens=300, output_tokens=output,
              context_tokens=300 + output, concurrency=1)
    return w, replace(speed.calibration(catalog), engine_max_batch=max_batch)


def floor_s(cal, at):
    """The fixed time per step a batch at an arrival rate pays: rate_read_share x the replica's own weight
    read, the memory time of its one-sequence step (queueing.with_floor)."""
    return cal.rate_read_share * at(1).step_mem


def floored(at, cal):
    """The replica's own step with that floor (a plan's times at the workload's rate)."""
    return lambda b: queueing.with_floor(at(b), floor_s(cal, at))


def scaled_times(at, b_max, output, capacity_per_replica, floor=0.0):
    """The replica's times scaled so that its throughput at the largest batch, the floor included, is the
    measured capacity: step(b) = floor + k x the speed model's step."""
    k = (b_max / (capacity_per_replica * output) - floor) / at(b_max).tpot
    return k, lambda b: queueing.with_floor(queueing.scaled(at(b), k), floor)


def test_mlperf_server_ttft_is_the_steps_of_the_batch_in_flight(catalog):
    # MLPerf Inference v4.1, NVIDIA 8 x H200 SXM (TP1 x 8), llama2-70b-99 Server on TensorRT-LLM: 101
    # samples/s offered, Offline 107.477 samples/s, gpu_batch_size 896; measured mean TTFT 198.3 ms, mean
    # TPOT 123.3 ms (catalog/measurements.yaml mlperf41-nvidia-h200-sxm-141gbx8-trt-llama2-70b-server-ttft)
    w, cal = mlperf(catalog, "llama-2-70b", 291, 896)
    led, gpu, rate, own, b_max = pieces(catalog, w, "h200-sxm", 1, cal)
    load = queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 8, 0.0), rate, 101.0, cal, capacity_requests_per_s=107.477)
    lam, mu = 101.0 / 8, 107.477 / 8
    k, at = scaled_times(own, b_max, 291, mu, floor_s(cal, own))
    assert 0.5 < k < 0.8          # the speed model's H200 step is slower than this system's Offline run

    def held(n):      # a request's time in the engine: the first token's steps, then its 291 tokens
        sv = at(n)
        return cal.request_ms / 1e3 + cal.first_token_steps * sv.tpot + 291 * sv.tpot
    # the batch in flight is the least that holds rate x that time (Little's law), below the 595 KV slots
    b = load.in_flight
    assert b < b_max == load.slots and lam * held(b) <= b and lam * held(b - 1) > b - 1
    assert load.utilisation == pytest.approx(lam / min(mu, b_max / held(b_max)))
    wait = poolspeed.md_c_wait(lam, held(b), b_max)       # one of the slots, each held that long
    assert load.wait_ms == pytest.approx(wait * 1e3) and wait < 1e-3
    # no prefill of its own: the prompt runs inside the step, whose TPOT carries every prompt's share
    sv = at(b)
    assert load.ttft_ms == pytest.approx((cal.request_ms / 1e3 + cal.first_token_steps * sv.tpot + wait) * 1e3)
    # fitted on the fit split of the MLPerf Server logs: theory 1.5 (the step boundary, then the prompt's step);
    # 2.3 with the engines' KV taken as sequences grow, 1.35 once each step at a rate pays its fixed part
    # (rate_read_share, issue 46: the longer step carries what the extra steps stood for; docs/accuracy.md)
    assert 1.0 < cal.first_token_steps < 3
    assert 0.8 < load.ttft_ms / 198.3 < 1.25


def test_vllm_before_chunked_prefill_prefills_the_harness_group_apart(catalog):
    # MLPerf Inference v4.1, 8 x MI300X (TP1 x 8, AMD's harness: 0.3 s batches, vLLM 0.4 max_num_seqs 1024),
    # llama2-70b-99 Server: 76 samples/s offered, Offline 82.1782; measured mean TTFT 1,038.4 ms at a mean
    # TPOT of 143.1 ms: 7 TPOTs, where TensorRT-LLM's runs give 1.6-1.8
    w, cal = mlperf(catalog, "llama-2-70b", 294, 1024)
    cal = replace(cal, prefill_in_step=False)
    led, gpu, rate, own, b_max = pieces(catalog, w, "mi300x", 1, cal)
    load = queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 8, 0.0), rate, 76.0, cal, capacity_requests_per_s=82.1782,
                                    harness=(0.3, 96))
    lam = 76.0 / 8
    k, at = scaled_times(own, b_max, 294, 82.1782 / 8, floor_s(cal, own))
    sv = at(load.in_flight)
    per_prompt = sv.interference * 294 / sv.batch         # one prompt's prefill inside a batch
    # 30 ms request handling + 150 ms in the harness + half the running decode step + one prefill-only
    # step over the group of 22.8 prompts (the first with the weights read, 21.8 more at their compute)
    first = cal.request_ms / 1e3 + 0.15 + sv.step / 2 + sv.prefill + 21.8 * per_prompt
    assert lam * (first + 294 * sv.tpot) <= load.in_flight
    assert load.ttft_ms == pytest.approx((first + load.wait_ms / 1e3) * 1e3)
    assert "150 ms in the harness's batch" in load.formula and "prefill-only step over 22.8 prompts" in load.formula
    assert 0.9 < load.ttft_ms / 1038.4 < 1.4


def test_without_a_harness_the_prompts_of_one_decode_step_are_prefilled_together(catalog):
    # an engine with prefill-only steps (vLLM before chunked prefill) at 10 requests/s: the prompts that
    # arrive during one decode step (rate x step, beside the request's own) wait for its end and are
    # prefilled together, in a step the decodes wait for
    w = parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8)
    cal = replace(speed.calibration(catalog), engine_max_batch=256, prefill_in_step=False)
    led, gpu, rate, at, b_max = pieces(catalog, w, "h100-sxm", 1, cal)
    load = queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 1, 0.0), rate, 10.0, cal)
    sv = floored(at, cal)(load.in_flight)
    prompts = 1 + 10.0 * sv.step
    group = sv.prefill + (prompts - 1) * sv.interference * 200 / sv.batch
    assert queueing.group_prefill_s(sv, 200, prompts) == pytest.approx(group)
    first = cal.request_ms / 1e3 + sv.step / 2 + group
    assert load.ttft_ms == pytest.approx((first + load.wait_ms / 1e3) * 1e3)
    assert f"a prefill-only step over {prompts:,.1f} prompts" in load.formula and "harness" not in load.formula
    # the same engine mixing the prompt into the step instead: the fitted steps, or the prompt's own prefill
    # where that is longer (here, at a light batch, the 1,000-token prompt alone outlasts the steps)
    mixed = queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 1, 0.0), rate, 10.0, replace(cal, prefill_in_step=True))
    steps = cal.first_token_steps * mixed.tpot_ms
    assert mixed.ttft_ms == pytest.approx(cal.request_ms + max(mixed.prefill_ms, steps) + mixed.wait_ms)
    assert ("the prompt's own prefill" if mixed.prefill_ms > steps else "decode steps of that batch") in mixed.formula


def test_a_plans_ttft_at_the_workloads_rate_by_hand(catalog):
    # Llama 3.1 8B on one H100 at 15 requests/s (1,000 prompt, 200 output tokens; it holds 19.8 at most)
    w = parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8, requests_per_s=15,
              layout={"tp": 1, "pp": 1, "dp": 1}, constraints={"gpus": ["h100-sxm"]})
    est = estimator.estimate(w, catalog)
    c = est.candidate("h100-sxm")
    cal = speed.calibration(catalog).for_engine(engine_for(catalog, catalog.gpus["h100-sxm"], w.model, w.engine)[0])
    assert cal.prefill_in_step          # TensorRT-LLM's in-flight batching (catalog/engines.yaml prefill)
    led, gpu, rate, at, b_max = pieces(catalog, w, "h100-sxm", 1, cal)
    at = floored(at, cal)      # each step at the rate pays the fitted floor

    def held(b):
        return cal.request_ms / 1e3 + cal.first_token_steps * at(b).tpot + 200 * at(b).tpot
    mu = min(at(b_max).tokens_per_s / 200, b_max / held(b_max))     # requests/s at the largest batch it holds
    b = next(b for b in range(1, b_max + 1) if 15 * held(b) <= b)
    sv = at(b)
    ttft = cal.request_ms / 1e3 + cal.first_token_steps * sv.tpot + poolspeed.md_c_wait(15, held(b), b_max)
    assert c.ttft_ms == pytest.approx(ttft * 1e3)
    assert c.capacity_requests_per_s == pytest.approx(mu)
    assert "at 15 requests/s (requests_per_s)" in c.why["ttft_ms"] and f"{b:,} sequences in flight" in c.why["ttft_ms"]
    # the plan's other figures are the rate's too, not those of the 8 users of `concurrency`: the step of
    # the batch in flight, and 15 x 200 = 3,000 output tokens/s served (its cost per token follows)
    assert c.concurrency == b and c.tpot_ms == pytest.approx(sv.tpot * 1e3)
    assert c.tokens_per_s_per_user == pytest.approx(1 / sv.tpot) and c.tokens_per_s == pytest.approx(3000)
    assert c.usd_per_million_tokens == pytest.approx(c.usd_per_hour / (3000 * 3600) * 1e6)
    # at 99.9% of its capacity the batch in flight nears the slots and the wait for one is most of the TTFT,
    # past the 500 ms interactive limit of an 8B model
    near = parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8,
                 requests_per_s=round(0.999 * mu, 2), layout={"tp": 1, "pp": 1, "dp": 1}, constraints={"gpus": ["h100-sxm"]})
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
        full = floored(at, cal)(b_max)
        cap = min(full.tokens_per_s / 200, b_max / (cal.request_ms / 1e3 + (cal.first_token_steps + 200) * full.tpot))
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
    # the Speed line says its figures are at an arrival rate, with the queue in the first token (issue 46)
    assert "at 20 requests/s arriving at random (Poisson; the first token includes the wait for a free slot)" in text


def test_the_memo_says_its_figures_are_at_a_closed_loop_of_users(tmp_path, capsys):
    from advisor.shell.cli import main
    f = tmp_path / "w.yaml"
    f.write_text("name: loop\nmode: inference\nmodel: llama-3.1-8b\nprompt_tokens: 1000\noutput_tokens: 200\n"
                 "concurrency: 8\nconstraints: {gpus: [h100-sxm]}\n")
    assert main(["recommend", str(f), "--format", "md"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "at a closed loop of 8 users (each sends its next request when the last is answered: no queue)" in text
    assert "arriving at random" not in text


def test_a_rate_near_capacity_keeps_the_batch_its_step_floor_sets(catalog):
    # MLPerf Inference v4.1, Lenovo 8 x H200 (TP1 x 8, TensorRT-LLM, gpu_batch_size 896), llama2-70b-99 Server:
    # 104 samples/s against Offline 109.722, mean TTFT 251.9 ms, mean TPOT 161.1 ms, 291 output tokens
    # (catalog/measurements.yaml mlperf41-lenovo-h200-sxm-141gbx8-trt-llama2-70b-server-ttft)
    w, cal = mlperf(catalog, "llama-2-70b", 291, 896)
    cal = replace(cal, kv_on_demand=True)
    assert cal.rate_read_share > 0
    led, gpu, rate, own, b_max = pieces(catalog, w, "h200-sxm", 1, cal)

    def at_rate(c):
        return queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 8, 0.0), rate, 104.0, c, capacity_requests_per_s=109.722)
    load, bare = at_rate(cal), at_rate(replace(cal, rate_read_share=0.0))
    # the closed-loop step scaled to the capacity is nearly all c x b: half the log's TPOT, at half its batch
    assert bare.tpot_ms / 161.1 < 0.6 and bare.in_flight < load.in_flight
    assert 0.8 < load.tpot_ms / 161.1 < 1.25 and 0.8 < load.ttft_ms / 251.9 < 1.25
    # the step at that batch is the floor (rate_read_share x the one-sequence step's 70 GB read) + k x the model's step
    floor = cal.rate_read_share * own(1).step_mem
    assert "each step " + f"{floor * 1e3:,.1f} ms" in load.formula
    k, at = scaled_times(own, load.slots, 291, 109.722 / 8, floor)
    assert load.tpot_ms == pytest.approx(at(load.in_flight).tpot * 1e3)


def test_multi_step_scheduling_delays_the_first_token_by_half_the_steps_between_passes(catalog):
    # vLLM's num_scheduler_steps 7 (AMD's MLPerf harness): a new request joins at the next scheduling pass,
    # 3 decode steps later on average
    w = parse(catalog, model="llama-3.1-8b", prompt_tokens=1000, output_tokens=200, concurrency=8)
    cal = replace(speed.calibration(catalog), engine_max_batch=256, prefill_in_step=False)
    led, gpu, rate, at, b_max = pieces(catalog, w, "h100-sxm", 1, cal)
    one = queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 1, 0.0), rate, 0.01, cal)
    seven = queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 1, 0.0), rate, 0.01, replace(cal, scheduler_steps=7))
    assert one.in_flight == seven.in_flight == 1
    step = floored(at, cal)(1).step
    assert (seven.ttft_ms - seven.wait_ms) - (one.ttft_ms - one.wait_ms) == pytest.approx(3 * step * 1e3)


def test_an_engines_prefill_schedule_is_checked_where_it_is_written(tmp_path):
    import shutil
    from advisor.inputs import catalog as catalog_mod
    from advisor.inputs.catalog import CATALOG_DIR
    d = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, d)
    f = d / "engines.yaml"
    text = f.read_text()
    line = text[:text.index("prefill: {v: mixed, src: [TRTLLM_IFB]")].count("\n") + 1
    f.write_text(text.replace("prefill: {v: mixed, src: [TRTLLM_IFB]", "prefill: {v: chunked, src: [TRTLLM_IFB]"))
    with pytest.raises(InputError) as e:
        catalog_mod.load(d)
    assert f"engines.yaml:{line}: engines.trtllm.prefill: prefill must be {{v: mixed | separate" in str(e.value)


def test_a_plan_past_its_capacity_is_priced_at_the_tokens_it_serves(catalog, kb):
    # review 12: Llama 3.1 70B FP8 at 100 requests/s within 16 GPUs: the closest plan (16 x B200, ~67
    # requests/s) was priced at one sequence's speed, $337.58 per million output tokens; at its capacity
    # it serves capacity x 300 output tokens a second
    import conftest
    d = conftest.decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "context_tokens": 8192,
                                      "prompt_tokens": 1500, "output_tokens": 300, "requests_per_s": 100,
                                      "constraints": {"max_gpus": 16, "gpus": ["b200"]}})
    c = d.estimate.candidate("b200")
    assert c.misses and "requests/s < 100 requested" in c.misses and c.ttft_ms is None
    served = c.capacity_requests_per_s * 300
    assert c.tokens_per_s == pytest.approx(served, rel=1e-9)
    assert c.usd_per_million_tokens == pytest.approx(c.usd_per_hour / (served * 3600) * 1e6, rel=1e-6) and c.usd_per_million_tokens < 2


def test_an_engine_that_takes_kv_as_sequences_grow_holds_them_at_their_mean_length(catalog):
    # catalog/engines.yaml kv_allocation: vLLM and SGLang take KV blocks as a sequence grows (preempting or
    # retracting when they run out); TensorRT-LLM's default capacity scheduler reserves the whole output
    cals = {e: speed.calibration(catalog).for_engine(engine_for(catalog, catalog.gpus["h100-sxm"], None, e)[0])
            for e in ("vllm", "sglang", "trtllm")}
    assert cals["vllm"].kv_on_demand and cals["sglang"].kv_on_demand and not cals["trtllm"].kv_on_demand
    # the MLPerf row of NVIDIA's DGX H100 (TP2 x 4, llama2-70b-99 Server, gpu_batch_size 1024) ran NVIDIA's
    # harness with MAX_UTILIZATION: its log's own TTFT, TPOT and completed rate put 839 sequences in flight
    # per replica by Little's law (74.42 / 4 x (0.2759 + 289 x 0.155 s)), more than fit at full length
    w, cal = mlperf(catalog, "llama-2-70b", 290, 1024)
    assert round(74.42 / 4 * (0.2759 + 289 * 0.155)) == 839
    led, gpu, rate, _, full = pieces(catalog, w, "h100-sxm", 2, cal)
    rep = max(1.0, 2 / led.kv.kv_heads)
    mean, _ = speed.max_batch(w, led, gpu, cal, Layout(2, 1, 1), 300, 145, rep)        # 300 + 290 / 2 tokens each
    assert full < 839 < mean
    assert mean / full == pytest.approx(led.kv.bytes_per_sequence(590) / led.kv.bytes_per_sequence(445), rel=0.01)
    lay = Layout(2, 1, 4, 0.0)
    reserved = queueing.serving_at_rate(w, led, gpu, lay, rate, 75.0, cal, capacity_requests_per_s=84.4792)
    grown = queueing.serving_at_rate(w, led, gpu, lay, rate, 75.0, replace(cal, kv_on_demand=True), capacity_requests_per_s=84.4792)
    assert (reserved.slots, grown.slots) == (full, mean)
    assert "(KV taken as each grows: 445 tokens held on average)" in grown.formula and "KV taken" not in reserved.formula
    # more slots at the same measured capacity: a larger batch in flight, a longer step, nearer the logged 155 ms
    assert grown.in_flight > reserved.in_flight and reserved.tpot_ms < grown.tpot_ms < 155


def test_an_engines_kv_allocation_is_checked_where_it_is_written(tmp_path):
    import shutil
    from advisor.inputs import catalog as catalog_mod
    from advisor.inputs.catalog import CATALOG_DIR
    d = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, d)
    f = d / "engines.yaml"
    text = f.read_text()
    at = "kv_allocation: {v: on_demand, src: [VLLM_PREEMPTION]"
    line = text[:text.index(at)].count("\n") + 1
    f.write_text(text.replace(at, "kv_allocation: {v: lazy, src: [VLLM_PREEMPTION]"))
    with pytest.raises(InputError) as e:
        catalog_mod.load(d)
    assert f"engines.yaml:{line}: engines.vllm.kv_allocation: kv_allocation must be {{v: on_demand | reserved" in str(e.value)


def test_a_long_prompts_first_token_comes_no_sooner_than_its_own_prefill(catalog):
    # review 13: Llama 3.1 70B with 30k-token prompts at a request rate read "first token in 136.0 ms" beside its
    # own 3,140 ms prefill (here the 8B on one H100): the fitted few decode steps are a short prompt's, a long one is chunked over more
    w = parse(catalog, model="llama-3.1-8b", prompt_tokens=30000, output_tokens=300, concurrency=4, requests_per_s=0.2,
              layout={"tp": 1, "pp": 1, "dp": 1}, constraints={"gpus": ["h100-sxm"]})
    c = estimator.estimate(w, catalog).candidate("h100-sxm")
    cal = speed.calibration(catalog).for_engine(engine_for(catalog, catalog.gpus["h100-sxm"], w.model, w.engine)[0])
    led = inference_ledger(w)
    gpu = catalog.gpus["h100-sxm"]
    rate = speed.achievable_tflops(catalog, gpu, speed.compute_precision(w, gpu, led.sized))
    load = queueing.serving_at_rate(w, led, gpu, Layout(1, 1, 1, 0.0), rate, 0.2, cal)
    assert not load.saturated and load.prefill_ms > 500 and c.ttft_ms == pytest.approx(cal.request_ms + load.prefill_ms + load.wait_ms)
    assert c.ttft_ms > cal.first_token_steps * c.tpot_ms + cal.request_ms
    assert "the prompt's own prefill" in c.why["ttft_ms"]
