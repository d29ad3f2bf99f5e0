"""The settings a user fixed that an expert would try turning (the decision's suggestions, issue 7):
each a workload turned one way, for the planner to plan again. Split from numbers.planner, which plans
whatever workload it is given."""
from __future__ import annotations

from dataclasses import replace

from advisor.inputs.workload import Workload
from advisor.inputs.parallel import notation
from advisor.numbers.ledger import training_precision


def knob_alternatives(w: Workload, missed: bool = False) -> list[tuple[str, Workload]]:
    """The settings the user fixed that an expert would try turning, each with the workload turned:
    activation checkpointing off (C06), a micro-batch above 1 (C06, C13), 16-bit training on a card
    with native FP8 (T02, K10), a fixed ZeRO stage (the planner chooses one); in serving, when every
    plan `missed` its service level (or budget), 16-bit weights at FP8; and a stated layout, against the
    planner's own (review 18, F4: a stated TP 8 cost $2.36 per million output tokens where the planner's
    1 x H200 costs $1.21, and nothing said so: the user who insists on a layout is the one who needs
    to know what insisting costs)."""
    given = []
    if w.layout_given:
        stated = notation(w.stated_layout)
        given = [(f"layout {stated} to the one the planner chooses", replace(w, layout=None, pools=None))]
    if not w.training:
        small = _small_serving_int4(w)      # a workstation or a small team: 4-bit weights weighed too (issue 46)
        given = given + small
        # serving 16-bit weights: FP8 weights halve them and run at the FP8 rate where the card has one
        # (K10); the suggestion is the plan with them, the quality check the user's (review 11, F2: 70B
        # within $3/h met the service level only at FP8, and the memo said no GPU could). Only for an
        # answer that is a closest plan: a second decision for every serving answer would double its time
        if not missed:
            return given
        shipped = w.precision or (w.model.precision.get("all") if w.model else None)
        if w.task == "llm" and shipped in ("bf16", "fp16") and w.model is not None and set(w.model.precision) == {"all"}:
            return given + [("precision: fp8 (weights quantized to 8 bits; check quality on your tasks, K10)", replace(w, precision="fp8"))]
        return given
    out = list(given)
    if "activation_checkpointing" not in w.defaults and not w.activation_checkpointing:
        out.append(("activation_checkpointing: true", replace(w, activation_checkpointing=True)))
    if "micro_batch" not in w.defaults and w.micro_batch > 1:
        out.append((f"micro_batch 1 instead of {w.micro_batch}, with gradient accumulation",
                    replace(w, micro_batch=1)))
    if "zero_stage" not in w.defaults:
        out.append((f"zero_stage {w.zero_stage} to the stage the planner chooses",
                    replace(w, defaults=tuple(w.defaults) + ("zero_stage",))))
    if w.method == "full" and training_precision(w) in ("bf16", "fp16"):
        out.append(("precision: fp8 (on a card with native FP8)", replace(w, precision="fp8")))
    return out


#: the most users a plan is weighed at 4-bit weights for without asking (a small team's)
SMALL_TEAM_USERS = 8


def _small_serving_int4(w: Workload) -> list[tuple[str, Workload]]:
    """A single user or small team (or a workstation) serving 16-bit or 8-bit weights: the same at 4-bit
    (AWQ/GPTQ), a quarter of the 16-bit weights, which often fits a far cheaper card (K10); the quality
    check is the user's. Only for an LLM whose shipped weights are one precision (no MoE split)."""
    shipped = w.precision or (w.model.precision.get("all") if w.model else None)
    small = w.constraints.deployment == "workstation" or (not w.concurrency_max and w.concurrency <= SMALL_TEAM_USERS)
    if not small or w.task != "llm" or w.model is None or set(w.model.precision) != {"all"} \
            or shipped not in ("bf16", "fp16", "fp8"):
        return []
    return [("precision: int4 (4-bit weights, AWQ or GPTQ: a quarter of the 16-bit weights; 4-bit loses some "
             "quality, check it on your own tasks, K10)", replace(w, precision="int4"))]

