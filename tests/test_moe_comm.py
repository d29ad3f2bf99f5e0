"""MoE expert-parallel traffic (issue 20): DeepEP dispatches FP8 (with a float32 scale per 128 values)
and combines BF16, and only the layers with routed experts send it (DeepSeek-V3: 58 of 61), worked
by hand."""
import pytest

from advisor.inputs import workload
from advisor.numbers import comm, speed
from advisor.numbers.ledger import inference_ledger
from advisor.inputs.parallel import Layout


def test_dispatch_is_fp8_with_its_scales_and_combine_is_bf16():
    assert comm.dispatch_bytes("fp8") == 1 + 4 / 128 == 1.03125
    assert comm.dispatch_bytes("fp4") == 1.03125
    assert comm.dispatch_bytes("bf16") == 2          # no FP8 expert matmul to feed: BF16 goes out


def test_one_moe_layer_of_deepseek_v3_at_32_tokens_per_gpu_by_hand():
    # 32 tokens x top-8 x 7,168 hidden = 1,835,008 values per GPU; 7/8 of them leave the card on EP 8
    out = 32 * 8 * 7168 * 7 / 8
    dispatch, combine = out * 1.03125, out * 2          # 1,655,808 B and 3,211,264 B
    assert (dispatch, combine) == (1_655_808, 3_211_264)
    t = comm.moe_layer_alltoall_s(32, 8, 7168, 8, 400e9, 5e-6)
    assert t == pytest.approx(2 * 5e-6 + (1_655_808 + 3_211_264) / 400e9)   # 22.17 us
    assert t * 1e6 == pytest.approx(22.168, abs=1e-3)
    # in BF16 both ways it would be 4 x 1,605,632 B: 26.06 us
    assert comm.moe_layer_alltoall_s(32, 8, 7168, 8, 400e9, 5e-6, 2) * 1e6 == pytest.approx(10 + 4 * 1_605_632 / 400e3, abs=1e-3)
    assert comm.moe_layer_alltoall_s(32, 8, 7168, 1, 400e9, 5e-6) == 0.0


def test_deepseek_v3_sends_the_all_to_all_in_its_58_moe_layers_only(catalog):
    w = workload.parse({"mode": "inference", "model": "deepseek-v3", "concurrency": 256}, catalog)
    sh = speed.shape(w, inference_ledger(w))
    assert (sh.layers, sh.moe_layers) == (61, 58)       # first_k_dense_replace: 3 (config.json)
    assert catalog.models["deepseek-v3"].fig("moe_layers").sources == ("CFG_DEEPSEEK_V3",)
    assert sh.expert_width == pytest.approx(2048, abs=0.01)      # moe_intermediate_size: 58 layers, not 61
    link, a = 400e9, 5e-6
    # DEP 8, 32 tokens per card: attention on one card (no all-reduce), 58 x (dispatch + combine); the 3
    # dense-MLP layers run on each rank's own tokens like attention: no collective either
    got = speed._layer_comm(sh, 32, 256, 32, Layout(8, 1, 1, ep=8, attention_dp=8), True, link, a, 1.03125)
    assert got == pytest.approx(58 * comm.moe_layer_alltoall_s(32, 8, 7168, 8, link, a))
    assert got * 1e3 == pytest.approx(58 * 22.168e-3, abs=1e-4)          # 1.286 ms
    # TEP 8 (attention over the 8 cards, experts over EP 8), 256 tokens on every card: 61 attention and
    # 3 dense-MLP all-reduces of 256 x 7,168 x 2 B (2 x 7/8 x 3,670,016 = 6,422,528 ring bytes, 16.06 us
    # + 5 us each) and 58 all-to-alls of each card's 32-token share
    tep = speed._layer_comm(sh, 256, 256, 32, Layout(8, 1, 1, ep=8), True, link, a, 1.03125)
    assert tep == pytest.approx(64 * (a + 6_422_528 / link) + 58 * comm.moe_layer_alltoall_s(32, 8, 7168, 8, link, a))
    assert tep * 1e3 == pytest.approx(64 * 21.056e-3 + 58 * 22.168e-3, abs=1e-3)   # 1.348 + 1.286 ms


def test_a_bf16_moe_model_dispatches_bf16(catalog):
    w = workload.parse({"mode": "inference", "model": "qwen3-235b-a22b", "precision": "bf16", "concurrency": 64,
                        "layout": {"tp": 8, "ep": 8, "attention_dp": 8}, "constraints": {"gpus": ["h200"]}}, catalog)
    led = inference_ledger(w)
    assert speed.compute_precision(w, catalog.gpus["h200-sxm"], led.sized) == "bf16"
    sh = speed.shape(w, led)
    assert sh.moe_layers == 94          # every Qwen3-235B layer has experts (no moe_layers figure: all)


def test_under_attention_dp_each_rank_pays_its_own_sequences_bookkeeping(catalog):
    from dataclasses import replace
    w = workload.parse({"mode": "inference", "model": "deepseek-v3", "concurrency": 256}, catalog)
    led = inference_ledger(w)
    sh, g = speed.shape(w, led), catalog.gpus["h200-sxm"]
    cal = speed.calibration(catalog)
    kv = led.kv.bytes_per_sequence
    step = {s: speed.serving_times(sh, kv, g, replace(cal, seq_us=s), 1000.0, Layout(8, 1, 1, ep=8, attention_dp=8), 256, 1000, 1000,
                                   dispatch_bytes=1.03125).step for s in (0.0, 100.0)}
    # 100 us x 256 sequences / 8 ranks working at once = 3.2 ms a step (not 25.6 ms)
    assert (step[100.0] - step[0.0]) * 1e3 == pytest.approx(3.2)


def test_a_decode_pool_is_timed_by_its_decode_step_alone(catalog):
    from advisor.numbers.layouts import Layout
    w = workload.parse({"mode": "inference", "model": "deepseek-v3", "prompt_tokens": 2000, "output_tokens": 100,
                        "concurrency": 2048}, catalog)
    led = inference_ledger(w)
    g, cal = catalog.gpus["h200-sxm"], speed.calibration(catalog)
    rate = speed.achievable_tflops(catalog, g, "fp8")
    lay = Layout(8, 1, 1, 0.0, ep=8, attention_dp=8)
    sv, b, total, _, _ = speed._serve(w, led, g, lay, rate, cal)
    pool = speed.decode_tokens_per_s(w, led, g, lay, rate, cal)
    # 2,048 sequences / the step; a colocated replica also runs every prompt's 2,000-token prefill
    assert pool == pytest.approx(2048 / sv.step)
    assert pool > speed.inference_speed(w, led, g, lay, rate, cal).tokens_per_s * 2
