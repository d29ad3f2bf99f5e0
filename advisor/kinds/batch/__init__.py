"""Offline batch LLM jobs (issue 44 item 5) as a kind: a whole volume of requests or tokens
(`volume`), finished by a deadline (`constraints.deadline_hours`) or, without one, at the cheapest cost
per job within the long-job bound the training path uses (numbers.longjob).

A batch job is LLM serving with no user waiting: each replica runs the largest batch that fits
(`concurrency: max`), its time per output token carrying the prompts' prefill (numbers.servestep), so
the plan's output tokens/s count prefill and decode both. numbers.batchjob turns that throughput into
the job's hours and cost; the planner adds replicas until the hours meet the deadline (numbers.replicas,
the objective's time figure `job_hours`). The memory ledger, the speed model and the layouts are the
LLM's (advisor/numbers), shared with the serving kind.
"""
from __future__ import annotations

from dataclasses import dataclass

from advisor.inputs.catalog import Catalog
from advisor.inputs.kinds import KINDS as SPECS, LLM_BATCH, KindSpec
from advisor.inputs.workload import Workload
from advisor.kinds import Words
from advisor.numbers import estimate as estimator
from advisor.numbers import api
from advisor.numbers.estimate import Estimate

SETTLE_BY = ("a thousand of the job's own requests on one node of each at the engine's largest batch, measuring "
             "input + output tokens/s")


@dataclass(frozen=True)
class BatchKind:
    """An offline batch job: the serving estimator at the largest batch, its volume timed and priced whole."""

    spec: KindSpec
    words: Words

    def estimate(self, w: Workload, catalog: Catalog, only: list[str] | None = None) -> Estimate:
        return estimator.estimate(w, catalog, only)

    def api_comparison(self, plan, w: Workload, catalog: Catalog) -> dict | None:
        """The per-token APIs that sell the model (or its size class), beside the plan (numbers.api)."""
        return api.record(plan, w, catalog)


KINDS = {LLM_BATCH: BatchKind(SPECS[LLM_BATCH], Words("job", "hours", "batch job", SETTLE_BY))}
