"""Time to first token at an arrival rate (issue 20): requests arriving as a Poisson stream, as MLPerf
Inference's Server scenario offers them and as a service sees them, rather than a fixed number of users.

A continuously batching engine (TensorRT-LLM's in-flight batching, vLLM, SGLang) is not a single server
that takes one request at a time: it holds up to `max_batch` sequences, each for its whole prefill and
decode, and takes new ones in at step boundaries. So a request waits
  1. for a free sequence slot: an M/D/c queue whose c servers are the slots and whose service time is a
     request's time in the engine (c / capacity, Little's law at capacity): next to nothing until the
     engine is close to full, then the 1 / (1 - rho) growth near saturation;
  2. for the step boundary and the step that runs its prefill: `first_token_steps` steps of the batch
     in flight (theory 1.5: half a step to the boundary, then the step that returns the first token),
     fitted by bench/fit.py on MLPerf Server logs (catalog/measurements.yaml class ttft_load);
plus the request handling and its own prefill. MLPerf's logs show why the single-server M/D/1 form
(the first version of this model) was wrong: 29 TensorRT-LLM runs at 85-98% of their Offline capacity
all give a mean TTFT of 1.55-2.5 times their mean TPOT, with no growth with the utilisation that an
M/D/1 wait with the service time 1 / capacity (rho / (1 - rho): x3 from 0.85 to 0.95) would give.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.inputs.catalog import GPU
from advisor.inputs.workload import Workload
from advisor.numbers.calibration import Calibration, default_calibration
from advisor.numbers.layouts import kv_replication
from advisor.numbers.ledger import Ledger
from advisor.numbers.poolspeed import md_c_wait
from advisor.numbers.speed import Serving, Speed, max_batch, replica_times
from advisor.numbers.terms import Term


@dataclass(frozen=True)
class Load:
    """One replica's serving under Poisson arrivals: the engine's utilisation, the sequences in flight
    (Little's law), the wait for a slot, and the TTFT a request sees (ms); `saturated` when the offered
    rate reaches the replica's capacity (no steady state: the queue grows without bound)."""

    requests_per_s: float            # offered to this replica
    capacity_requests_per_s: float   # at the largest batch it holds (max_batch), or as measured
    utilisation: float
    in_flight: int
    slots: int                       # sequences the replica holds at once (the M/D/c servers)
    ttft_ms: float                   # math.inf when saturated
    wait_ms: float                   # for a free slot (M/D/c)
    prefill_ms: float
    tpot_ms: float                   # of the batch in flight: the step a new request waits for and joins
    saturated: bool
    formula: str


def slot_wait_s(arrivals_per_s: float, capacity_per_s: float, slots: int) -> float:
    """Mean wait for one of `slots` sequence slots when each request holds one for slots / capacity
    seconds (M/D/c); infinite at or past the capacity."""
    if arrivals_per_s >= capacity_per_s:
        return math.inf
    return md_c_wait(arrivals_per_s, slots / capacity_per_s, slots)


def serving_at_rate(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, requests_per_s: float,
                    cal: Calibration | None = None, capacity_requests_per_s: float | None = None) -> Load:
    """TTFT of the layout `lay` when requests arrive at `requests_per_s` (Poisson, spread evenly over its
    DP replicas). A replica's capacity is its throughput at the largest batch it holds (or
    `capacity_requests_per_s` over all replicas, a measured figure, when given); the batch in flight
    is the least that holds rate x (TTFT + output x TPOT) sequences (Little's law)."""
    cal = cal or default_calibration()
    tp, pp, dp = lay.tp, lay.pp, lay.dp
    adp = lay.attention_dp
    rep = kv_replication(led, tp, adp)
    prompt, output = w.prompt_tokens, w.output_tokens
    steps = cal.first_token_steps
    at = replica_times(w, led, gpu, cal, rate, tp, pp, rep, lay.ep, adp)[0]     # as the plan's own serving is timed

    def first_token(sv: Serving) -> float:
        return cal.request_ms * 1e-3 + sv.prefill + steps * sv.tpot

    b_max, _ = max_batch(w, led, gpu, cal, tp, pp, prompt, output, rep, adp)
    lam = requests_per_s / dp
    # a measured capacity (MLPerf's Offline run) sets the utilisation only: the batch in flight and its
    # step are the speed model's, as they are for a plan the advisor proposes
    mu = capacity_requests_per_s / dp if capacity_requests_per_s else at(b_max).tokens_per_s / output
    rho = lam / mu if mu > 0 else math.inf
    lo, hi = 1, b_max
    while lo < hi:
        mid = (lo + hi) // 2
        sv = at(mid)
        if lam * (first_token(sv) + output * sv.tpot) <= mid:
            hi = mid
        else:
            lo = mid + 1
    sv = at(lo)
    wait = slot_wait_s(lam, mu, b_max) if mu > 0 else math.inf
    saturated = rho >= 1
    ttft = first_token(sv) + wait
    how = (f"{requests_per_s:g} requests/s over {dp} replica(s): utilisation {rho:.2f} of {mu:,.2f} requests/s per replica "
           f"({'measured' if capacity_requests_per_s else f'its throughput at batch {b_max:,} / {output:,} output tokens'}); "
           f"{lo:,} sequences in flight (Little's law); TTFT = {cal.request_ms:g} ms request handling + prefill "
           f"{sv.prefill * 1e3:,.1f} ms + {steps:g} decode steps of that batch ({sv.tpot * 1e3:,.1f} ms each: the wait for the "
           f"step boundary and the step that returns the first token, fitted on MLPerf Server logs) + "
           + (f"{wait * 1e3:,.1f} ms for one of {b_max:,} sequence slots (M/D/c)" if not saturated
              else f"an unbounded wait for one of {b_max:,} sequence slots (the rate is past the capacity)"))
    return Load(lam, mu, rho, lo, b_max, math.inf if saturated else ttft * 1e3, wait * 1e3, sv.prefill * 1e3,
                sv.tpot * 1e3, saturated, how)


def speed_at_rate(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration, sp: Speed,
                  explain: bool) -> tuple[Speed, Load]:
    """The plan's speed with its time to first token at the workload's arrival rate (queueing): the
    closed-loop figure is replaced; a plan past its capacity has none (no steady state)."""
    load = serving_at_rate(w, led, gpu, lay, rate, w.requests_per_s, cal)
    ttft = None if load.saturated else load.ttft_ms
    total = load.capacity_requests_per_s * lay.dp
    if not explain:
        return replace(sp, ttft_ms=ttft, capacity_requests_per_s=total), load
    text = (f"at {w.requests_per_s:g} requests/s (requests_per_s): " +
            (f"capacity {total:,.2f} requests/s < {w.requests_per_s:g} requested: no steady state" if load.saturated
             else f"{load.ttft_ms:,.0f} ms") + f"; {load.formula}")
    explained = {**sp.speed_explained, "ttft_at_rate_ms": {
        "value": ttft, "factor": {"first_token_steps": cal.first_token_steps, "utilisation": round(load.utilisation, 4),
                                  "capacity_requests_per_s": round(total, 4), "in_flight_per_replica": load.in_flight},
        "source": "catalog/efficiency.yaml (first_token_steps fitted by bench/fit.py on MLPerf Server logs)", "formula": text}}
    return replace(sp, ttft_ms=ttft, capacity_requests_per_s=total, speed_explained=explained, why={**sp.why, "ttft_ms": text}), load

