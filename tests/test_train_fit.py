"""Training figures a user would check (issue 21, items 4, 5, 7): whole-run hours beside step hours,
QLoRA layouts limited to what its libraries do, and the batch the pipeline bubble comes from."""
import math

import pytest

from advisor.base import errors
from advisor.inputs import workload
from advisor.numbers import speed
from conftest import decide


QLORA_70B = {"mode": "fine-tuning", "model": "llama-3.1-70b", "method": "qlora", "context_tokens": 4096,
             "micro_batch": 1, "training_tokens": 1e8}


def test_70b_qlora_never_gets_tensor_or_pipeline_parallelism(catalog, kb):
    d = decide(catalog, kb, QLORA_70B)
    plans = [c for c in d.estimate.candidates if c.count]
    assert plans and all(c.tp == 1 and c.pp == 1 for c in plans)
    c = d.estimate.candidate("h100-sxm")
    # one 80 GB card holds the 4-bit base (70.6B x 0.5 B) with its adapters and activations: the
    # replicas beyond it fill the 8-GPU instance; else the extra cards shard it (FSDP-QLoRA, ZeRO-3)
    assert c.min_count == 1 or c.zero_stage == 3
    assert "never tensor or pipeline parallelism" in c.why["layout"] and "QLORA_FSDP" in c.why["layout"]


def test_a_qlora_layout_with_tensor_parallelism_is_refused_in_one_line(catalog):
    with pytest.raises(errors.InputError) as e:
        workload.parse({**QLORA_70B, "layout": {"tp": 4, "pp": 1, "dp": 1}}, catalog, "w.yaml")
    text = str(e.value)
    assert "w.yaml" in text and "layout" in text and "FSDP-QLoRA" in text and "\n" not in text.strip()


def test_training_hours_are_the_whole_run_and_state_the_goodput(catalog, kb):
    d = decide(catalog, kb, {"mode": "training", "model": "llama-3.1-8b", "precision": "bf16", "context_tokens": 8192,
                             "training_tokens": 1e12})
    c = d.estimate.candidate(d.winner)
    cal = speed.calibration(catalog)
    # one optimizer step of a replica: its micro-batches' tokens at the plan's step rate
    step_s = c.micro_batches * c.micro_batch * 8192 / (c.training_tokens_per_s / c.count * c.tp * c.pp)
    assert c.speed_explained["goodput"]["factor"]["step_s"] == pytest.approx(step_s)
    g, how = cal.goodput(c.count, step_s=step_s)
    assert g < cal.goodput(c.count)[0]                  # the step pays the fitted per-step overhead
    assert c.training_hours > c.step_hours and c.training_hours == pytest.approx(c.step_hours / g)
    assert c.goodput == pytest.approx(g) and f"goodput {g:.2f}" in c.why["training_hours"]
    assert "GPU-hours between interruptions" in c.speed_explained["goodput"]["formula"]
    # the Llama 3 paper's 16,384 H100s: the interruption term is the paper's 10% (> 90% effective time)
    assert cal.goodput(16384)[0] == pytest.approx(cal.goodput_base / 1.10, rel=0.01)
    rec = d.record
    cand = next(x for x in rec["estimate"]["candidates"] if x["gpu"] == d.winner)
    assert cand["step_hours"] < cand["training_hours"] and cand["global_batch"] and cand["micro_batches"]


def test_a_stated_global_batch_sets_the_micro_batches_and_the_bubble(catalog, kb):
    # 70B on 64 H100 at TP 8 x PP 4 x DP 2, global batch 256 of micro-batch 1: m = 256 / (1 x 2) = 128
    # micro-batches per replica, bubble (4 - 1) / (128 + 4 - 1) = 2.29%
    d = decide(catalog, kb, {"mode": "training", "model": "llama-3.1-70b", "precision": "bf16", "context_tokens": 4096,
                             "micro_batch": 1, "global_batch": 256, "training_tokens": 1e10,
                             "layout": {"tp": 8, "pp": 4, "dp": 2}})
    c = d.estimate.candidate("h100-sxm")
    assert c.micro_batches == 128 and c.global_batch == 256
    assert c.pipeline_bubble == pytest.approx(3 / 131)
    assert "global_batch 256 / (micro_batch 1 x DP 2) = 128" in c.speed_explained["pipeline_bubble"]["formula"]


def test_global_batch_below_one_micro_batch_is_refused(catalog):
    with pytest.raises(errors.InputError) as e:
        workload.parse({"mode": "training", "model": "llama-3.1-8b", "micro_batch": 4, "global_batch": 2}, catalog, "g.yaml")
    assert "global_batch" in str(e.value)


def test_the_goodput_was_fitted_on_whole_runs_and_is_below_1(catalog):
    cal = speed.calibration(catalog)
    assert 0.5 < cal.goodput_base <= 1 and cal.goodput_spread > 0
    # the per-step overhead fitted beside it (bench/fit.py, docs/accuracy.md): a fraction of a second
    assert 0 < cal.step_overhead_s < 1


def test_the_per_step_overhead_weighs_on_short_steps_of_multi_node_runs(catalog):
    cal = speed.calibration(catalog)
    t0 = cal.step_overhead_s
    # SmolLM2 1.7B's steps on 256 H100 (0.22 s) lose a sixth of their time; a 20 s step of a large model <1%
    short, _ = cal.goodput(256, step_s=0.25)        # above the fitted floor (0.223 s)
    long, how = cal.goodput(256, step_s=20.0)
    assert short == pytest.approx(cal.goodput(256)[0] * 0.25 / (0.25 + t0))
    assert long == pytest.approx(cal.goodput(256)[0] * 20 / (20 + t0)) and short < long < cal.goodput(256)[0]
    assert f"{t0:.2f} s fitted per-step overhead" in how
    # a step shorter than the fit's shortest (SmolLM2's) is charged as that one: not extrapolated
    floor = cal.step_overhead_min_step_s
    assert 0.2 < floor < 0.3 and cal.goodput(8, step_s=0.005)[0] == pytest.approx(cal.goodput(8, step_s=floor)[0])
    # a one-node job is charged its interruptions only, pre-training or fine-tuning alike (review 10, F7):
    # the whole-run factors were fitted on runs of 256+ GPUs and grow with the log of the nodes
    assert cal.whole_run_scale(8) == 0 and cal.whole_run_scale(256) == cal.whole_run_scale(16384) == 1
    assert cal.goodput(8, step_s=0.16)[0] == pytest.approx(cal.goodput(8)[0]) == pytest.approx(1 / (1 + 8 * cal.interruptions_per_gpu_hour * cal.hours_lost_per_interruption))
    assert cal.goodput_full_scale_gpus == 256
    s80 = math.log(10) / math.log(32)                 # 80 GPUs: 10 nodes of the 32 of the smallest fitted run
    assert cal.whole_run_scale(80) == pytest.approx(s80)
    assert cal.goodput(80)[0] == pytest.approx((1 - (1 - cal.goodput_base) * s80) / (1 + 80 * cal.interruptions_per_gpu_hour * cal.hours_lost_per_interruption))
    assert cal.interruptions_per_gpu_hour == pytest.approx(466 / (54 * 24 * 16384), rel=0.01)
    assert math.isclose(cal.hours_lost_per_interruption, 0.1 * 54 * 24 / 466, rel_tol=0.01)


def test_the_training_share_falls_with_the_model_width_as_fitted(catalog, kb):
    # per token and layer the matmul FLOPs grow with hidden^2, the norms, activations and element-wise work
    # with hidden: the share is x hidden / (hidden + half_hidden), fitted (1,113; 1,461 before the 2026-12-07
    # records) with the shares on the
    # dense records, whose residuals had fallen with width (1.37x fast at 2,048, 0.88x slow at 16,384)
    cal = speed.calibration(catalog)
    assert cal.train_half_hidden == 1113 and cal.train_width_min == 2048
    assert cal.width_share(8192) == pytest.approx(8192 / (8192 + 1113))            # Llama 3.1 70B: 0.880
    assert cal.width_share(4096) == pytest.approx(0.786, abs=0.001)                # Llama 3.1 8B
    # a model narrower than the fit's narrowest (a ViT-S's 384) is charged as 2,048: not extrapolated
    assert cal.width_share(384) == cal.width_share(2048) == pytest.approx(2048 / 3161)
    assert cal.width_share(None) == 1.0
    # the share the step model uses and says: Hopper BF16's fitted 0.828 x 0.880 for the 70B
    d = decide(catalog, kb, {"mode": "fine-tuning", "model": "llama-3.1-70b", "method": "full", "precision": "bf16",
                             "context_tokens": 4096, "training_tokens": 1e9, "constraints": {"gpus": ["h100-sxm"]}})
    c = d.estimate.candidate("h100-sxm")
    m = c.speed_explained["matmul_share"]
    assert m["value"] == pytest.approx(cal.train_share["hopper"]["bf16"] * 8192 / 9305, rel=1e-6)
    assert "x 0.880 = hidden 8,192 / (8,192 + 1,113 fitted half width)" in m["formula"]
    vit = decide(catalog, kb, {"mode": "training", "task": "image-classification", "precision": "bf16", "context_tokens": 197,
                               "model": {"params_b": 0.022, "layers": 12, "hidden_size": 384}, "micro_batch": 256,
                               "training_tokens": 1e9, "constraints": {"gpus": ["h100-sxm"]}})
    f = vit.estimate.candidate("h100-sxm").speed_explained["matmul_share"]["formula"]
    assert "(a 384-wide model charged as the fit's narrowest, 2,048)" in f
