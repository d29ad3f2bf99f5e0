"""The workload checks that read two fields together (mode and method, context and model, layout and
model, the batch sizes, a constraint that means nothing in the mode): each problem names its field and
line, as the one-field checks of advisor.inputs.workload do."""
from __future__ import annotations

from advisor.inputs import kinds

from advisor.base import yamlio
from advisor.base.errors import Collector
from advisor.inputs import layoutinput
from advisor.inputs.catalog import Model

TRAIN = ("training", "fine-tuning")
#: the longest stretch of a model's trained context the advisor accepts: YaRN's x4 (Qwen's documented
#: 32,768 -> 131,072); beyond the trained length a note says the model needs the scaling
ROPE_SCALING_MAX = 4


def between_fields(values: dict, data, col: Collector) -> tuple[str, ...]:
    """The checks that read two fields together (mode and method, context and model, layout and model,
    the batch sizes); returns the notes to show (a renamed field read for one release)."""
    mode = values.get("mode")
    notes = ()
    if mode in TRAIN and "concurrency" in values:
        # `concurrency` meant the micro-batch in training files until micro_batch had a name: read for one release
        if "micro_batch" in values and values["micro_batch"] != values["concurrency"]:
            col.add(f"is the old name of micro_batch in training; give micro_batch only (here {values['micro_batch']})",
                    yamlio.line_of(data, "concurrency"), "concurrency")
        values["micro_batch"] = values.pop("concurrency")
        notes = ("The workload's `concurrency` was read as `micro_batch` (its name in training since this release).",)
    if values.get("concurrency_max") and values.get("requests_per_s") is not None:
        col.add("an arrival rate applies to online serving; concurrency: max is an offline run at the largest batch (give one of them)",
                yamlio.line_of(data, "requests_per_s"), "requests_per_s")
    if values.get("concurrency_max") and mode != "inference":
        col.add("'max' applies to inference only; training takes a micro-batch per GPU", yamlio.line_of(data, "concurrency"), "concurrency")
    cons = values.get("constraints")
    if cons is not None and getattr(cons, "spot", False) and cons.deployment != "cloud":
        raw = data.get("constraints") if isinstance(data.get("constraints"), dict) else {}
        col.add(f"spot instances are a cloud offer; deployment {cons.deployment} runs on the team's own cards",
                yamlio.line_of(raw, "spot", yamlio.line_of(data, "constraints")), "constraints.spot")
    if mode == "inference" and values.get("method") in ("lora", "qlora"):
        col.add(f"'{values['method']}' is a training method; it does not apply to inference",
                yamlio.line_of(data, "method"), "method")
    model = values.get("model")
    if "context_tokens" in values and isinstance(model, Model):
        limit, ctx = model.num("max_context"), values["context_tokens"]
        if limit and ctx > limit * ROPE_SCALING_MAX:
            col.add(f"{ctx:,} tokens is beyond {model.id}'s {limit:,.0f}-token context, even at the x{ROPE_SCALING_MAX} "
                    "RoPE scaling (YaRN) models are extended with", yamlio.line_of(data, "context_tokens"), "context_tokens")
        elif limit and ctx > limit:
            notes += (f"context_tokens {ctx:,} is beyond {model.id}'s {limit:,.0f}-token context: the model needs RoPE "
                      "scaling (e.g. YaRN) to run at that length, and the figures assume it does.",)
    if mode == "inference" and "context_tokens" in data:
        ctx, p, o = values.get("context_tokens"), values.get("prompt_tokens"), values.get("output_tokens")
        if "prompt_tokens" in data and ctx and p and p > ctx:
            col.add(f"{p:,} prompt tokens do not fit the {ctx:,}-token context_tokens", yamlio.line_of(data, "prompt_tokens"), "prompt_tokens")
        elif "prompt_tokens" in data and "output_tokens" in data and ctx and p and o and p + o > ctx:
            col.add(f"prompt {p:,} + output {o:,} tokens exceed the {ctx:,}-token context_tokens",
                    yamlio.line_of(data, "output_tokens"), "output_tokens")
    layoutinput.check_layout(values, model, data, col, mode in TRAIN)
    layoutinput.check_pools(values, model, data, col, mode in TRAIN)
    if values.get("pools") and values.get("requests_per_s") is not None:
        # the queueing model times one pool serving both phases (advisor/numbers/queueing.py)
        col.add("an arrival rate is timed for a layout that serves prefill and decode together; give requests_per_s "
                "or a disaggregated layout {prefill, decode}", yamlio.line_of(data, "requests_per_s"), "requests_per_s")
    gb, mbs = values.get("global_batch"), values.get("micro_batch", 1)
    if mode in TRAIN and gb and gb < mbs:
        col.add(f"{gb} sequences per step is less than one micro-batch of {mbs}", yamlio.line_of(data, "global_batch"), "global_batch")
    elif mode in TRAIN and gb:
        # Megatron-LM asserts global_batch % (micro_batch x DP) == 0: a step is whole micro-batches on every replica
        dp = values["layout"].dp if values.get("layout") else 1
        if gb % (mbs * dp) and mbs * dp <= gb:     # (more replicas than the batch: layoutinput says so)
            col.add(f"{gb} sequences per step is not a whole number of micro-batches of {mbs}"
                    + (f" on each of the layout's {dp} data-parallel replicas" if dp > 1 else "")
                    + f" (give a multiple of {mbs * dp})", yamlio.line_of(data, "global_batch"), "global_batch")
    if mode == "inference" and "requests_per_s" in values and "concurrency" in values and not values.get("concurrency_max"):
        notes += (f"At an arrival rate the sequences in flight follow from requests_per_s and the plan's own times "
                  f"(each plan states them): concurrency {values['concurrency']:,} does not size the plan.",)
    cons = values.get("constraints")
    job = values.get("kind") in kinds.KINDS and kinds.KINDS[values["kind"]].job
    if mode == "inference" and cons is not None and cons.deadline_hours is not None and not job:
        col.add("a deadline applies to a job with a volume (training, fine-tuning, or an offline batch job: latency: batch "
                "with volume: {requests: N} or {tokens: N}); serving is sized by its load and service level "
                "(latency, requests_per_s)", yamlio.line_of(data.get("constraints") or {}, "deadline_hours",
                                                            yamlio.line_of(data, "constraints")), "constraints.deadline_hours")
    layoutinput.check_virtual_stages(values, model, data, col, mode in TRAIN)
    if values.get("method") == "qlora" and values.get("precision") not in (None, "int4"):
        col.add(f"QLoRA keeps the frozen base weights in 4 bits: give precision: int4 or leave it out "
                f"(for {values['precision']} base weights use method: lora)", yamlio.line_of(data, "precision"), "precision")
    if values.get("method") == "qlora" and values.get("layout") and (values["layout"].tp > 1 or values["layout"].pp > 1):
        # bitsandbytes' 4-bit layers have no tensor- or pipeline-parallel kernels: QLoRA runs on one card
        # or as FSDP-QLoRA over data-parallel ranks (QLORA_FSDP)
        col.add("QLoRA runs on one card or as FSDP-QLoRA over data-parallel ranks: layout tp and pp must be 1",
                yamlio.line_of(data, "layout"), "layout")
    return notes
