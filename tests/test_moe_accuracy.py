"""MoE serving accuracy (issue 20): what Hopper runs for an MXFP4 checkpoint, a KV manager that holds
sliding-window layers at full length, and prefill collectives shared by the prompts of one pass,
worked by hand."""
from dataclasses import replace

import pytest

from advisor.inputs import workload
from advisor.numbers import speed
from advisor.numbers.ledger import inference_ledger
from advisor.inputs.parallel import Layout


def _gpt_oss(catalog, **kw):
    doc = {"mode": "inference", "model": "gpt-oss-120b", "prompt_tokens": 1024, "output_tokens": 8192, "concurrency": 1}
    w = workload.parse({**doc, **kw}, catalog)
    return w, inference_ledger(w)


def test_mxfp4_experts_are_mixed_input_on_hopper_and_ampere_and_w4a8_on_blackwell(catalog):
    w, led = _gpt_oss(catalog)
    g = catalog.gpus
    assert speed.mixed_input("mxfp4", g["h100-sxm"]) and speed.mixed_input("mxfp4", g["a100-80gb-sxm"])
    assert not speed.mixed_input("mxfp4", g["b200"]) and not speed.mixed_input("bf16", g["h100-sxm"])
    assert speed.mixed_input("fp8", g["a100-80gb-sxm"]) and not speed.mixed_input("fp8", g["h100-sxm"])
    # TensorRT-LLM: W4A16 on Hopper (BF16 matmuls), W4A8_MXFP4_MXFP8 on Blackwell (the FP8 rate, not FP4)
    assert speed.compute_precision(w, g["h100-sxm"], led.sized) == "bf16"
    assert speed.compute_precision(w, g["b200"], led.sized) == "fp8"
    assert speed.shape(w, led).expert_precision == "mxfp4"


def test_a_mixed_input_kernel_reads_the_experts_at_its_share_of_the_bandwidth(catalog):
    w, led = _gpt_oss(catalog)
    sh, h100 = speed.shape(w, led), catalog.gpus["h100-sxm"]
    cal = replace(speed.calibration(catalog), layer_us=0.0, seq_us=0.0)
    kv = led.kv.bytes_per_sequence
    t = {s: speed.serving_times(sh, kv, h100, replace(cal, mixed_input_share=s), 989.0, Layout(1, 1, 1), 1, 1024, 8192).step_mem
         for s in (1.0, 0.5)}
    # one sequence touches 4 of the 128 experts in each layer: 1/32 of the 61 GB of MXFP4 experts, read
    # twice as slowly at a share of 0.5
    touched = sh.expert_bytes * speed.experts_touched(128, 4, 1) / 128
    assert touched == pytest.approx(sh.expert_bytes / 32)
    bw = h100.bandwidth_tb_s * 1e12 * cal.bw_share * cal.maturity(h100)
    assert t[0.5] - t[1.0] == pytest.approx(touched / bw)


def test_an_engine_without_window_memory_holds_every_layer_at_full_length(catalog):
    w, led = _gpt_oss(catalog, kv_precision="bf16")
    h200 = catalog.gpus["h200-sxm"]
    cal = speed.calibration(catalog)
    # 8 KV heads x 64 x K and V x 2 B = 2,048 B per layer and token; 18 global + 18 windowed (128) layers
    windowed = speed.max_batch(w, led, h200, cal, Layout(1, 1, 1), 1024, 8192, 1.0)[1]
    full = speed.max_batch(w, led, h200, replace(cal, kv_window_memory=False), Layout(1, 1, 1), 1024, 8192, 1.0)[1]
    assert "344.5 MB KV per 9,216-token sequence" in windowed        # 18 x 2,048 x 9,216 + 18 x 2,048 x 128
    assert "679.5 MB KV per 9,216-token sequence" in full            # 36 x 2,048 x 9,216


def test_short_prompts_share_the_all_reduce_floor_of_one_prefill_pass(catalog):
    w = workload.parse({"mode": "inference", "model": "llama-3.1-70b", "concurrency": 64}, catalog)
    led = inference_ledger(w)
    sh, h100 = speed.shape(w, led), catalog.gpus["h100-sxm"]
    cal = speed.calibration(catalog)
    kv = led.kv.bytes_per_sequence
    i = {a: speed.serving_times(sh, kv, h100, replace(cal, allreduce_us=a), 989.0, Layout(8, 1, 1), 4096, 128, 128).interference
         for a in (0.0, 10.0)}
    # 80 layers x 2 all-reduces x 10 us per prompt, shared by the 8,192 / 128 = 64 prompts of one pass,
    # 4,096 prompts spread over their 128 output steps: 4,096 x 1.6 ms / 64 / 128 = 0.8 ms a step (51.2 ms unshared)
    assert (i[10.0] - i[0.0]) * 1e3 == pytest.approx(0.8)


def test_sliding_window_layers_attend_to_the_window_only(catalog):
    """Issue 46: gpt-oss's 18 windowed layers (128 tokens) were counted as full ones in the attention FLOPs."""
    w, led = _gpt_oss(catalog)
    sh = speed.shape(w, led)
    assert (sh.window, sh.window_layers, sh.layers) == (128, 18, 36)
    # a 32,768-token prompt: 18 full layers x 32,768^2 / 2 pairs + 18 windowed x (128 x 32,768 - 128^2 / 2)
    pairs = speed.attended_pairs(sh, 32768)
    assert pairs == pytest.approx(18 * 32768 ** 2 / 2 + 18 * (128 * 32768 - 128 ** 2 / 2))
    assert pairs / (36 * 32768 ** 2 / 2) == pytest.approx(0.5039, abs=1e-4)     # about half the all-full count
    # below the window every layer sees the whole prefix; a decode query at 9,000 tokens: 18 x 9,000 + 18 x 128
    assert speed.attended_pairs(sh, 100) == pytest.approx(36 * 100 ** 2 / 2)
    assert speed.attended_keys(sh, 9000) == 18 * 9000 + 18 * 128
    dense = speed.shape(*(lambda w: (w, inference_ledger(w)))(workload.parse({"mode": "inference", "model": "llama-3.1-8b"}, catalog)))
    assert speed.attended_keys(dense, 9000) == 32 * 9000


def test_mixed_input_experts_multiply_at_their_share_of_the_bf16_rate_on_hopper_only(catalog):
    """Issue 46: TensorRT-LLM, vLLM and SGLang run MXFP4 experts on Hopper as W4A16 (BF16 activations, the
    weight tiles upcast in the main loop): a decode step's expert matmuls, not the weight reads, run at
    mixed_input_matmul_share; a prefill's wide row tiles spread the upcast and keep the BF16 rate;
    Blackwell's W4A8 MMA is native and keeps its rate."""
    w, led = _gpt_oss(catalog, prompt_tokens=1024, output_tokens=1024)
    sh = speed.shape(w, led)
    cal = replace(speed.calibration(catalog), layer_us=0.0, seq_us=0.0, mixed_input_share=1.0)
    kv = led.kv.bytes_per_sequence

    def step(gpu, share, rate):
        c = replace(cal, mixed_input_matmul_share=share)
        return speed.serving_times(sh, kv, catalog.gpus[gpu], c, rate, Layout(1, 1, 1), 512, 1024, 1024)

    full, half = step("h100-sxm", 1.0, 989.0), step("h100-sxm", 0.5, 989.0)
    assert half.step_mem == pytest.approx(full.step_mem)           # the packed weights stream as before
    assert half.step_cmp > full.step_cmp * 1.2                      # the expert matmuls take twice as long
    assert half.tokens_per_s < full.tokens_per_s
    assert half.prefill == pytest.approx(full.prefill)              # a 1,024-token prompt's experts: BF16 rate
    b_full, b_half = step("b200", 1.0, 4500.0), step("b200", 0.5, 4500.0)
    assert b_half.step == pytest.approx(b_full.step) and b_half.tokens_per_s == pytest.approx(b_full.tokens_per_s)
