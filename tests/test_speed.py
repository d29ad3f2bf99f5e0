"""The calibrated speed model (advisor/numbers/speed.py, comm.py): its formulas pinned by hand-computed
figures with a calibration fixed in the test (the shipped, fitted factors are measured by
bench/accuracy.py, never asserted here)."""
import math
from dataclasses import replace

import pytest

from advisor.base import errors
from advisor.inputs import workload
from advisor.numbers import comm, speed, trainspeed
from advisor.numbers.layouts import Layout
from advisor.numbers.ledger import BYTES_PER_PARAM, inference_ledger, training_ledger

MODEL = {"params_b": 8, "layers": 32, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 8, "head_dim": 128}


@pytest.fixture
def cal(catalog):
    """A calibration with round factors, so the arithmetic below can be done by hand."""
    return replace(speed.calibration(catalog), bw_share=0.6, compute_share=0.5, layer_us=31.25, seq_us=0.0, allreduce_us=10.0,
                   moe_half_tokens=0.0, moe_half_width=0.0, request_ms=0.0, link_share=1.0, _links={})


def serve(catalog, cal, gpu="h100-sxm", tp=1, **doc):
    w = workload.parse({"mode": "inference", "model": MODEL, "precision": "bf16", "prompt_tokens": 1000,
                        "output_tokens": 1000, "concurrency": 1, **doc}, catalog)
    led = inference_ledger(w)
    g = catalog.gpus[gpu]
    rate = speed.achievable_tflops(catalog, g, speed.compute_precision(w, g, led.sized))
    return speed.inference_speed(w, led, g, Layout(tp, 1, 1, 0.0), rate, cal), rate


def test_tpot_and_ttft_by_hand_for_one_plan(catalog, cal):
    c, rate = serve(catalog, cal)
    assert rate.value == 794.5                                   # H100 bf16 MAMF (catalog/efficiency.yaml)
    bw = 3.35e12 * 0.6
    R = 794.5e12 * 0.5
    weights = 8e9 * 2                                            # 8B x 2 B
    kv = 2 * 8 * 128 * 2 * 32 * 1500                             # K and V x heads x dim x 2 B x layers x (1000 + 1000/2)
    step = (weights + kv) / bw + 32 * 31.25e-6                   # bandwidth-bound + 31.25 us x 32 layers = 1 ms
    prefill_flops = 1000 * 2 * 8e9 + 2 * 32 * 1000 ** 2 * 4096   # 2 x params per token + causal attention
    prefill = prefill_flops / R + 1e-3
    tpot = step + prefill_flops / R / 1000                       # one prompt's prefill spread over 1,000 outputs
    assert c.tpot_ms == pytest.approx(tpot * 1e3, rel=1e-3)
    assert c.tpot_ms == pytest.approx(9.10, abs=0.01)
    assert c.ttft_ms == pytest.approx(prefill * 1e3, rel=1e-3) == pytest.approx(41.94, abs=0.01)
    assert c.decode_ms_per_token == c.tpot_ms and c.prefill_ms == pytest.approx(c.ttft_ms)
    assert c.tokens_per_s == pytest.approx(1e3 / c.tpot_ms) and c.tokens_per_s_per_gpu == c.tokens_per_s


def test_time_to_first_token_adds_the_request_overhead(catalog, cal):
    bare, _ = serve(catalog, cal)
    served, _ = serve(catalog, replace(cal, request_ms=4.0))
    assert served.ttft_ms - bare.ttft_ms == pytest.approx(4.0)      # receiving, tokenising, scheduling
    assert served.tpot_ms == bare.tpot_ms                         # paid once per request, not per token


def test_tensor_parallel_adds_two_all_reduces_per_layer(catalog, cal):
    one, _ = serve(catalog, cal, tp=1)
    two, _ = serve(catalog, cal, tp=2)
    ar = comm.allreduce_s(1 * 4096 * 2, 2, 450e9, 10e-6)          # one token's 16-bit hidden state over NVLink 4
    assert two.speed_explained["tp_allreduce_ms"]["value"] == pytest.approx(2 * 32 * ar * 1e3, rel=1e-6)
    assert 2 * 32 * ar * 1e3 == pytest.approx(0.64, abs=0.01)    # the 10 us latency floor dominates
    assert two.tpot_ms < one.tpot_ms                             # half the bytes per card outweighs the all-reduces


def test_all_reduce_and_all_to_all_bytes():
    assert comm.allreduce_bytes(1e6, 8) == pytest.approx(1.75e6)      # 2 x 7/8 of the message
    assert comm.allreduce_bytes(1e6, 1) == 0
    assert comm.alltoall_bytes(8e6, 8) == pytest.approx(7e6)
    assert comm.allreduce_s(1e6, 8, 1e9, 1e-5) == pytest.approx(1e-5 + 1.75e-3)


def test_moe_experts_touched_by_a_batch():
    assert speed.experts_touched(128, 4, 1) == pytest.approx(4)
    assert speed.experts_touched(128, 4, 64) == pytest.approx(128 * (1 - (124 / 128) ** 64)) == pytest.approx(111.2, abs=0.1)
    assert speed.experts_touched(128, 4, 10_000) == pytest.approx(128)


def test_moe_decode_reads_only_the_touched_experts(estimate_file):
    one = estimate_file("gpt-oss-120b-one-user", concurrency=1).candidate("h200-sxm")
    many = estimate_file("gpt-oss-120b-one-user", concurrency=64).candidate("h200-sxm")
    read1 = one.speed_explained["weights_and_kv_read_ms"]["value"]
    read64 = many.speed_explained["weights_and_kv_read_ms"]["value"]
    assert many.speed_explained["moe"]["value"] == pytest.approx(111.2, abs=0.1)
    assert 1 < read64 / read1 < 128 / 4                          # more experts touched, never all per token


def test_concurrency_max_resolves_to_the_largest_batch_that_fits(estimate_file, catalog):
    # vLLM on an H200: 0.9 of the card for weights + KV (gpu_memory_utilization), at most 1,024 sequences
    # (max_num_seqs on a card of 70 GB or more, catalog/engines.yaml)
    est = estimate_file("llama-70b-fp16-serving", concurrency="max", prompt_tokens=1000, output_tokens=1000, context_tokens=2000,
                        engine="vllm")
    c = est.candidate("h200-sxm")
    per_seq = est.ledger.kv.bytes_per_sequence(2000)
    budget = c.tp * c.pp * 141e9 * 0.9 - est.ledger.bytes("weights_gb") - est.ledger.bytes("activations_gb")
    assert c.engine == "vllm"
    assert c.concurrency == min(1024, int(budget // per_seq)) * c.dp
    assert est.as_dict()["workload"]["concurrency"] == "max"
    assert "concurrency: max" in c.why["concurrency"]


def test_concurrency_max_is_for_inference_only(catalog):
    with pytest.raises(errors.InputError) as exc:
        workload.parse({"mode": "training", "model": "llama-3.1-8b", "concurrency": "max"}, catalog, "w.yaml")
    assert "concurrency" in str(exc.value)


def test_fp4_precisions_and_fp8_kv(catalog):
    assert BYTES_PER_PARAM["nvfp4"] == 4.5 / 8 and BYTES_PER_PARAM["mxfp4"] == 4.25 / 8
    w = workload.parse({"mode": "inference", "model": "llama-3.1-70b", "precision": "nvfp4", "kv_precision": "fp8"}, catalog)
    led = inference_ledger(w)
    assert speed.compute_precision(w, catalog.gpus["b200"], led.sized) == "fp4"      # Blackwell computes FP4
    assert speed.compute_precision(w, catalog.gpus["h100-sxm"], led.sized) == "bf16"  # Hopper upcasts (K10)
    assert led.kv.bytes_per_sequence(1) == 2 * 8 * 128 * 1 * 80                      # 1 byte per fp8 KV element


def test_training_rate_mfu_and_stated_uncertainty(estimate_file, catalog):
    est = estimate_file("llama-13b-full-finetune", training_tokens=1e9)
    c = est.candidate("h100-sxm")
    cal = speed.calibration(catalog)
    assert c.training_tokens_per_s > 0 and 0 < c.mfu < 1
    per_gpu = c.training_tokens_per_s / c.count
    model_flops = 6 * est.ledger.sized.active + trainspeed.attention_train_flops(est.workload, est.workload.context_tokens)
    assert c.mfu == pytest.approx(per_gpu * model_flops / 989e12, rel=1e-6)
    # the whole run: the calibrated step time over the goodput (interruptions, checkpoints, evaluation)
    assert c.step_hours == pytest.approx(1e9 / c.training_tokens_per_s / 3600)
    # a job within one node: interruptions only (the whole-run factors were fitted on runs of 256+ GPUs)
    assert c.count <= 8 and cal.whole_run_scale(c.count) == 0 and 0.999 < c.goodput < 1
    assert c.goodput == pytest.approx(cal.goodput(c.count)[0]) == pytest.approx(
        1 / (1 + cal.interruptions_per_gpu_hour * c.count * cal.hours_lost_per_interruption))
    assert cal.goodput(256)[0] == pytest.approx(cal.goodput_base / (1 + cal.interruptions_per_gpu_hour * 256 * cal.hours_lost_per_interruption))
    assert c.training_hours == pytest.approx(c.step_hours / c.goodput) and c.training_hours > c.step_hours
    lo, hi = c.training_hours_range
    assert lo < c.training_hours < hi and hi / c.training_hours == pytest.approx(
        math.exp(math.hypot(cal.train_spread, cal.goodput_spread)))   # dense: the step and whole-run fits' spreads
    assert c.ideal["training_hours_at_peak"] < c.training_hours       # the seed's ideal figure is kept beside it


def test_pipeline_bubble_and_data_parallel_traffic(catalog, cal):
    w = workload.parse({"mode": "training", "model": "llama-3.1-70b", "precision": "bf16", "context_tokens": 4096}, catalog)
    led = training_ledger(w)
    g = catalog.gpus["h100-sxm"]
    rate = speed.achievable_tflops(catalog, g, "bf16")
    flat = trainspeed.training_rate(w, led, g, cal, rate, Layout(8, 1, 8), microbatches=16)
    piped = trainspeed.training_rate(w, led, g, cal, rate, Layout(8, 4, 2), microbatches=16)
    assert piped.bubble == pytest.approx(3 / 19)                    # (PP - 1) / (m + PP - 1) of the step idles
    assert piped.tokens_per_s_per_gpu == pytest.approx(flat.tokens_per_s_per_gpu * (1 - 3 / 19), rel=1e-6)
    grads = led.sized.params * 2 / 8                                 # 16-bit gradients of one TP shard
    assert flat.comm_s == pytest.approx(comm.allreduce_bytes(grads, 8) / (cal.scale_out_gb_s * 1e9))


def test_the_bubble_follows_the_global_batch_of_the_workload(catalog, cal):
    # 70B on TP 8 x PP 4 x DP 2 with global_batch 64 and micro_batch 2: m = 64 / (2 x 2) = 16
    # micro-batches per replica, so (4 - 1) / (16 + 4 - 1) = 3/19 = 15.8% of each step idles; the same
    # job with a global batch of 16 sequences has 4 micro-batches: 3/7 = 42.9%
    base = {"mode": "training", "model": "llama-3.1-70b", "precision": "bf16", "context_tokens": 4096, "micro_batch": 2}
    g = catalog.gpus["h100-sxm"]
    rate = speed.achievable_tflops(catalog, g, "bf16")
    lay = Layout(8, 4, 2, 0.0)
    for gbs, bubble in ((64, 3 / 19), (16, 3 / 7)):
        w = workload.parse({**base, "global_batch": gbs, "training_tokens": 1e9}, catalog)
        sp = trainspeed.training_time(w, training_ledger(w), g, lay, rate, cal)
        assert sp.global_batch == gbs and sp.micro_batch == 2 and sp.micro_batches == gbs // 4
        assert sp.pipeline_bubble == pytest.approx(bubble)
        assert f"global_batch {gbs}" in sp.speed_explained["pipeline_bubble"]["formula"]
    # without a global batch the planner's choice is stated: 4 micro-batches per stage
    w = workload.parse({**base, "training_tokens": 1e9}, catalog)
    sp = trainspeed.training_time(w, training_ledger(w), g, lay, rate, cal)
    assert sp.micro_batches == 16 and sp.global_batch == 16 * 2 * 2
    assert "planner's choice" in sp.speed_explained["pipeline_bubble"]["formula"]


def test_lora_mfu_counts_4n_for_the_frozen_base_plus_the_adapters(catalog, cal):
    # Llama 3.1 8B LoRA rank 16 on q, k, v, o: adapters = 2 x 16 x 4096 x 4 x 32 = 16.8M parameters;
    # a LoRA token costs 4 x 8.03B (forward + activation gradients, no weight gradients) + 6 x 16.8M
    w = workload.parse({"mode": "fine-tuning", "model": "llama-3.1-8b", "method": "lora", "context_tokens": 2048,
                        "training_tokens": 1e8}, catalog)
    led = training_ledger(w)
    assert led.adapter_params == 2 * 16 * 4096 * 4 * 32
    g = catalog.gpus["h100-sxm"]
    rate = speed.achievable_tflops(catalog, g, "bf16")
    sp = trainspeed.training_time(w, led, g, Layout(1, 1, 1, 0.0), rate, cal)
    flops = 4 * led.sized.active + 6 * 16_777_216 + trainspeed.attention_train_flops(w, 2048)
    assert sp.mfu == pytest.approx(sp.training_tokens_per_s * flops / 989e12, rel=1e-9)
    assert sp.mfu < sp.training_tokens_per_s * (6 * led.sized.active + trainspeed.attention_train_flops(w, 2048)) / 989e12


def test_nvfp4_training_reports_mfu_below_1_against_the_fp4_peak(catalog, cal):
    w = workload.parse({"mode": "training", "model": "llama-3.1-8b", "precision": "nvfp4", "context_tokens": 8192,
                        "training_tokens": 1e11}, catalog)
    led = training_ledger(w)
    g = catalog.gpus["b200"]
    assert speed.compute_precision(w, g, led.sized) == "fp4"
    rate = speed.achievable_tflops(catalog, g, "fp4")
    sp = trainspeed.training_time(w, led, g, Layout(1, 1, 8, 0.0), rate, cal)
    assert 0 < sp.mfu < 1
    f8 = workload.parse({"mode": "training", "model": "llama-3.1-8b", "precision": "fp8", "context_tokens": 8192,
                         "training_tokens": 1e11}, catalog)
    sp8 = trainspeed.training_time(f8, training_ledger(f8), g, Layout(1, 1, 8, 0.0), speed.achievable_tflops(catalog, g, "fp8"), cal)
    # no FP4 training measurement: FP4 matmuls are credited the FP8 rate, not twice it
    assert sp.training_tokens_per_s <= sp8.training_tokens_per_s * 1.05
    assert "credited the FP8 rate" in sp.speed_explained["matmul_share"]["formula"]


def test_an_engine_without_grouped_kv_reads_reads_the_cache_once_per_query_head(catalog, cal):
    # TensorRT-LLM before 0.8 (no XQA kernel): each of the 32 query heads reads its KV head, so a
    # GQA model with 8 KV heads reads its cache 4 times per step (how bench/accuracy.py evaluates
    # the 0.5/0.6 records); current engines read it once per group
    grouped, _ = serve(catalog, cal, concurrency=64)
    per_head, _ = serve(catalog, replace(cal, grouped_kv_reads=False), concurrency=64)
    kv = 64 * 2 * 8 * 128 * 2 * 32 * 1500                          # 64 sequences' cache at 1,500 tokens
    extra = 3 * kv / (3.35e12 * 0.6) * 1e3                           # three more reads at 60% of 3.35 TB/s
    read = "weights_and_kv_read_ms"
    assert per_head.speed_explained[read]["value"] - grouped.speed_explained[read]["value"] == pytest.approx(extra, rel=1e-6)
    assert extra == pytest.approx(18.78, abs=0.01)


def test_narrow_experts_run_their_matmuls_at_a_lower_efficiency(catalog, cal):
    w = workload.parse({"mode": "inference", "model": "qwen3-30b-a3b", "precision": "bf16"}, catalog)
    sh = speed.shape(w, inference_ledger(w))
    assert sh.expert_width == pytest.approx(768, abs=1)              # Qwen3-30B-A3B: moe_intermediate_size 768
    g = catalog.gpus["h100-sxm"]
    times = [speed.serving_times(sh, None, g, replace(cal, moe_half_width=half), 794.5, Layout(1, 1, 1), 1, 2048, 1).prefill
             for half in (0.0, 768.0)]
    # the experts' FLOPs cost twice as much at half efficiency (width 768 = moe_half_width)
    R = 794.5e12 * 0.5
    assert times[1] - times[0] == pytest.approx(2048 * sh.expert_flops / R, rel=1e-3)


def test_expert_gemm_reads_and_matmuls_add_after_the_rest_of_the_step(catalog, cal):
    # Qwen3-30B-A3B bf16 on one H100, 1,024 sequences of one token each (no KV cache counted): the 1,024
    # tokens x top-8 touch all 128 experts, so the expert GEMMs read all 57.98 GB of expert weights and
    # then multiply (AIC_MOE_TABLES: a grouped GEMM overlaps the two little); the rest of the layer
    # (attention, the dense weights) is bound by the larger of its reads and its matmuls
    w = workload.parse({"mode": "inference", "model": "qwen3-30b-a3b", "precision": "bf16"}, catalog)
    sh = speed.shape(w, inference_ledger(w))
    assert (sh.dense_bytes, sh.expert_bytes) == (pytest.approx(3.082e9, rel=1e-3), pytest.approx(57.98e9, rel=1e-3))
    g = catalog.gpus["h100-sxm"]
    sv = speed.serving_times(sh, None, g, cal, 794.5, Layout(1, 1, 1), 1024, 1000, 1000)
    bw, R = 3.35e12 * 0.6, 794.5e12 * 0.5
    expert_read = sh.expert_bytes / bw                                       # 28.85 ms
    expert_matmul = 1024 * sh.expert_flops / R                               # 9.34 ms
    rest = max(sh.dense_bytes / bw, 1024 * (sh.dense_flops + 4 * 48 * 1500 * 4096) / R)   # compute-bound: 10.99 ms
    assert sv.step == pytest.approx(rest + expert_read + expert_matmul + 48 * 31.25e-6, rel=1e-4)
    assert sv.step * 1e3 == pytest.approx(50.67, abs=0.01)
    # the max of the summed reads and summed matmuls (the form before) would have been 31.88 ms
    assert max(sv.step_mem, sv.step_cmp) * 1e3 + 1.5 == pytest.approx(31.88, abs=0.01)


def test_zero3_runs_reach_the_fitted_share_of_zero1_runs(catalog, cal):
    def rate(zero):
        w = workload.parse({"mode": "training", "model": "llama-3.1-8b", "precision": "bf16", "context_tokens": 4096,
                            "zero_stage": zero}, catalog)
        g = catalog.gpus["h100-sxm"]
        return trainspeed.training_rate(w, training_ledger(w), g, replace(cal, train_zero3_share=0.9), speed.achievable_tflops(catalog, g, "bf16"),
                                   Layout(1, 1, 8), microbatches=8)
    z1, z3 = rate(1), rate(3)
    assert z3.share == pytest.approx(z1.share * 0.9)
    assert z3.comm_s < z3.compute_s                                  # compute-bound: the rate follows the share
    assert z3.tokens_per_s_per_gpu == pytest.approx(z1.tokens_per_s_per_gpu * 0.9, rel=1e-6)


def test_calibration_is_read_once_per_catalog(catalog):
    assert speed.calibration(catalog) is speed.calibration(catalog)


def test_estimate_json_carries_the_speed_fields(estimate_file):
    d = estimate_file("chat-assistant").as_dict()
    h200 = next(c for c in d["candidates"] if c["gpu"] == "h200-sxm")
    for k in ("concurrency", "ttft_ms", "tpot_ms", "tokens_per_s", "tokens_per_s_per_gpu", "speed_explained",
              "prefill_ms", "decode_ms_per_token"):
        assert h200[k] is not None, k
    assert h200["concurrency"] == 64
    assert h200["speed_explained"]["weights_and_kv_read_ms"]["factor"]["hbm_share"] > 0
    assert h200["ideal"]["decode_ms_per_token"] < h200["tpot_ms"]     # ideal (K06) beside expected
    train = estimate_file("llama-13b-full-finetune").as_dict()["candidates"][0]
    assert train["mfu"] and train["training_tokens_per_s"] and len(train["training_hours_range"] or [0, 0]) == 2


def test_every_measurement_is_complete_and_evaluates(catalog):
    """catalog/measurements.yaml: each record names its source, engine, version, hardware, precision,
    lengths, concurrency and split, and the speed model gives it a finite figure (accuracy itself is
    measured by bench/accuracy.py, not asserted here)."""
    import sys
    from advisor.base import yamlio
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "bench"))
    import accuracy
    data = yamlio.load(accuracy.MEASUREMENTS)
    sources = data["sources"]
    records = [dict(r) for r in data["records"]]
    assert len(records) >= 139 and len({r["id"] for r in records}) == len(records)
    for r in records:
        assert r["source"] in sources and r["engine"] and "version" in r, r["id"]
        assert r["gpu"] in catalog.gpus and r["split"] in ("fit", "check") and r["measured"] > 0, r["id"]
        assert r["model"] in catalog.models or r["model"] in data["models"], r["id"]
        if r["class"] in ("training", "whole_run"):
            assert r["seq"] and r["count"] and r["precision"], r["id"]
            assert r["class"] == "training" or r["tokens"] > 0, r["id"]
        else:
            assert r["prompt"] and r["output"] and r["concurrency"], r["id"]
    assert {r["split"] for r in records} == {"fit", "check"}
    prepared = accuracy.prepare(records, dict(data["models"]), catalog)
    cal = speed.calibration(catalog)
    figures = [accuracy.evaluate(p, cal) for p in prepared]
    assert all(math.isfinite(f) and f > 0 for f in figures)


def test_moe_training_states_the_wider_moe_spread(estimate_file, catalog):
    c = estimate_file("gpt-oss-120b-training").candidate("h100-sxm")
    cal = speed.calibration(catalog)
    assert cal.train_moe_spread > cal.train_spread
    assert c.training_hours_range[1] / c.training_hours == pytest.approx(math.exp(math.hypot(cal.train_moe_spread, cal.goodput_spread)))


def test_expert_parallel_trades_the_moe_all_reduce_for_dispatch_and_combine(catalog, cal):
    # Mixtral 8x7B on 2 x H100, 8 sequences: with EP 2 each of the 32 layers keeps attention's
    # all-reduce over TP 2 and replaces the MoE all-reduce by a dispatch and a combine all-to-all
    w = workload.parse({"mode": "inference", "model": "mixtral-8x7b", "precision": "bf16", "prompt_tokens": 1000,
                        "output_tokens": 1000, "concurrency": 8}, catalog)
    led = inference_ledger(w)
    g = catalog.gpus["h100-sxm"]
    rate = speed.achievable_tflops(catalog, g, "bf16")
    plain = speed.inference_speed(w, led, g, Layout(2, 1, 1, 0.0), rate, cal)
    spread = speed.inference_speed(w, led, g, Layout(2, 1, 1, 0.0, ep=2), rate, cal)
    h = 4096
    assert w.model.num("hidden_size") == h
    # each card dispatches its 4 of the 8 tokens x top-2 x 4096 x 2 B = 65,536 B, half of it off the card
    assert comm.moe_alltoall_bytes(4, 2, h, 2) == 32_768
    moe_all_reduce = comm.allreduce_s(8 * h * 2, 2, 450e9, 10e-6)       # 10 us + 65,536 B / 450 GB/s
    dispatch_combine = 2 * (10e-6 + 32_768 / 450e9)
    extra = spread.speed_explained["tp_allreduce_ms"]["value"] - plain.speed_explained["tp_allreduce_ms"]["value"]
    assert extra == pytest.approx(32 * (dispatch_combine - moe_all_reduce) * 1e3, rel=1e-6)


def test_deepseek_dep8_all_to_all_bytes_by_hand():
    # DeepSeek-V3 DEP8 (tp 8, ep 8, attention_dp 8) at 256 sequences: each card holds 32 of them and
    # sends each token's 7,168-wide bf16 vector to 8 experts, 7 in 8 of which live on other cards:
    # 32 x 8 x 7,168 x 2 B x 7/8 = 3,211,264 B per dispatch per layer
    assert comm.moe_alltoall_bytes(256 / 8, 8, 7168, 8) == 3_211_264
    assert comm.moe_alltoall_bytes(32, 8, 7168, 1) == 0.0


def test_expert_imbalance_is_the_balls_into_bins_floor():
    # 32 tokens x top-8 over 8 ranks: mean 32 per rank, binomial variance 256 x 1/8 x 7/8 = 28,
    # expected maximum ~ mean + sqrt(2 ln 8 x 28): 1 + sqrt(2 ln 8 x 7 / 256)
    assert speed.expert_imbalance(32, 8, 8) == pytest.approx(1 + math.sqrt(2 * math.log(8) * 7 / 256))
    assert speed.expert_imbalance(32, 8, 8) == pytest.approx(1.3372, abs=1e-4)
    assert speed.expert_imbalance(32, 8, 1) == 1.0


def test_a_bad_efficiency_factor_is_a_one_line_error(catalog):
    import dataclasses
    eff = {**catalog.efficiency, "serving": {**catalog.efficiency["serving"], "compute_share": {"v": "fast"}}}
    bad = dataclasses.replace(catalog, efficiency=eff)
    with pytest.raises(errors.InputError) as exc:
        speed.calibration(bad)
    assert str(exc.value) == "catalog/efficiency.yaml: serving.compute_share: must be a non-negative number (got 'fast')"


def test_a_kv_share_of_the_free_memory_gives_the_cache_what_the_weights_leave(catalog, cal):
    # TensorRT-LLM's free_gpu_memory_fraction is a share of the memory left after the weights; vLLM's
    # gpu_memory_utilization a share of the card: 70B FP8 on one 80 GB H100 leaves little either way
    w = workload.parse({"mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "kv_precision": "fp8",
                        "prompt_tokens": 1000, "output_tokens": 1000, "concurrency": "max"}, catalog)
    led = inference_ledger(w)
    g = catalog.gpus["h100-sxm"]
    fixed = led.bytes("weights_gb") + led.bytes("activations_gb")
    per_seq = led.kv.bytes_per_sequence(2000)
    vllm, _ = speed.max_batch(w, led, g, replace(cal, memory_utilisation=0.95), Layout(1, 1, 1), 1000, 1000, 1.0)
    trt, _ = speed.max_batch(w, led, g, replace(cal, memory_utilisation=0.95, kv_share_of_free=True), Layout(1, 1, 1), 1000, 1000, 1.0)
    assert vllm == int((80e9 * 0.95 - fixed) // per_seq)
    assert trt == int((80e9 - fixed) * 0.95 // per_seq)
    assert trt > vllm


def test_an_unmeasured_gpu_family_never_trains_better_than_a_measured_one(catalog):
    cal = speed.calibration(catalog)
    for p in ("bf16", "fp8"):
        measured = [fam[p] for gen, fam in cal.train_share.items() if p in fam and gen != "tpu"]
        share, how = cal.train_share_for(catalog.gpus["l40s"], p)           # Ada: no training record
        assert share == pytest.approx(min(measured)) and "no ada" in how


def test_decode_gemms_and_attention_each_at_their_own_roofline(catalog, cal):
    # Llama 3.1 8B FP8 (FP8 KV cache) on one H200, 883 sequences at 128 + 2,048 tokens (the KV room of
    # trtllm-bench's row), each at its average context of 1,152 tokens: the dense GEMMs are compute-bound
    # and the decode attention is bound by its KV read; they are separate kernels, so their times add
    # (AIC_OP_SUM), where the form before took the larger of all reads and all matmuls
    w = workload.parse({"mode": "inference", "model": "llama-3.1-8b", "precision": "fp8", "kv_precision": "fp8",
                        "prompt_tokens": 128, "output_tokens": 2048}, catalog)
    led = inference_ledger(w)
    sh = speed.shape(w, led)
    g = catalog.gpus["h200-sxm"]
    sv = speed.serving_times(sh, led.kv.bytes_per_sequence, g, cal, 1453.4, Layout(1, 1, 1), 883, 128, 2048)
    bw, R = 4.8e12 * 0.6, 1453.4e12 * 0.5
    kv_per_seq = 2 * 32 * 8 * 128 * 1 * 1152                                  # 75.5 MB at 1,152 tokens
    assert led.kv.bytes_per_sequence(1152) == pytest.approx(kv_per_seq)
    gemm_read, gemm_matmul = sh.dense_bytes / bw, 883 * sh.dense_flops / R     # 2.79 ms, 19.51 ms
    kv_read, attn_flops = 883 * kv_per_seq / bw, 883 * 4 * 32 * 1152 * 4096 / R   # 23.15 ms, 0.73 ms
    assert gemm_matmul > gemm_read and kv_read > attn_flops
    assert sv.step == pytest.approx(gemm_matmul + kv_read + 32 * 31.25e-6, rel=1e-6)
    assert sv.step * 1e3 == pytest.approx(43.66, abs=0.01)
    # the larger of the summed reads and summed matmuls (the form before) was 26.94 ms: the KV read hid
    # behind the GEMMs' matmuls, and H200's larger batch gained as if it did not cost its reads
    assert max(sv.step_mem, sv.step_cmp) * 1e3 + 1.0 == pytest.approx(26.94, abs=0.01)
    assert speed.decode_rest_s(gemm_read, gemm_matmul, kv_read, attn_flops) == pytest.approx(gemm_matmul + kv_read)
