"""RL post-training modelled as RL post-training (issue 44 item 4): the models each method holds, the
rollouts in the step's hours, the global batch, the layouts, and the bad input refused at its field."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import kinds
from advisor.inputs import catalog as catalog_mod
from advisor.inputs.workload import parse
from advisor.kinds.rl import models
from advisor.base.errors import InputError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cat():
    return catalog_mod.load(ROOT / "catalog")


def rl(cat, method, **extra):
    doc = {"mode": "fine-tuning", "model": "qwen3-32b", "method": method, "prompts_per_step": 128,
           "prompt_tokens": 512, "output_tokens": 2048, "rl_steps": 500, **extra}
    if method != "dpo":
        doc.setdefault("samples_per_prompt", 8)
    return parse(doc, cat, "rl.yaml")


def parts(w):
    return [(r.part, r.trained) for r in models.roles(w)]


def test_grpo_holds_policy_and_reference_only(cat):
    w = rl(cat, "grpo")
    assert parts(w) == [("policy", True), ("reference", False)]
    est = kinds.estimate(w, cat, ["h100-sxm"])
    # 32.8B x (2 + 2 + 12) B for the policy + 32.8B x 2 B for the reference: no critic, no reward model
    params = w.model.num("params_b") * 1e9
    assert est.ledger.bytes("weights_gb") == pytest.approx(2 * params * 2)
    assert est.ledger.bytes("optimizer_gb") == pytest.approx(params * 12)


def test_grpo_hours_include_the_rollouts_and_batch_is_prompts_x_samples(cat):
    w = rl(cat, "grpo")
    p = kinds.estimate(w, cat, ["h100-sxm"]).candidate("h100-sxm")
    phases = p.speed_explained["rl_step"]["factor"]
    assert phases["rollout_s"] > 0 and 0 < phases["rollout_share"] < 1
    assert p.global_batch == 128 * 8
    step_s = p.speed_explained["rl_step"]["value"]
    assert p.training_hours == pytest.approx(500 * step_s / 3600)
    assert "rollout" in p.why["rl_step"] and p.why["layout"].startswith(("colocated", "separate"))


def test_grpo_with_a_named_reward_model_holds_it(cat):
    w = rl(cat, "grpo", reward_model="qwen3-8b")
    assert parts(w)[-1] == ("reward model", False)


def test_ppo_holds_four_models(cat):
    w = rl(cat, "ppo", samples_per_prompt=1)
    assert parts(w) == [("policy", True), ("critic", True), ("reference", False), ("reward model", False)]


def test_old_task_rlhf_is_ppo(cat):
    w = parse({"mode": "fine-tuning", "model": "llama-3.1-8b", "task": "rlhf"}, cat, "x.yaml")
    assert w.rl_method == "ppo" and len(models.roles(w)) == 4


def test_dpo_holds_two_models_and_no_rollouts(cat):
    w = rl(cat, "dpo")
    assert parts(w) == [("policy", True), ("reference", False)]
    p = kinds.estimate(w, cat, ["h100-sxm"]).candidate("h100-sxm")
    assert p.speed_explained["rl_step"]["factor"]["rollout_s"] == 0
    assert p.global_batch == 128 * 2          # a chosen and a rejected response per prompt
    assert "no rollouts" in p.why["layout"]


def test_grpo_spends_more_than_the_same_tokens_of_dpo(cat):
    """The rollouts are work DPO does not do: GRPO's step over the same sequences costs more."""
    grpo = kinds.estimate(rl(cat, "grpo", samples_per_prompt=2), cat, ["h100-sxm"]).candidate("h100-sxm")
    dpo = kinds.estimate(rl(cat, "dpo"), cat, ["h100-sxm"]).candidate("h100-sxm")
    assert grpo.usd_per_job > dpo.usd_per_job


@pytest.mark.parametrize("method, samples, says", [
    ("grpo", 1, "grpo needs at least 2 samples per prompt"),
    ("rloo", 1, "rloo needs at least 2 samples per prompt"),
    ("grpo", 0, "must be at least 1"),
    ("dpo", 4, "dpo generates no samples"),
])
def test_bad_sample_counts_are_refused_at_the_field(cat, method, samples, says):
    with pytest.raises(InputError) as e:
        parse({"mode": "fine-tuning", "model": "qwen3-8b", "method": method, "samples_per_prompt": samples}, cat, "x.yaml")
    assert e.value.problems[0].field == "samples_per_prompt" and says in e.value.problems[0].message


def test_reinforce_pp_takes_one_sample(cat):
    w = parse({"mode": "fine-tuning", "model": "qwen3-8b", "method": "reinforce++", "samples_per_prompt": 1}, cat, "x.yaml")
    assert models.samples_per_prompt(w) == 1


def test_deadline_shorter_than_one_step_is_refused(cat):
    w = rl(cat, "grpo", output_tokens=8000, constraints={"deadline_hours": 0.02})
    with pytest.raises(InputError) as e:
        kinds.estimate(w, cat)
    assert e.value.problems[0].field == "constraints.deadline_hours"
    assert "shorter than one RL step" in e.value.problems[0].message


def test_example_record_gives_job_hours_and_usd_per_job(tmp_path):
    out = subprocess.run([sys.executable, "-m", "advisor", "recommend", str(ROOT / "examples" / "grpo-qwen3-32b.yaml"),
                          "--json"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)["recommendation"]
    assert rec["unit"] == "job"
    assert rec["job_hours"] > 0 and rec["usd_per_job"] > 0


def test_deadline_cli_exit_2(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("mode: fine-tuning\nmodel: qwen3-32b\nmethod: grpo\nrl_steps: 10\noutput_tokens: 8000\n"
                 "constraints: {deadline_hours: 0.02}\n")
    out = subprocess.run([sys.executable, "-m", "advisor", "recommend", str(f), "--format", "summary"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 2 and "deadline_hours" in out.stderr and "Traceback" not in out.stderr


def test_long_grpo_rollouts_prefer_bandwidth_and_h200_memory_verdict(cat, kb):
    """Rollout-bound RL (8k-token responses x 16 samples) fires the bandwidth rule on high-bandwidth cards,
    and the seeds' H200 verdict for memory-heavy training covers every RL method (C09)."""
    from conftest import decide
    d = decide(cat, kb, {"mode": "fine-tuning", "model": "qwen3-8b", "method": "grpo", "samples_per_prompt": 16,
                         "prompts_per_step": 256, "prompt_tokens": 1024, "output_tokens": 8192, "rl_steps": 200})
    fired = {(f.rule.id, f.gpu) for f in d.firings}
    assert ("rl-rollout-bound-wants-bandwidth", "b200") in fired
    assert ("rl-rollout-bound-wants-bandwidth", "h100-sxm") not in fired
    assert ("h200-memory-heavy-training", "h200-sxm") in fired


def test_a_deadline_buys_more_cards_that_meet_it(cat):
    free = kinds.estimate(rl(cat, "grpo"), cat, ["h100-sxm"]).candidate("h100-sxm")
    rushed = kinds.estimate(rl(cat, "grpo", constraints={"deadline_hours": 12}), cat, ["h100-sxm"]).candidate("h100-sxm")
    assert free.training_hours > 12
    assert rushed.training_hours <= 12 and rushed.misses is None and rushed.count > free.count
