"""One RL step, timed: the rollouts with the serving model, the frozen models' forward passes and the
trained models' update with the training model's rate, the weight sync between trainer and rollout
engine, and (time-shared cards that cannot hold both) the trainer's states offloaded during rollouts.

The step is synchronous (on-policy), as verl's and OpenRLHF's default loops run it: generate, score,
train, sync, in turn. Two factors are fitted on published RL step times (catalog/rl-measurements.yaml,
split: fit; bench/rlaccuracy.py and bench/accuracy.py print the check split): the trainer's share of the
LLM training share (FSDP micro-batches of a few sequences, log-prob recomputation, padding), on the
published update phases; and the seconds a time-shared (colocated) step that offloads the trainer's
states spends switching its cards between the trainer and the engine beyond the bytes moved (waking the
engine and rebuilding its KV cache, reloading the shards, the framework's bookkeeping between phases),
on such steps (EasyR1's, offloaded by default); a colocated step that keeps its shards resident is not
charged it (no record measures one). The rollouts are the
serving model's own time: OpenRLHF's published generation phases came within 5% of it
(bench/rlaccuracy.py), so no rollout factor is applied.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.inputs.catalog import GPU, Catalog
from advisor.inputs.kinds import LLM_SERVING
from advisor.inputs.parallel import Layout
from advisor.inputs.workload import Workload
import advisor.kinds.rl.models as models
from advisor.numbers import speed, trainspeed
from advisor.numbers.calibration import Calibration, kept_engine_for
from advisor.numbers.cardmemory import kv_replication
from advisor.numbers.ledger import Ledger, inference_ledger
from advisor.numbers.speed import CHECKPOINTING_COMPUTE
from advisor.numbers.terms import GB, TFLOP

#: fitted on catalog/rl-measurements.yaml's fit split (`python bench/rlaccuracy.py --fit` prints them again)
RL_TRAIN_SHARE = 0.635
OFFLOADED_SWITCH_S = 109.6
#: memory a rollout engine may take of a card (vLLM's gpu_memory_utilization, 0.9 by default)
ENGINE_MEMORY_SHARE = 0.90
#: tokens per card per micro-batch of the update (verl's dynamic batch, ppo_max_token_len_per_gpu 16,384 in
#: its GRPO examples; a sequence longer than it is a micro-batch of its own): sets how often FSDP gathers
RL_MICRO_TOKENS = 16384
#: host <-> card bytes/s when time-shared cards offload the trainer's states during rollouts (PCIe 4/5
#: x16 in practice; an assumption, stated)
OFFLOAD_BYTES_S = 25e9
ROLLOUT_ENGINE = "vllm"        # verl's and OpenRLHF's default rollout engine (SGLang is the other)


@dataclass(frozen=True)
class Rollout:
    """The rollout engine's layout: TP per replica, replicas, and whether it shares the trainer's cards."""

    tp: int
    replicas: int
    colocated: bool

    @property
    def cards(self) -> int:
        return self.tp * self.replicas


@dataclass(frozen=True)
class Step:
    """One step's phases in seconds, and the rollout batch they were timed at."""

    rollout_s: float
    forward_s: float
    train_s: float
    sync_s: float
    offload_s: float
    batch: int = 0            # sequences per rollout replica at once
    waves: int = 0            # batches each replica runs in turn
    engine: str = ""
    switch_s: float = 0.0     # colocated with offload: switching the cards between trainer and engine (fitted)
    comm_s: float = 0.0       # FSDP's gathers and reduce-scatters beyond the compute they overlap

    @property
    def total_s(self) -> float:
        return self.rollout_s + self.forward_s + self.train_s + self.sync_s + self.offload_s + self.switch_s + self.comm_s

    @property
    def rollout_share(self) -> float:
        return self.rollout_s / self.total_s if self.total_s else 0.0


def rollout_workload(w: Workload) -> Workload:
    """The rollouts as a serving workload: the policy served, prompt and response lengths, and the group's
    shared prompt read once (vLLM's prefix caching over n samples of one prompt)."""
    n = models.samples_per_prompt(w)
    return replace(w, mode="inference", kind=LLM_SERVING, method="full", precision=w.precision,
                   prefix_cache_hit=1 - 1 / n, speculative=None, requests_per_s=None, concurrency=1,
                   concurrency_max=False, layout=None, pools=None)


def rollout_ledger(w: Workload) -> tuple[Workload, Ledger]:
    wr = rollout_workload(w)
    return wr, inference_ledger(wr)


def engine_calibration(catalog: Catalog, gpu: GPU, w: Workload) -> tuple[Calibration, str]:
    """The serving calibration of the rollout engine on this GPU: vLLM where it runs, else the catalog's
    default engine there."""
    engine, cannot = kept_engine_for(catalog, gpu, w.model, ROLLOUT_ENGINE)
    if cannot:
        engine, _ = kept_engine_for(catalog, gpu, w.model, None)
    cal = speed.calibration(catalog).for_engine(engine)
    return cal, engine.name if engine is not None else "the catalog's serving engine"


def kv_room_bytes(led: Ledger, gpu: GPU, tp: int, resident_per_card: float, share: float = ENGINE_MEMORY_SHARE) -> float:
    """KV cache room of one rollout replica of `tp` cards: the engine's share of each card, less what the
    trainer keeps resident there, less the policy's weights and activations."""
    return (tp * (gpu.memory_gb * GB * share - resident_per_card)
            - led.bytes("weights_gb") - led.bytes("activations_gb"))


def rollout_seconds(w: Workload, wr: Workload, led: Ledger, gpu: GPU, cal: Calibration, rate, ro: Rollout,
                    resident_per_card: float, share: float = ENGINE_MEMORY_SHARE,
                    batch_cap: int | None = None) -> tuple[float, int, int] | None:
    """(seconds, sequences per replica at once, waves) of one step's rollouts, or None when a replica has
    no room for one sequence's KV cache: each replica takes its share of prompts x samples, as many at
    once as its KV room and the engine's batch cap hold, in waves; a wave lasts its prefill and its
    responses' tokens at the batch's time per token (numbers.speed)."""
    lay = Layout(ro.tp, 1, 1)
    per_seq = led.kv.bytes_per_sequence(models.sequence_tokens(w)) * kv_replication(led, lay) if led.kv else 0.0
    room = kv_room_bytes(led, gpu, ro.tp, resident_per_card, share)
    if room <= 0 or (per_seq and room < per_seq):
        return None
    fit = int(room // per_seq) if per_seq else cal.engine_max_batch
    per_replica = math.ceil(models.sequences_per_step(w) / ro.replicas)
    cap = max(1, min(fit, cal.engine_max_batch, batch_cap or cal.engine_max_batch))
    waves = math.ceil(per_replica / cap)
    batch = math.ceil(per_replica / waves)
    at, _ = speed.replica_times(wr, led, gpu, cal, rate, lay, kv_replication(led, lay))
    sv = at(batch)
    return waves * (sv.ttft + w.output_tokens * sv.tpot), batch, waves


def train_rate(w: Workload, led: Ledger, gpu: GPU, catalog: Catalog, cal: Calibration) -> float:
    """FLOP/s one trainer card reaches: the achievable matmul rate x the LLM training share (its
    width term too) x the fitted RL share."""
    cp = speed.compute_precision(w, gpu, led.sized)
    p = "bf16" if cp not in ("fp8",) else cp
    rate = speed.achievable_tflops(catalog, gpu, p).value * TFLOP
    share, _ = cal.train_share_for(gpu, p)
    return rate * share * cal.width_share(w.model.num("hidden_size")) * RL_TRAIN_SHARE


def flops_per_token(w: Workload) -> tuple[float, float]:
    """(trained, forward-only) FLOPs per token of the step: 6 x active parameters (+ causal attention)
    for each trained model (x1.3 with recomputation, C06); 2 x for each frozen model's forward, the
    policy's log-probabilities of the rollouts (recomputed before the update, as verl and OpenRLHF do)
    and PPO's critic values."""
    seq = models.sequence_tokens(w)
    trained = forward = 0.0
    ckpt = CHECKPOINTING_COMPUTE if models.checkpointing(w) else 1.0
    for r in models.roles(w):
        attention = trainspeed.attention_train_flops(replace(w, model=r.model), seq)
        if r.trained:
            trained += (6 * r.active + attention) * ckpt
            if models.rollouts(w):
                forward += 2 * r.active + attention / 3       # old log-probs (policy), values (critic)
        else:
            forward += 2 * r.active + attention / 3
    return trained, forward


def step_time(w: Workload, gpu: GPU, catalog: Catalog, trainer_cards: int, ro: Rollout | None,
              resident_per_card: float, offload: bool, train_led: Ledger, rollout: tuple | None,
              share: float = ENGINE_MEMORY_SHARE, batch_cap: int | None = None, group: int | None = None) -> Step | None:
    """One step on `trainer_cards` (FSDP over them) with the rollout engine `ro` (None: DPO, no rollouts);
    `resident_per_card`: the trainer's bytes on each rollout card while it generates (0 on separate cards
    or when `offload`); `rollout`: (rollout workload, its ledger, engine calibration, engine name); `share`:
    the engine's share of each card's memory; `batch_cap`: sequences a replica is sent at once, where the
    framework caps them (OpenRLHF's micro_rollout_batch_size); `group`: the cards each model is sharded over
    (default: all the trainer's, as verl shards them; OpenRLHF gives each model a group of its own)."""
    cal = speed.calibration(catalog)
    tokens = models.sequences_per_step(w) * models.sequence_tokens(w)
    trained, forward = flops_per_token(w)
    R = train_rate(w, train_led, gpu, catalog, cal)
    train_s = tokens * trained / (trainer_cards * R)
    forward_s = tokens * forward / (trainer_cards * R)
    comm_s = fsdp_exposed_s(w, gpu, cal, trainer_cards, group or trainer_cards, forward_s + train_s)
    if ro is None:
        return Step(0.0, forward_s, train_s, 0.0, 0.0, comm_s=comm_s)
    wr, led, rcal, engine = rollout
    rate = speed.achievable_tflops(catalog, gpu, speed.compute_precision(wr, gpu, led.sized))
    got = rollout_seconds(w, wr, led, gpu, rcal, rate, ro, 0.0 if offload else resident_per_card, share, batch_cap)
    if got is None:
        return None
    rollout_s, batch, waves = got
    policy_bytes = led.bytes("weights_gb")
    link, _ = cal.link_bytes_s(gpu)
    if ro.colocated:
        # FSDP shards gathered into the engine's TP shards on the same cards (verl's resharding)
        sync_s = policy_bytes / ro.tp / link
    else:
        # the updated policy broadcast to the engines on other cards (NCCL over the network between nodes)
        sync_s = policy_bytes / min(link, cal.scale_out_gb_s * 1e9)
    offload_s = 2 * resident_per_card / OFFLOAD_BYTES_S if offload else 0.0
    # the fitted switch was measured on colocated steps that offload the trainer's states (EasyR1's default);
    # a colocated step that keeps them resident is charged its resharding (sync_s) only
    switch_s = OFFLOADED_SWITCH_S if ro.colocated and offload else 0.0
    return Step(rollout_s, forward_s, train_s, sync_s, offload_s, batch, waves, engine, switch_s, comm_s)


def fsdp_exposed_s(w: Workload, gpu: GPU, cal: Calibration, trainer_cards: int, group: int, compute_s: float) -> float:
    """Seconds of FSDP (ZeRO-3) traffic the update's compute does not hide: each micro-batch gathers every
    sharded model's 16-bit weights (forward, and again in the backward of the trained ones) and
    reduce-scatters the trained ones' gradients, (group - 1) / group of them over the group's link
    (NVLink inside a node, the network between nodes); overlapped with the compute, as FSDP prefetches."""
    if group <= 1:
        return 0.0
    seq = models.sequence_tokens(w)
    per_card = models.sequences_per_step(w) * seq / trainer_cards
    micro = max(1, math.ceil(per_card / max(seq, RL_MICRO_TOKENS)))
    passes = 0.0
    for r in models.roles(w):
        # trained: forward gather, backward gather, gradient reduce-scatter (+ the rollouts' log-prob or
        # value forward); frozen: one forward gather
        passes += 2 * r.params * ((3 + (1 if models.rollouts(w) else 0)) if r.trained else 1)
    link, _ = cal.link_bytes_s(gpu)
    if group > gpu.gpus_per_node:
        link = min(link, cal.scale_out_gb_s * 1e9)
    comm = micro * passes * (group - 1) / group / link
    return max(0.0, comm - compute_s)
