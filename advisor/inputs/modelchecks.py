"""The checks of a model's figures, shared by the catalog's models.yaml and a workload's own model: the
precisions the memory ledger has sizes for, and figures that contradict each other.
"""
from __future__ import annotations

from advisor.base import yamlio
from advisor.inputs.figures import is_number

#: precisions of weights the memory ledger has a size for (workload files and the catalog's models)
PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "mxfp4", "nvfp4", "fp4", "int4")
#: parts a model's shipped precision may name: every weight, or the experts and the rest apart
PRECISION_PARTS = ("all", "experts", "rest")


def model_invariants(v: dict) -> list[tuple[str, str]]:
    """(field, problem) for figures of one model that contradict each other (a window over more
    layers than the model has gives a negative KV cache); shared by the catalog and workload files."""
    def num(k):
        x = v.get(k)
        return x if is_number(x) else None
    out = []
    pairs = (("active_params_b", "params_b"), ("expert_params_b", "params_b"), ("sliding_window_layers", "layers"), ("moe_layers", "layers"),
             ("experts_per_token", "experts"), ("kv_heads", "attention_heads"))
    for small, big in pairs:
        a, b = num(small), num(big)
        if a is not None and b is not None and a > b:
            out.append((small, f"cannot exceed {big} ({a:g} > {b:g})"))
    p, act, exp = num("params_b"), num("active_params_b"), num("expert_params_b")
    if p is not None and act is not None and exp is not None and exp <= p and act < (p - exp) * (1 - 1e-6):
        out.append(("active_params_b", f"is below the parameters outside the experts ({p:g} - {exp:g} = {p - exp:g}), "
                                       "which every token uses"))
    return out


def check_model_invariants(col, values: dict, entry, owner: str) -> None:
    for k, problem in model_invariants(values):
        col.add(problem, yamlio.line_of(entry, k), f"{owner}.{k}")


def check_precision(col, v, line, where) -> None:
    """A model's shipped precision is one of PRECISIONS, or a mapping of parts to them (the experts
    and the rest apart, both given): the ledger looks each one up in its table of sizes."""
    if v is None:
        return
    if isinstance(v, dict):
        bad = [f"{k}: {x}" for k, x in v.items() if k not in PRECISION_PARTS or x not in PRECISIONS]
        if bad or not v or (("experts" in v) != ("rest" in v)):
            col.add(f"must map {', '.join(PRECISION_PARTS)} (experts with rest) to one of {', '.join(PRECISIONS)} "
                    f"(got {str(dict(v))[:60]})", line, where)
    elif v not in PRECISIONS:
        col.add(f"'{str(v)[:40]}' is not one of {', '.join(PRECISIONS)}", line, where)
