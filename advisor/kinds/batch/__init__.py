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

from advisor.inputs.kinds import KINDS as SPECS, LLM_BATCH
from advisor.kinds import Words
from advisor.kinds.llm import TokenKind

SETTLE_BY = ("a thousand of the job's own requests on one node of each at the engine's largest batch, measuring "
             "input + output tokens/s")


# the serving estimator and the per-token APIs, as LLM serving: a TokenKind with the batch job's words
KINDS = {LLM_BATCH: TokenKind(SPECS[LLM_BATCH], Words("job", "hours", "batch job", SETTLE_BY))}
