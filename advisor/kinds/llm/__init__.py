"""LLM serving and LLM training and fine-tuning as kinds: the figures are advisor/numbers' (the memory
ledger of weights, KV cache, activations and optimizer states; bandwidth-bound decode and compute-bound
prefill; 6 x active parameters per trained token; the planner's TP/PP/DP/EP layouts), which the other
token kinds (offline batch jobs, RL post-training) build on. They stay in advisor/numbers because every
token kind shares them; this package is the kinds' door to them.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.inputs.catalog import Catalog
from advisor.inputs.kinds import KINDS as SPECS, KindSpec
from advisor.inputs.workload import Workload
from advisor.kinds import Words
from advisor.numbers import api, estimate as estimator
from advisor.numbers.estimate import Estimate


@dataclass(frozen=True)
class TokenKind:
    """A kind whose work is tokens, estimated by advisor/numbers."""

    spec: KindSpec
    words: Words

    def estimate(self, w: Workload, catalog: Catalog, only: list[str] | None = None) -> Estimate:
        return estimator.estimate(w, catalog, only)

    def api_comparison(self, plan, w: Workload, catalog: Catalog) -> dict | None:
        """The per-token APIs that sell the model (or its size class), beside the plan (numbers.api)."""
        return api.record(plan, w, catalog)


SERVED = "an hour of the workload on one node of each, measuring output tokens/s at the workload's concurrency"
TRAINED = "a few hundred training steps on one node of each, measuring tokens/s per GPU"

KINDS = {
    "llm-serving": TokenKind(SPECS["llm-serving"], Words("million output tokens", "tokens/s per user", "serving", SERVED)),
    "llm-training": TokenKind(SPECS["llm-training"], Words("job", "hours", "training", TRAINED)),
}
