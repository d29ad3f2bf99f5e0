"""Pipeline-parallel serving (issue 20, dense): TensorRT-LLM's PyTorch executor runs pp micro-batches
without its overlap scheduler, samples on the last stage only, and sends each micro-batch's new tokens
back through the other stages' host loops before its next step (efficiency.yaml TRTLLM_PP_LOOP).
The terms of numbers.speed, pinned by hand, and the published RTX PRO 6000 rows they were fitted on."""
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.inputs import workload
from advisor.numbers import speed
from advisor.numbers.ledger import inference_ledger
from advisor.inputs.parallel import Layout

ROOT = Path(__file__).resolve().parents[1]


def _llama70b(catalog, prompt=128, output=2048):
    w = workload.parse({"mode": "inference", "model": "llama-3.1-70b", "precision": "nvfp4", "kv_precision": "fp8",
                        "prompt_tokens": prompt, "output_tokens": output, "concurrency": 1}, catalog)
    return w, inference_ledger(w)


def test_the_token_return_costs_each_other_stage_its_micro_batch_by_hand(catalog):
    cal = replace(speed.calibration(catalog), pp_return_us=50.0)
    # 4 stages, 800 sequences: micro-batches of 200; their tokens pass 3 host loops at 50 us a sequence:
    # 3 x 50 us x 200 = 30 ms a decode cycle
    assert speed.pp_return_s(cal, 4, 200) == pytest.approx(0.030)
    assert speed.pp_return_s(cal, 2, 200) == pytest.approx(0.010)        # one hop
    assert speed.pp_return_s(cal, 1, 800) == 0.0                         # no pipeline, no return trip


def test_a_pipeline_step_pays_the_return_and_the_last_stage_samples_every_micro_batch(catalog):
    w, led = _llama70b(catalog)
    sh, g = speed.shape(w, led), catalog.gpus["rtx-pro-6000"]
    kv = led.kv.bytes_per_sequence
    base = replace(speed.calibration(catalog), pp_return_us=0.0, seq_us=0.0)

    def step(**kw):
        return speed.serving_times(sh, kv, g, replace(base, **kw), 1000.0, Layout(1, 4, 1), 800, 128, 2048).step

    # the return trip of the test above, added to the decode cycle as it stands
    assert step(pp_return_us=50.0) - step() == pytest.approx(0.030)
    # 4 us of sampling and bookkeeping a sequence: the last stage samples all 800 of a cycle (3.2 ms), not a
    # quarter of them (the 0.8 ms it was charged when the cost was spread over the stages)
    assert step(seq_us=4.0) - step() == pytest.approx(0.0032)
    # without a pipeline nothing changes: one stage, 800 sequences, the same 3.2 ms
    one = speed.serving_times(sh, kv, g, replace(base, seq_us=4.0), 1000.0, Layout(1, 1, 1), 800, 128, 2048).step
    assert one - speed.serving_times(sh, kv, g, base, 1000.0, Layout(1, 1, 1), 800, 128, 2048).step == pytest.approx(0.0032)


def test_the_shipped_factor_and_its_explanation(catalog):
    cal = speed.calibration(catalog)
    assert 20.0 <= cal.pp_return_us <= 150.0       # bench/fit.py's figure (efficiency.yaml), microseconds a sequence
    w, led = _llama70b(catalog)
    w = replace(w, concurrency=400)
    g = catalog.gpus["rtx-pro-6000"]
    from advisor.numbers.layouts import Layout
    rate = speed.achievable_tflops(catalog, g, speed.compute_precision(w, g, led.sized))
    s = speed.inference_speed(w, led, g, Layout(1, 4, 1, 0.0), rate, cal)
    ret = s.speed_explained["pipeline_return_ms"]
    assert ret["value"] == pytest.approx(3 * cal.pp_return_us * 100 / 1e3)     # 3 hops x 100 sequences a micro-batch
    assert "TRTLLM_PP_LOOP" in ret["source"]
    assert "pipeline_return_ms" not in speed.inference_speed(w, led, g, Layout(4, 1, 1, 0.0), rate, cal).speed_explained


@pytest.fixture(scope="module")
def rtx_rows(catalog):
    sys.path.insert(0, str(ROOT / "bench"))
    import accuracy
    recs, models = accuracy.load_records()
    rows = [r for r in recs if r["id"].startswith("trtllm10-llama-3.1-70b-rtx-pro-6000-")]
    return accuracy, {p.rec["id"]: p for p in accuracy.prepare(rows, models, catalog)}


def test_trtllm_bench_caps_each_micro_batch(catalog, rtx_rows):
    accuracy, rows = rtx_rows
    # trtllm-bench's max_batch_size is per micro-batch (TensorRT-LLM holds pp x max_batch_size sequences,
    # model_engine get_max_num_sequences): the PP 8 row's 512 allows 4,096, and its KV room binds first
    r = rows["trtllm10-llama-3.1-70b-rtx-pro-6000-tp1pp8-128-2048"].rec
    assert (r["max_batch"], r["max_batch_per"]) == (512, "micro_batch")
    assert rows["trtllm10-llama-3.1-70b-rtx-pro-6000-tp1pp1-128-2048"].rec.get("max_batch_per") is None


def test_the_published_pipeline_rows_within_a_quarter(catalog, rtx_rows):
    accuracy, rows = rtx_rows
    cal = speed.calibration(catalog)
    # the RTX PRO 6000 Llama 3.3 70B table of TensorRT-LLM 1.0 (TRTLLM_PERF_V10), PP 1 to 8: before the
    # return trip the PP 4 rows were 1.4-1.85x the measured throughput
    for rid, measured in (("tp1pp4-128-2048", 7922), ("tp1pp4-500-2000", 6939), ("tp1pp8-1000-2000", 6943),
                          ("tp1pp2-128-2048", 4993), ("tp1pp1-128-2048", 2422)):
        p = rows[f"trtllm10-llama-3.1-70b-rtx-pro-6000-{rid}"]
        assert p.rec["measured"] == measured
        assert 0.8 < accuracy.evaluate(p, cal) / measured < 1.25, rid


def test_tensorrt_llm_caps_each_micro_batch_in_a_plan(catalog):
    from advisor.numbers import calibration as calmod
    g = catalog.gpus["h200-sxm"]
    w = workload.parse({"mode": "inference", "model": "llama-3.1-8b", "precision": "fp8", "prompt_tokens": 128,
                        "output_tokens": 128, "concurrency": "max"}, catalog)
    led = inference_ledger(w)
    trt, _ = calmod.engine_for(catalog, g, w.model, "trtllm")
    vllm, _ = calmod.engine_for(catalog, g, w.model, "vllm")
    cal = speed.calibration(catalog)
    assert trt.batch_per_micro_batch and not vllm.batch_per_micro_batch
    # 8B FP8 at 256 tokens a sequence leaves room for far more than the caps on 2 x 141 GB: TensorRT-LLM holds
    # 2 micro-batches of its 2,048 (4,096), vLLM its 1,024 per replica on a card of 70 GB or more
    b, how = speed.max_batch(w, led, g, cal.for_engine(trt), Layout(1, 2, 1), 128, 128, 1.0)
    assert b == 4096 and "2048 per micro-batch x PP 2" in how
    assert speed.max_batch(w, led, g, cal.for_engine(vllm), Layout(1, 2, 1), 128, 128, 1.0)[0] == 1024
    assert speed.max_batch(w, led, g, cal.for_engine(trt), Layout(1, 1, 1), 128, 128, 1.0)[0] == 2048
