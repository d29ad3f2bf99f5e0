"""RL post-training as a kind: the models each method holds (models), one step timed as the rollouts
with the serving model, the frozen forwards and the update with the training model and the weight
sync (step), and the layouts verl and OpenRLHF deploy, each priced per step and per run (plans).
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.base.errors import InputError, Problem
from advisor.inputs.catalog import Catalog
from advisor.inputs.kinds import KINDS as SPECS, RL, KindSpec
from advisor.inputs.workload import Workload
from advisor.kinds import Words
from advisor.kinds.llm import TokenKind
from advisor.kinds.rl import models, plans, step as steps
from advisor.numbers.estimate import Estimate, candidate_gpus
from advisor.numbers.ledger import TRAINING_SAFETY, Ledger, kv_shape, size_model, training_ledger
from advisor.numbers.plan import Plan
from advisor.numbers.terms import GB, Term


def ledger(w: Workload) -> Ledger:
    """Every model's states summed (C06 for the trained ones, 16-bit weights for the frozen), one
    micro-batch's activations, x1.2; the rollouts' KV cache takes the room each plan's cards leave."""
    st = models.states(w)
    act = models.activation_bytes(w, w.micro_batch)
    what = "; ".join(st.lines)
    terms = {
        "weights_gb": Term(st.weights, f"{len(models.roles(w))} models' weights: {what}", ("C06", "C09")),
        "gradients_gb": Term(st.gradients, "16-bit gradients of the trained models", ("C06",)),
        "optimizer_gb": Term(st.optimizer, "AdamW moments and fp32 master copy of the trained models", ("C06",)),
        "activations_gb": Term(act, f"one micro-batch of {models.sequence_tokens(w):,}-token sequences"
                                    + (" with recomputation" if models.checkpointing(w) else ""), ("C06", "Korthikanti2022")),
        "kv_cache_gb": Term(0.0, "the rollout engine's KV cache takes the room the cards leave (each plan's rollout batch)"),
    }
    sub = sum(t.value for t in terms.values())
    terms["overhead_gb"] = Term((TRAINING_SAFETY - 1) * sub, f"x1.2 safety factor on {sub / GB:,.1f} GB", ("C06",))
    terms["total_gb"] = Term(sub * TRAINING_SAFETY, "(weights + gradients + optimizer + activations) x 1.2", ("C06",))
    notes = (f"RL post-training ({w.rl_method}): " + "; ".join(f"{r.part} ({'trained' if r.trained else 'frozen'})"
                                                               for r in models.roles(w)) + " in memory.",)
    return Ledger(terms, size_model(w), kv_shape(w.model, w.kv_precision), False, {}, notes)


def compute_terms(w: Workload, led: Ledger) -> dict[str, Term]:
    trained, forward = steps.flops_per_token(w)
    s = led.sized
    return {
        "forward_flops_per_token": Term(2 * s.active, f"2 x {s.active / 1e9:,.2f}B active parameters", ("K04", "K01")),
        "train_flops_per_token": Term(6 * s.active, f"6 x {s.active / 1e9:,.2f}B active parameters", ("K08", "W04")),
        "job_flops_per_token": Term(trained + forward, "6 x active per trained model (x1.3 recomputation) + 2 x per forward "
                                    "(frozen models, old log-probs, critic values), each with causal attention", ("K08", "C06")),
    }


def _defaults_note(w: Workload) -> list[str]:
    said = []
    if models.rollouts(w) and not w.samples_per_prompt:
        said.append(f"samples_per_prompt {models.samples_per_prompt(w)} ({w.rl_method}'s usual group)")
    if not w.prompts_per_step:
        said.append(f"prompts_per_step {models.prompts_per_step(w)} (verl's and EasyR1's example rollout batch)")
    return [f"Assumed, not stated: {', '.join(said)}."] if said else []


def _deadline_shorter_than_a_step(w: Workload, cands: list[Plan]) -> None:
    """A deadline no plan's single step fits in is refused at the field (exit 2), naming the step."""
    dl = w.constraints.deadline_hours
    fit = [c for c in cands if c.fits]
    if not dl or not fit:
        return
    fastest = min(c.speed.speed_explained["rl_step"]["value"] for c in fit)
    if fastest / 3600 > dl:
        raise InputError(Problem(f"{dl:g} h is shorter than one RL step ({fastest / 3600:,.2f} h on the fastest plan: "
                                 f"{fastest:,.0f} s): give a longer deadline, or fewer prompts_per_step, samples or output_tokens",
                                 w.source, None, "constraints.deadline_hours"))


@dataclass(frozen=True)
class RLKind:
    spec: KindSpec
    words: Words

    def estimate(self, w: Workload, catalog: Catalog, only: list[str] | None = None) -> Estimate:
        led = ledger(w)
        train_led = training_ledger(w)
        cands = []
        for gpu in candidate_gpus(w, catalog, only):
            tried = plans.tried_layouts(w, gpu, catalog, train_led)
            if not tried:
                cands.append(Plan(gpu, False, reason=f"no layout holds the {len(models.roles(w))} models and a rollout "
                                                     f"batch on up to {max(plans.counts(gpu, w), default=0)} cards"))
                continue
            ps = [plans.plan_of(w, gpu, catalog, t) for t in tried]
            chosen = plans.choose(w, ps)
            why = {**chosen.why, "layout": chosen.why["layout"] + plans.other_layout_words(w, chosen, list(zip(tried, ps)))}
            cands.append(Plan(**{**chosen.__dict__, "layouts_considered": len(ps),
                                 "min_count": min(p.count for p in ps), "why": why}))
        _deadline_shorter_than_a_step(w, cands)
        notes = list(w.notes) + list(led.notes) + _defaults_note(w)
        return Estimate(w, led, cands, compute_terms(w, led), led.kv.bytes_per_sequence(1) if led.kv else None,
                        notes, led.bytes("total_gb"))

    # the per-token APIs that sell the model, beside the plan: the token kinds' comparison
    api_comparison = TokenKind.api_comparison


TRAINED = "a few RL steps on one node of each, timing the rollout and the update separately"
KINDS = {RL: RLKind(SPECS[RL], Words("job", "hours", "RL post-training", TRAINED))}
