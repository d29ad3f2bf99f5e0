"""The models an RL post-training step holds, per method, and their memory.

PPO (Ouyang et al. 2022; OpenRLHF, verl): the policy and a critic (value model) are trained, a frozen
reference and a frozen reward model score the rollouts; the critic is the policy's size and the reward
model `reward_model:` or the policy's size when none is named. GRPO (DeepSeekMath, arXiv 2402.03300),
RLOO and REINFORCE++ drop the critic (a group or batch baseline instead): the policy and the frozen
reference, and a reward model only when `reward_model:` names one (else a rule or verifier: nothing in
memory). DPO (Rafailov et al. 2023) trains the policy against a frozen reference over preference pairs:
two models, no rollouts.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.inputs.catalog import Model
from advisor.inputs.workload import Workload
from advisor.numbers.ledger import (ACT_BYTES_PER_TOKEN_HIDDEN, ADAM_BYTES, BYTES_PER_PARAM, CKPT_BYTES_PER_TOKEN_HIDDEN,
                                    MASTER_BYTES, training_precision)

GRPO_LIKE = ("grpo", "rloo", "reinforce++")
#: responses per prompt when the workload states none: PPO samples one; GRPO-like methods a group (8:
#: verl's and OpenRLHF's GRPO examples sample 5-16; DeepSeekMath 64)
DEFAULT_SAMPLES = {"ppo": 1, "grpo": 8, "rloo": 8, "reinforce++": 8}
#: prompts per step when the workload states none (EasyR1's and verl's examples: rollout batch 512-1024)
DEFAULT_PROMPTS = 512


@dataclass(frozen=True)
class Role:
    """One model of the step: its part, the model, whether it is trained, and why it is held."""

    part: str          # "policy", "critic", "reference", "reward model"
    model: Model
    trained: bool
    why: str

    @property
    def params(self) -> float:
        return self.model.num("params_b") * 1e9

    @property
    def active(self) -> float:
        return self.model.num("active_params_b") * 1e9


def roles(w: Workload) -> tuple[Role, ...]:
    """The models in memory for the workload's method (module docstring)."""
    method = w.rl_method
    policy = Role("policy", w.model, True, "trained: weights, gradients and optimizer states")
    reference = Role("reference", w.model, False, "frozen copy of the starting policy (the KL term)")
    out = [policy]
    if method == "ppo":
        out.append(Role("critic", w.model, True, "trained value model, the policy's size (PPO's advantage)"))
    out.append(reference)
    if w.reward_model is not None:
        out.append(Role("reward model", w.reward_model, False, f"frozen, as named ({w.reward_model.id})"))
    elif method == "ppo":
        out.append(Role("reward model", w.model, False, "frozen learned reward, the policy's size (none named)"))
    return tuple(out)


def rollouts(w: Workload) -> bool:
    """Whether the method generates its samples (DPO reads preference pairs: none)."""
    return w.rl_method != "dpo"


def samples_per_prompt(w: Workload) -> int:
    """Responses per prompt: stated, or the method's default; DPO's pair counts as two sequences."""
    if not rollouts(w):
        return 2
    return w.samples_per_prompt or DEFAULT_SAMPLES[w.rl_method]


def prompts_per_step(w: Workload) -> int:
    return w.prompts_per_step or DEFAULT_PROMPTS


def sequences_per_step(w: Workload) -> int:
    """The global batch: prompts x samples (DPO: prompts x the chosen and rejected responses)."""
    return prompts_per_step(w) * samples_per_prompt(w)


def sequence_tokens(w: Workload) -> int:
    return w.prompt_tokens + w.output_tokens


def checkpointing(w: Workload) -> bool:
    """Activation checkpointing: on unless the workload turns it off (verl's and OpenRLHF's RL examples
    enable gradient checkpointing: the rollouts' long sequences would not fit otherwise)."""
    return w.activation_checkpointing or "activation_checkpointing" in w.defaults


@dataclass(frozen=True)
class States:
    """The bytes of every model's states, summed over the models (sharded by FSDP over the trainer's
    cards), with each model's line for the memo."""

    weights: float
    gradients: float
    optimizer: float
    lines: tuple[str, ...]

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def states(w: Workload) -> States:
    """Trained models: 16-bit weights and gradients, AdamW's two fp32 moments and an fp32 master copy
    (C06: 16 B per parameter); frozen ones: their 16-bit weights."""
    p = training_precision(w)
    b = BYTES_PER_PARAM[p]
    opt_b = ADAM_BYTES[w.optimizer] + (MASTER_BYTES if w.master_weights and b < 4 else 0.0)
    weights = grads = opt = 0.0
    lines = []
    for r in roles(w):
        weights += r.params * b
        if r.trained:
            grads += r.params * b
            opt += r.params * opt_b
            lines.append(f"{r.part} {r.params / 1e9:,.1f}B x ({b:g} + {b:g} + {opt_b:g}) B, {r.why}")
        else:
            lines.append(f"{r.part} {r.params / 1e9:,.1f}B x {b:g} B, {r.why}")
    return States(weights, grads, opt, tuple(lines))


def activation_bytes(w: Workload, micro_batch: int = 1) -> float:
    """One card's activations for a micro-batch of whole sequences (prompt + response) of the largest
    trained model, with full recomputation (checkpointing) or without (Korthikanti et al. 2022)."""
    m = w.model
    L, h = m.num("layers"), m.num("hidden_size")
    if not (L and h):
        return 0.0
    s = sequence_tokens(w)
    if checkpointing(w):
        return CKPT_BYTES_PER_TOKEN_HIDDEN * s * micro_batch * h * L + ACT_BYTES_PER_TOKEN_HIDDEN * s * micro_batch * h
    return ACT_BYTES_PER_TOKEN_HIDDEN * s * micro_batch * h * L
