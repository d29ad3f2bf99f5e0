"""The memo's "workload as understood": each field named as the dialogue names it, its value in words,
and only the fields that mean something for this workload (by the modes the workload schema gives
each field, `Spec.modes` in advisor/inputs/workload.py)."""
from __future__ import annotations

from advisor.inputs.catalog import Catalog
from advisor.inputs.workload import FIELDS
from advisor.shell.memowords import field_words
from advisor.shell.wording import count as _count, fmt_input as _fmt_input, usd as _usd

#: workload fields as the dialogue (rules/questions.yaml) names them (constraints among them); which
#: fields show is `applies`'s business, not this table's
FIELD_LABELS = {
    "mode": "What the GPUs do", "model": "Model", "precision": "Precision of the weights",
    "kv_precision": "Precision of the KV cache", "method": "Training method", "lora_rank": "LoRA rank",
    "optimizer": "Optimizer", "master_weights": "FP32 master copy of 16-bit weights", "zero_stage": "ZeRO stage (sharding)",
    "activation_checkpointing": "Recompute activations (activation checkpointing)",
    "context_tokens": "Tokens per sequence (context length)", "prompt_tokens": "Prompt tokens per request",
    "output_tokens": "Generated tokens per request", "concurrency": "Sequences at once (concurrent users or batch size)",
    "requests_per_s": "Requests arriving per second (the time to first token is taken at this rate)",
    "micro_batch": "Micro-batch per GPU",
    "training_tokens": "Tokens in the whole job", "latency": "Interactive users or batch processing",
    "task": "Kind of job", "utilisation": "Share of the month in use",
    "busy_share": "Share of hours the owned GPUs are busy",
    "import_restricted": "Barred from US export-controlled accelerators", "liquid_cooling": "Liquid cooling in the data centre",
    "power_kw_per_node": "Power available per node", "deployment": "Where the GPUs run", "load": "Load",
    "budget_usd_per_hour": "Most you will pay per hour", "budget_usd": "Most you will pay for the job", "max_gpus": "Most GPUs you can use",
    "deadline_hours": "Deadline for the job", "gpus": "Only these GPUs",
}
#: the schema lets every mode carry `latency` (a training record keeps its default, and the decision
#: records hold it), but only serving means anything by it: the dialogue asks it for inference alone
SHOWN_MODES = {"latency": ("inference",)}
MODEL_LABELS = {"params_b": "parameters", "active_params_b": "active parameters", "expert_params_b": "expert parameters",
                "kv_heads": "KV heads", "head_dim": "head size", "mla_kv_dim": "MLA cache width",
                "max_context": "longest context"}
FIELD_UNITS = {"context_tokens": "tokens", "prompt_tokens": "tokens", "output_tokens": "tokens",
               "training_tokens": "tokens", "requests_per_s": "requests/s", "power_kw_per_node": "kW", "deadline_hours": "hours"}


def label(k: str, mode: str) -> str:
    """A workload field (or constraint) as the dialogue names it in this mode."""
    return FIELD_LABELS.get(k) or field_words(k)


def workload_rows(inputs: dict, catalog: Catalog) -> list[tuple[str, str]]:
    """The workload as understood, named as the dialogue names it; fields of another mode left out."""
    mode = inputs["mode"]
    rows = []
    for k, val in inputs.items():
        if k == "name" or not applies(k, inputs):
            continue
        if k == "constraints":
            for ck, cv in (val or {}).items():
                if ck == "utilisation":          # busy_share's old name, kept in the record for one release
                    continue
                rows.append((label(ck, mode), _fmt_value(ck, cv, catalog)))
            continue
        rows.append((label(k, mode), _fmt_value(k, val, catalog)))
    return rows


def applies(k: str, inputs: dict) -> bool:
    """Whether a workload field means anything for this workload (the dialogue would have asked it): the
    modes the schema gives the field, and LoRA's rank only with LoRA."""
    modes = SHOWN_MODES.get(k) or (FIELDS[k].modes if k in FIELDS else None)
    if modes is not None and inputs["mode"] not in modes:
        return False
    return not (k == "lora_rank" and inputs.get("method") not in ("lora", "qlora"))


def _fmt_value(k: str, val, catalog: Catalog) -> str:
    if k == "model":
        if isinstance(val, str) and val in catalog.models:
            return f"{catalog.models[val].name} ({val})"
        if isinstance(val, dict):
            name = val.get("name") or "custom model"
            figs = ", ".join(f"{MODEL_LABELS.get(x, x.replace('_', ' '))} {_fmt_input(y)}{'B' if x.endswith('params_b') else ''}"
                             for x, y in val.items() if x != "name")
            return f"{name}: {figs}"
    if k in ("budget_usd_per_hour", "budget_usd") and isinstance(val, (int, float)):
        return _usd(val)
    if k in ("utilisation", "busy_share") and isinstance(val, (int, float)) and not isinstance(val, bool):
        # 8x5 as "24% (174 h a month)", not 0.238095 (issue 42: answers carried whole into the memo)
        from advisor.numbers.terms import HOURS_PER_MONTH
        return f"{val:.0%} ({val * HOURS_PER_MONTH:,.0f} h a month)"
    if k in FIELD_UNITS and isinstance(val, (int, float)) and not isinstance(val, bool):
        return f"{_count(val) if val >= 1e6 else _fmt_input(val)} {FIELD_UNITS[k]}"
    return _fmt_input(val)
