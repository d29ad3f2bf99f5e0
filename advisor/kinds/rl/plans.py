"""The layouts RL frameworks deploy, each timed and priced, the best kept as one GPU's Plan.

verl (HybridFlow, arXiv 2409.19256) time-shares one set of cards: the trainer's FSDP shards and the
rollout engine (vLLM or SGLang, TP 1-8 per replica) on the same GPUs, the weights resharded after each
update; when the trainer's states leave no room for the engine's KV cache, they are offloaded to host
memory during the rollouts (verl's param/optimizer offload). OpenRLHF (arXiv 2405.11143) puts the
engines on cards of their own and broadcasts the weights to them. Both are tried here on whole
instances of each GPU and the cheaper per job is kept, with which and why in the plan's `why`.
The trainer is FSDP (ZeRO-3) over its cards, verl's and OpenRLHF's default.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.inputs.catalog import GPU, Catalog
from advisor.inputs.parallel import Layout
from advisor.inputs.workload import Workload
import advisor.kinds.rl.models as models
import advisor.kinds.rl.step as steps
from advisor.numbers import cost, layouts, objective
from advisor.numbers.cardmemory import Memory
from advisor.numbers.ledger import TRAINING_SAFETY, Ledger
from advisor.numbers.plan import Plan
from advisor.numbers.replicas import MAX_CARD_FACTOR
from advisor.numbers.speed import Speed
from advisor.numbers.terms import GB

ENGINE_TP = (1, 2, 4, 8)
NODE_MULTIPLES = (1, 2, 4, 8, 16, 32, 64)
MAX_GPUS = 512


@dataclass(frozen=True)
class Tried:
    """One layout timed: its cards, the trainer's, the rollout engine, the step, memory per card."""

    count: int
    trainer: int
    rollout: steps.Rollout | None
    offload: bool
    step: steps.Step
    per_card_bytes: float


def counts(gpu: GPU, w: Workload) -> list[int]:
    """Card counts worth trying: 1, 2 and 4 cards inside a node, then whole nodes (K13); whole racks of a
    rack-scale system."""
    top = w.constraints.max_gpus or MAX_GPUS
    rack = layouts.rack_unit(gpu)
    if rack:      # a rack rented and bought whole (NVL72): its racks are the unit
        return [rack * k for k in NODE_MULTIPLES if rack * k <= top]
    gpn = gpu.gpus_per_node
    small = [n for n in (1, 2, 4) if n < gpn]
    return [n for n in small + [gpn * k for k in NODE_MULTIPLES] if n <= top]


def _trainer_fits(w: Workload, st: models.States, gpu: GPU, cards: int) -> float | None:
    """Bytes per card of the training phase (states sharded over `cards`, one micro-batch's activations,
    x1.2, C06), or None when that exceeds the card."""
    need = (st.total / cards + models.activation_bytes(w, w.micro_batch)) * TRAINING_SAFETY
    return need if need <= gpu.memory_gb * GB else None


def tried_layouts(w: Workload, gpu: GPU, catalog: Catalog, train_led: Ledger) -> list[Tried]:
    """Every colocated and separate layout of each card count that holds the step."""
    st = models.states(w)
    out: list[Tried] = []
    rollout = None
    if models.rollouts(w):
        wr, led = steps.rollout_ledger(w)
        cal, name = steps.engine_calibration(catalog, gpu, w)
        rollout = (wr, led, cal, name)
    widest = layouts.tensor_split_max(gpu)
    for n in counts(gpu, w):
        need = _trainer_fits(w, st, gpu, n)
        if rollout is None:
            if need is not None:
                s = steps.step_time(w, gpu, catalog, n, None, 0.0, False, train_led, None)
                out.append(Tried(n, n, None, False, s, need))
            continue
        for tp in (t for t in ENGINE_TP if t <= min(n, widest) and n % t == 0):
            if need is not None:
                out += _colocated(w, gpu, catalog, n, tp, st, need, train_led, rollout)
            for trainer in sorted({n // 2, n // 4, 3 * n // 4} - {0}):
                rest = n - trainer
                t_need = _trainer_fits(w, st, gpu, trainer)
                if t_need is None or rest % tp or rest < tp:
                    continue
                ro = steps.Rollout(tp, rest // tp, False)
                s = steps.step_time(w, gpu, catalog, trainer, ro, 0.0, False, train_led, rollout)
                if s is not None:
                    out.append(Tried(n, trainer, ro, False, s, max(t_need, gpu.memory_gb * GB * steps.ENGINE_MEMORY_SHARE)))
    return out


def _colocated(w, gpu, catalog, n, tp, st, need, train_led, rollout) -> list[Tried]:
    """The time-shared layout of n cards with engine TP `tp`: the trainer's shards kept resident beside
    the engine, else offloaded to host memory during the rollouts."""
    resident = st.total / n
    ro = steps.Rollout(tp, n // tp, True)
    engine_bytes = gpu.memory_gb * GB * steps.ENGINE_MEMORY_SHARE
    for offload in (False, True):
        s = steps.step_time(w, gpu, catalog, n, ro, resident, offload, train_led, rollout)
        if s is not None:
            return [Tried(n, n, ro, offload, s, max(need, engine_bytes))]
    return []


def layout_words(t: Tried, gpu: GPU) -> str:
    ro = t.rollout
    if ro is None:
        return f"FSDP (ZeRO-3) over {t.count} cards, no rollouts (DPO reads preference pairs)"
    engine = f"{t.step.engine}, TP {ro.tp} x {ro.replicas} replica{'s' if ro.replicas > 1 else ''}"
    if ro.colocated:
        how = ("the trainer's states offloaded to host memory during the rollouts (they leave the engine no KV room)"
               if t.offload else "the trainer's shards kept resident beside the engine")
        return (f"colocated (verl's hybrid engine): FSDP (ZeRO-3) trainer and the rollout engine ({engine}) time-share "
                f"all {t.count} cards, the weights resharded after each update; {how}")
    return (f"separate (OpenRLHF's layout): FSDP (ZeRO-3) trainer on {t.trainer} cards, the rollout engine ({engine}) "
            f"on the other {ro.cards}, the updated weights broadcast to it each step")


def steps_in_run(w: Workload, tokens_per_step: float) -> int | None:
    """Steps of the run: rl_steps, or training_tokens over the step's tokens; None without either."""
    if w.rl_steps:
        return w.rl_steps
    if w.training_tokens:
        return max(1, math.ceil(w.training_tokens / tokens_per_step))
    return None


def speed_of(w: Workload, t: Tried, gpu: GPU) -> Speed:
    """The plan's speed: the step's phases, its hours over the run (steps x step time: no stall or
    restart counted), the rollout share of the step, and the MFU of the whole step (the trained and
    forward FLOPs, without recomputation, over every card's bf16 peak for the step's wall-clock)."""
    s = t.step
    seqs = models.sequences_per_step(w)
    tokens = seqs * models.sequence_tokens(w)
    n = steps_in_run(w, tokens)
    step_h = s.total_s / 3600
    hours = n * step_h if n else None
    phases = {"rollout_s": s.rollout_s, "reference_reward_critic_forward_s": s.forward_s, "train_s": s.train_s,
              "weight_sync_s": s.sync_s, "offload_s": s.offload_s, "switch_s": s.switch_s, "fsdp_exposed_s": s.comm_s, "step_s": s.total_s, "rollout_share": s.rollout_share,
              "sequences_per_step": seqs, "rollout_batch_per_replica": s.batch, "rollout_waves": s.waves}
    explained = {"rl_step": {"value": s.total_s, "factor": {k: v for k, v in phases.items() if k != "step_s"},
                             "source": "advisor/kinds/rl (RL training share and offloaded-colocated switch fitted on catalog/rl-measurements.yaml)",
                             "formula": "rollout + frozen forwards + update + weight sync (+ offload), in turn (on-policy)"}}
    why = {"rl_step": _step_words(w, t, seqs, tokens),
           "global_batch": (f"prompts x samples: {models.prompts_per_step(w):,} x {models.samples_per_prompt(w)}"
                            + (" (a chosen and a rejected response per prompt)" if t.rollout is None else ""))}
    trained, forward = steps.flops_per_token(w)
    ckpt = steps.CHECKPOINTING_COMPUTE if models.checkpointing(w) else 1.0
    mfu = tokens * (trained / ckpt + forward) / s.total_s / (t.count * (gpu.tflops("bf16") or 1) * 1e12)
    if hours is not None:
        why["training_hours"] = (f"{n:,} steps x {s.total_s:,.0f} s per step = {hours:,.1f} h"
                                 + ("" if w.rl_steps else f" ({w.training_tokens:.3g} tokens / {tokens:,.0f} tokens per step)")
                                 + "; stalls, restarts and evaluation not counted")
    return Speed(training_tokens_per_s=tokens / s.total_s, training_hours=hours, step_hours=hours,
                 hours_per_million_tokens=step_h * 1e6 / tokens, global_batch=seqs, micro_batch=w.micro_batch,
                 micro_batches=math.ceil(seqs / (w.micro_batch * t.trainer)), mfu=mfu,
                 speed_explained=explained, why=why)


def _step_words(w: Workload, t: Tried, seqs: int, tokens: float) -> str:
    s = t.step
    if t.rollout is None:
        return (f"{s.total_s:,.1f} s per step: {seqs:,} sequences ({models.prompts_per_step(w):,} preference pairs) of "
                f"{models.sequence_tokens(w):,} tokens, the reference's forward {s.forward_s:,.1f} s + the policy's update "
                f"{s.train_s:,.1f} s" + (f" + FSDP's weight gathers not hidden {s.comm_s:,.1f} s" if s.comm_s else "") + "; no rollouts")
    return (f"{s.total_s:,.0f} s per step, rollout {s.rollout_share:.0%} of it: generating {seqs:,} responses "
            f"({models.prompts_per_step(w):,} prompts x {models.samples_per_prompt(w)} sample{'s' if models.samples_per_prompt(w) > 1 else ''}) of {w.output_tokens:,} tokens "
            f"after {w.prompt_tokens:,}-token prompts takes {s.rollout_s:,.0f} s ({s.waves} wave{'s' if s.waves > 1 else ''} "
            f"of {s.batch:,} sequences per replica, at the serving model's time per token); "
            f"reference/reward/critic and log-prob forwards {s.forward_s:,.0f} s; the update {s.train_s:,.0f} s "
            f"(6 x active parameters x {tokens:,.0f} tokens per trained model); weight sync {s.sync_s:,.1f} s"
            + (f"; offloading the trainer's states {s.offload_s:,.0f} s" if s.offload_s else "")
            + (f"; switching the cards between trainer and engine {s.switch_s:,.0f} s (fitted on offloading colocated steps)" if s.switch_s else "")
            + (f"; FSDP's weight gathers not hidden by the update {s.comm_s:,.0f} s" if s.comm_s else ""))


def plan_of(w: Workload, gpu: GPU, catalog: Catalog, t: Tried) -> Plan:
    """The Plan of one tried layout: its layout, memory, speed and cost."""
    sp = speed_of(w, t, gpu)
    nodes = math.ceil(t.count / gpu.gpus_per_node)
    price = cost.plan_cost(gpu, catalog, t.count, nodes, min(t.count, gpu.gpus_per_node), w)
    price = cost.per_unit(price, sp, w)
    lay = Layout(1, 1, t.count, per_card_bytes=t.per_card_bytes, zero_stage=3)
    mem = Memory(t.per_card_bytes / GB, gpu.memory_gb - t.per_card_bytes / GB)
    why = {k: v for k, v in price.why.items()}
    why.update(sp.why)
    why["layout"] = layout_words(t, gpu)
    why["per_card_gb"] = (f"{t.per_card_bytes / GB:,.1f} GB per card: the fuller of the update (every model's states / "
                          f"{t.trainer} FSDP ranks + activations, x1.2) and the rollout engine's share")
    return Plan(gpu, True, lay, mem, sp, price, activation_checkpointing=models.checkpointing(w),
                misses=objective.misses(w, sp), min_count=None, layouts_considered=None, why=why)


def choose(w: Workload, plans: list[Plan]) -> Plan:
    """The plan the workload's objective keeps: those meeting the deadline first; by cost per job (of
    the plans within objective.TIME_TOLERANCE of the cheapest, the fastest), time or cards."""
    unit = objective.unit_of_work(w)

    def money(p):
        v = objective.unit_cost(p, unit)
        return v if v is not None else p.count * (p.training_hours or p.hours_per_million_tokens or 0)

    meeting = [p for p in plans if not p.misses] or sorted(plans, key=lambda p: p.training_hours or math.inf)[:1]
    if not (w.constraints.deadline_hours or objective.minimises_time(w)):
        # per-job figures assume perfect scaling, which experts do not trust across many nodes (T03,
        # C18): without a deadline, no more than MAX_CARD_FACTOR x the fewest cards (whole nodes), as
        # the LLM planner bounds its plans
        fewest = min(p.count for p in meeting)
        bound = MAX_CARD_FACTOR * max(fewest, meeting[0].gpu.gpus_per_node if fewest > meeting[0].gpu.gpus_per_node else 1)
        meeting = [p for p in meeting if p.count <= bound] or meeting
    if objective.minimises_time(w):
        return min(meeting, key=lambda p: (p.training_hours or p.hours_per_million_tokens, p.count))
    if w.objective == "cards":
        return min(meeting, key=lambda p: (p.count, p.training_hours or p.hours_per_million_tokens))
    # a plan with a price beats one without (the fallback, GPU-hours, is not dollars)
    meeting = [p for p in meeting if objective.unit_cost(p, unit) is not None] or meeting
    cheapest = min(money(p) for p in meeting)
    near = [p for p in meeting if money(p) <= cheapest * (1 + objective.TIME_TOLERANCE)]
    return min(near, key=lambda p: (p.training_hours or p.hours_per_million_tokens, money(p)))


def _colocated_of(t: Tried) -> bool | None:
    return t.rollout.colocated if t.rollout is not None else None


def other_layout_words(w: Workload, chosen: Plan, pairs: list[tuple[Tried, Plan]]) -> str:
    """How the best plan of the other arrangement (separate cards for a colocated choice, or the
    reverse) compares with the one kept, in words; '' when there is none (DPO) or no figure to compare."""
    kept = next((t for t, p in pairs if p is chosen), None)
    if kept is None or kept.rollout is None:
        return ""
    others = [p for t, p in pairs if _colocated_of(t) is not kept.rollout.colocated and not p.misses]
    unit = objective.unit_of_work(w)
    priced = [p for p in others if objective.unit_cost(p, unit) is not None]
    if not priced or objective.unit_cost(chosen, unit) is None:
        return ""
    best = min(priced, key=lambda p: objective.unit_cost(p, unit))
    what = "on separate cards" if kept.rollout.colocated else "colocated"
    ratio = objective.unit_cost(best, unit) / objective.unit_cost(chosen, unit)
    return (f"; the best plan with the rollouts {what} ({best.count} cards) costs {ratio:.2f}x this one "
            f"{objective.UNIT_LABELS[unit]}" + (f" and takes {best.training_hours:,.1f} h" if best.training_hours else ""))
