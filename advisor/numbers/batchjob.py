"""An offline batch job's figures (issue 44 item 5): its volume in requests and tokens, its hours at the
plan's throughput and what the whole job costs. The plan's serving speed is the one numbers.speed gives
at the largest batch that fits (`concurrency: max`), whose time per output token already carries each
prompt's prefill spread over its output tokens (servestep's prefill interference), so the output tokens
per second count prefill and decode both: a 15:1 prompt-heavy job is timed as the prefill-bound job it is.
"""
from __future__ import annotations

from dataclasses import replace


def volume(w) -> tuple[float, float, float]:
    """(requests, prompt tokens, output tokens) of the whole job: `volume: {requests: N}` is N requests of
    prompt_tokens + output_tokens each; `{tokens: N}` is N tokens in all, split in the workload's
    prompt:output ratio."""
    which, n = w.volume
    per_request = w.prompt_tokens + w.output_tokens
    requests = n if which == "requests" else n / per_request
    return requests, requests * w.prompt_tokens, requests * w.output_tokens


def total_tokens(w) -> float:
    _, prompt, output = volume(w)
    return prompt + output


def timed(w, sp, explain: bool = True):
    """The plan's speed with the job's hours: its output tokens over the plan's output tokens/s (all its
    replicas at their largest batch); unchanged without a volume or a throughput."""
    if not w.volume or not sp.tokens_per_s:
        return sp
    requests, prompt, output = volume(w)
    hours = output / sp.tokens_per_s / 3600
    if not explain:
        return replace(sp, job_hours=hours)
    why = dict(sp.why)
    why["job_hours"] = (f"{requests:,.0f} requests x {w.output_tokens:,} output tokens = {output:,.0f} output tokens "
                        f"(and {prompt:,.0f} prompt tokens, prefilled within the same steps) / "
                        f"{sp.tokens_per_s:,.0f} output tokens/s at the largest batch / 3600")
    return replace(sp, job_hours=hours, why=why)


def priced(w, c, sp, explain: bool = True):
    """The job's cost (`usd_per_job`: its hours x the plan's price per hour) and its cost per million
    input + output tokens (`usd_per_million_io_tokens`); unchanged without hours or a price."""
    if sp.job_hours is None or not c.usd_per_hour:
        return c
    usd = sp.job_hours * c.usd_per_hour
    tokens = total_tokens(w)
    per_million = usd / tokens * 1e6
    if not explain:
        return replace(c, usd_per_job=usd, usd_per_million_io_tokens=per_million)
    why = dict(c.why)
    why["usd_per_job"] = f"{sp.job_hours:,.2f} h x ${c.usd_per_hour:,.2f}/h"
    why["usd_per_million_io_tokens"] = (f"${usd:,.2f} per job / {tokens / 1e6:,.1f} million input + output tokens "
                                        "(the volume's prompt and output tokens)")
    return replace(c, usd_per_job=usd, usd_per_million_io_tokens=per_million, why=why)
