"""The service levels an interactive workload must meet when it states none (T06): the catalog's
default per model class (catalog/efficiency.yaml `service_levels.interactive`, MLPerf Inference's
interactive limits), the time-to-first-token limit widened for a long prompt."""
from __future__ import annotations

from advisor.inputs.catalog import Catalog, Model

LATENCY_FIELDS = {"ttft_ms": "time to first token, ms", "tpot_ms": "time per output token, ms"}


def default_service_levels(catalog: Catalog, model=None, prompt_tokens: int | None = None) -> dict:
    """The time to first token and per output token an interactive plan must meet when the workload
    states none (T06), from catalog/efficiency.yaml `service_levels.interactive`: the limits of the
    first model class the model matches, the TTFT limit widened for a long prompt (the catalog's
    stated allowance), with their sources and the class in words."""
    levels = ((catalog.efficiency.get("service_levels") or {}).get("interactive") or {})
    cls = service_class(levels, model)
    if cls is None:
        return {}
    out: dict = {}
    srcs: list[str] = []
    for k in LATENCY_FIELDS:
        f = cls.get(k)
        if isinstance(f, dict) and isinstance(f.get("v"), (int, float)) and not isinstance(f.get("v"), bool) and f["v"] > 0:
            out[k] = float(f["v"])
            srcs += [str(x) for x in f.get("src") or []]
    if not out:
        return {}
    what = levels.get("what")
    bench = cls.get("benchmark")
    text = ("the default for interactive use" + (f", {what}" if isinstance(what, str) and what else "")
            + (f" for {bench}" if isinstance(bench, str) and bench else ""))
    allow = levels.get("long_prompt_allowance") or {}
    covered = allow.get("covered_prompt_tokens") if isinstance(allow, dict) else None
    if "ttft_ms" in out and prompt_tokens and isinstance(covered, int) and covered > 0 and prompt_tokens > covered:
        base = out["ttft_ms"]
        out["ttft_ms"] = base * prompt_tokens / covered
        text += (f", the {base:g} ms first-token limit grown to {out['ttft_ms']:,.0f} ms for a {prompt_tokens:,}-token prompt "
                 f"(in proportion beyond {covered:,} tokens, a stated choice)")
        srcs += [str(x) for x in allow.get("src") or []]
    out["service_level_source"] = text + " (catalog/efficiency.yaml)"
    out["service_level_refs"] = tuple(dict.fromkeys(srcs))
    return out


def service_class(levels: dict, model) -> dict | None:
    """The first class of `service_levels.interactive.classes` the model matches (mixture-of-experts
    or dense when `moe` is given, total parameters within `up_to_params_b`, active parameters per token
    within `up_to_active_params_b`); the last that matches its kind when its size is unknown."""
    classes = [c for c in levels.get("classes") or [] if isinstance(c, dict)]
    if not isinstance(model, Model):
        return None
    experts, k = model.num("experts"), model.num("experts_per_token")
    moe = bool(experts and (k or 0) < experts)
    size = {"up_to_params_b": model.num("params_b"), "up_to_active_params_b": model.num("active_params_b") or model.num("params_b")}
    mine = [c for c in classes if c.get("moe") is None or bool(c.get("moe")) == moe]
    for c in mine:
        caps = [(size[key], c[key]) for key in size if c.get(key) is not None]
        if all(v is not None and v <= cap for v, cap in caps):
            return c
    return mine[-1] if mine else None
