"""Time to first token at an arrival rate (issue 20): requests arriving as a Poisson stream, as MLPerf
Inference's Server scenario offers them and as a service sees them, rather than a fixed number of users.

A continuously batching engine (TensorRT-LLM's in-flight batching, vLLM, SGLang) is not a single server
that takes one request at a time: it holds up to `max_batch` sequences, each for its whole prefill and
decode, and takes new ones in at step boundaries. So a request waits
  1. for a free sequence slot: an M/D/c queue whose c servers are the slots and whose service time is a
     request's time in the engine (TTFT + output x TPOT of the batch in flight, so the slots' mean
     occupancy is that batch, Little's law): next to nothing while the batch is well below the slots,
     then the 1 / (1 - rho) growth as it reaches them near saturation (the second version held a slot
     c / capacity, as if every slot were busy: 600-930 ms waits at 97-99% of capacity that MLPerf's
     logs do not show);
  2. for its first token, as the engine schedules prefills (catalog/engines.yaml `prefill`):
     - mixed (TensorRT-LLM's in-flight batching, vLLM's chunked prefill): the prompt runs inside the
       next decode step and its first token comes with that step: `first_token_steps` steps of the
       batch in flight (theory 1.5: half a step to the boundary, then the step), fitted by bench/fit.py
       on MLPerf Server logs (catalog/measurements.yaml class ttft_load). The prompt's own prefill is
       not added: the batch's TPOT already carries every prompt's prefill share (speed.serving_times
       `interference`), so adding it again counted it twice;
     - separate (vLLM before chunked prefill was its default): the prompts waiting at a step boundary
       run together in a prefill-only step that the decodes wait for, so the first token comes after
       half a decode step (the residual of the one running) and the prefill of the whole group, the
       prompts that arrived in one step (or, behind a harness that batches requests, its group);
plus the request handling. MLPerf's logs show why the single-server M/D/1 form (the first version of
this model) was wrong: 29 TensorRT-LLM runs at 85-98% of their Offline capacity all give a mean TTFT of
1.55-2.5 times their mean TPOT, with no growth with the utilisation that an M/D/1 wait with the service
time 1 / capacity (rho / (1 - rho): x3 from 0.85 to 0.95) would give; and AMD's vLLM 0.4 runs give a
mean TTFT of 7-8 times their TPOT, the group prefill of their harness's 0.3 s batches.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.inputs.catalog import GPU
from advisor.inputs.workload import Workload
from advisor.numbers.calibration import Calibration, default_calibration
from advisor.numbers.cardmemory import kv_replication
from advisor.numbers.ledger import Ledger
from advisor.numbers.poolspeed import md_c_wait
from advisor.numbers.speed import Serving, Speed, inference_speed, max_batch, replica_times
from advisor.numbers.terms import Term


@dataclass(frozen=True)
class Load:
    """One replica's serving under Poisson arrivals: the engine's utilisation, the sequences in flight
    (Little's law), the wait for a slot, and the TTFT a request sees (ms); `saturated` when the offered
    rate reaches the replica's capacity (no steady state: the queue grows without bound)."""

    requests_per_s: float            # offered to this replica
    capacity_requests_per_s: float   # at the largest batch it holds (or the slots' turnover there, if less)
    utilisation: float
    in_flight: int
    slots: int                       # sequences the replica holds at once (the M/D/c servers)
    ttft_ms: float                   # math.inf when saturated
    wait_ms: float                   # for a free slot (M/D/c)
    prefill_ms: float
    tpot_ms: float                   # of the batch in flight: the step a new request waits for and joins
    saturated: bool
    formula: str
    ttft_p99_ms: float = math.inf    # the mean x the factor fitted on MLPerf's p99 (Calibration.ttft_p99_factor)
    tpot_p99_ms: float = math.inf


def slot_wait_s(arrivals_per_s: float, held_s: float, slots: int) -> float:
    """Mean wait for one of `slots` sequence slots when each request holds one for `held_s` seconds (its
    time in the engine: M/D/c, the slots' mean occupancy arrivals x held = the batch in flight by Little's
    law); infinite when the arrivals would keep more than every slot busy."""
    if arrivals_per_s * held_s >= slots:
        return math.inf
    return md_c_wait(arrivals_per_s, held_s, slots)


def harness_group(requests_per_s: float, window_s: float, max_requests: int) -> tuple[float, float]:
    """(prompts per group, mean seconds a request waits to be sent) of a harness that collects requests
    for `window_s` or until it has `max_requests`, then sends them together to one replica (AMD's MLPerf
    vLLM harness: batcher_threshold 0.3 s, gpu_batch_size 96): Poisson arrivals fall evenly over the
    window, so the mean wait is half of it."""
    window = min(window_s, max_requests / requests_per_s)
    return requests_per_s * window, window / 2


def group_prefill_s(sv: Serving, output: int, prompts: float) -> float:
    """Seconds of a prefill-only step over `prompts` prompts: the first prompt as it runs alone (the
    weights read once) and each further one at its share of the batch's prefill compute (the per-prompt
    figure speed.serving_times spreads over a sequence's steps as `interference` = batch x it / output)."""
    per_prompt = sv.interference * output / sv.batch
    return sv.prefill + max(prompts - 1, 0.0) * per_prompt


def scaled(sv: Serving, k: float) -> Serving:
    """The same replica's times k times longer (its throughput 1 / k)."""
    return replace(sv, ttft=sv.ttft * k, prefill=sv.prefill * k, tpot=sv.tpot * k, step=sv.step * k, step_mem=sv.step_mem * k,
                   step_cmp=sv.step_cmp * k, step_comm=sv.step_comm * k, interference=sv.interference * k,
                   tokens_per_s=sv.tokens_per_s / k)


def with_floor(sv: Serving, floor_s: float) -> Serving:
    """The replica's step with the fixed time a batch under Poisson arrivals pays each step: `rate_read_share`
    x the replica's own weight read (the memory time of its one-sequence step), fitted on MLPerf Server logs.
    The closed-loop step at a large batch overlaps the weight read with the matmuls (max of the two) and,
    scaled to a measured capacity, is nearly all c x b; but with a step of floor + c x b, Little's law keeps
    b = lam x out x floor / (1 - lam x out x c) sequences in flight, so near capacity it is the fixed part
    that sets the batch, and with it the TPOT and the TTFT the logs show (v4.1 Lenovo H200 llama2-70b at 104 of
    109.7 samples/s: 617 sequences per card at a 162 ms TPOT and a 248 ms TTFT against the log's 161 and 252,
    where the pure c x b step kept 308 at 81 ms and 138 ms). A share of 1 is the weight read paid in full
    beside the batch's work; the fit puts it near 1.9 (docs/accuracy.md, issue 46).
    A per-layer floor was tried first and dropped: it gave an 8B model a third of a 70B model's floor
    (TPOT 2-3.5x over MLPerf's llama3.1-8b logs) and pushed a capped B200 run past its capacity."""
    if floor_s <= 0:
        return sv
    tpot = sv.tpot + floor_s
    return replace(sv, tpot=tpot, step=sv.step + floor_s, tokens_per_s=sv.batch / tpot)


def capacity_scale(full: Serving, b_max: int, output: int, capacity_per_replica: float | None, floor_s: float) -> float:
    """k, the factor on the speed model's step times of one replica: 1 at its own capacity; given a measured
    one (requests/s per replica), the k whose step at the largest batch, the fixed floor added, gives that
    capacity (the speed model's error at this GPU and model is the throughput class's to report; left
    unscaled, a batch the model's slower curve needs could not coexist with the measured utilisation)."""
    if not capacity_per_replica:
        return 1.0
    target_tpot = b_max / (capacity_per_replica * output)
    return max(target_tpot - floor_s, 0.05 * target_tpot) / full.tpot


def _in_flight(lam: float, in_engine_s, b_max: int) -> int:
    """The least batch in flight b (1..b_max) that holds the requests arriving at `lam` per second for
    their time in the engine at that batch, in_engine_s(b) (Little's law: lam x time <= b); a bisection,
    as the time grows with the batch. Apart from serving_at_rate: it is the search, not the model."""
    lo, hi = 1, b_max
    while lo < hi:
        mid = (lo + hi) // 2
        if lam * in_engine_s(mid) <= mid:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _first_token_words(cal: Calibration, sv: Serving, output: int, held: float | None, prompts: float) -> str:
    """How Load.how words the time to a request's first token at the batch `sv`: the fitted decode steps,
    the prompt's own prefill when that is longer, or (an engine that prefills apart) half a step and a
    prefill-only step over `prompts` waiting prompts, after `held` seconds in a harness's batch (None: no
    harness). Apart from serving_at_rate, whose TTFT it only describes."""
    steps = cal.first_token_steps
    if cal.prefill_in_step and sv.prefill > steps * sv.tpot:
        return (f"the prompt's own prefill, {sv.prefill * 1e3:,.1f} ms (longer than the {steps:g} decode steps of "
                f"{sv.tpot * 1e3:,.1f} ms in which a short prompt's first token comes: its chunks run over more steps)")
    if cal.prefill_in_step:
        return (f"{steps:g} decode steps of that batch ({sv.tpot * 1e3:,.1f} ms each, its prompts' prefill included: the "
                f"wait for the step boundary and the step that runs the prompt and returns the first token, fitted on "
                f"MLPerf Server logs)")
    return ((f"{held * 1e3:,.0f} ms in the harness's batch + " if held is not None else "")
            + f"half a decode step ({sv.step * 1e3:,.1f} ms) + a prefill-only step over {prompts:,.1f} prompts "
            f"({group_prefill_s(sv, output, prompts) * 1e3:,.1f} ms: the engine prefills waiting prompts apart "
            f"from the decodes)")


def serving_at_rate(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, requests_per_s: float,
                    cal: Calibration | None = None, capacity_requests_per_s: float | None = None,
                    harness: tuple[float, int] | None = None) -> Load:
    """TTFT of the layout `lay` when requests arrive at `requests_per_s` (Poisson, spread evenly over its
    DP replicas). A replica's capacity is its throughput at the largest batch it holds; the batch in
    flight is the least that holds rate x (TTFT + output x TPOT) sequences (Little's law), and a request
    waits for a slot as an M/D/c queue whose servers are the slots, each held for that time. Given
    `capacity_requests_per_s` (over all replicas, measured: MLPerf's Offline run), the replica's step
    times are scaled so that its capacity is that figure, so the utilisation, the batch in flight and
    its step come from one capacity. `harness`: (window seconds, most requests) of a front end that
    batches requests before the engine (harness_group)."""
    cal = cal or default_calibration()
    dp = lay.dp
    rep = kv_replication(led, lay)
    prompt, output = w.prompt_tokens, w.output_tokens
    steps = cal.first_token_steps
    own = replica_times(w, led, gpu, cal, rate, lay, rep)[0]     # as the plan's own serving is timed
    # the slots: the sequences whose KV fits at once; an engine that takes KV blocks as a sequence grows
    # holds a stream of them at their mean length, prompt + output / 2 (catalog/engines.yaml kv_allocation)
    held_output = (output + 1) // 2 if cal.kv_on_demand else output
    b_max, _ = max_batch(w, led, gpu, cal, lay, prompt, held_output, rep)
    lam = requests_per_s / dp
    floor = cal.rate_read_share * own(1).step_mem        # the step's fixed part at a rate (with_floor)
    k = capacity_scale(own(b_max), b_max, output, capacity_requests_per_s / dp if capacity_requests_per_s else None, floor)

    def at(b: int) -> Serving:
        return with_floor(scaled(own(b), k) if k != 1.0 else own(b), floor)

    if harness:      # the group goes to one replica at a time: each gets a group every dp windows
        group, held = harness_group(requests_per_s, *harness)
    else:
        group, held = None, 0.0

    def prompts_of(sv: Serving) -> float:
        return group if group is not None else 1.0 + lam * sv.step

    # multi-step scheduling: a new request waits (n - 1) / 2 steps on average for the next scheduling pass
    multi = (cal.scheduler_steps - 1) / 2

    def first_token(sv: Serving) -> float:
        if cal.prefill_in_step:
            # no sooner than the prompt's own prefill: a long prompt is chunked over more steps than the
            # fitted few, and runs no faster than alone (review 13: a 30k-token prompt's first token in
            # 136 ms against its 3,140 ms prefill)
            return cal.request_ms * 1e-3 + max(steps * sv.tpot, sv.prefill) + multi * sv.tpot
        # the prefill-only step over the prompts waiting at the boundary of the running decode step
        return cal.request_ms * 1e-3 + held + sv.step / 2 + multi * sv.step + group_prefill_s(sv, output, prompts_of(sv))

    def in_engine(sv: Serving) -> float:
        return first_token(sv) + output * sv.tpot

    lo = _in_flight(lam, lambda b: in_engine(at(b)), b_max)
    sv = at(lo)
    # what a replica sustains: its throughput at the largest batch, or fewer when the slots, each held
    # for a request's whole time in the engine, turn over more slowly than that
    full = at(b_max)
    mu = min(full.tokens_per_s / output, b_max / in_engine(full))
    rho = lam / mu if mu > 0 else math.inf
    saturated = rho >= 1
    wait = math.inf if saturated else slot_wait_s(lam, in_engine(sv), b_max)
    saturated = saturated or math.isinf(wait)
    ttft = first_token(sv) + wait
    first = _first_token_words(cal, sv, output, held if harness else None, prompts_of(sv))
    basis = (f"the measured {capacity_requests_per_s / dp:,.2f}, the speed model's times x {k:.2f}" if capacity_requests_per_s
             else f"its throughput at batch {b_max:,} / {output:,} output tokens")
    if floor > 0:
        basis += f"; each step {floor * 1e3:,.1f} ms of launch and scheduling beside its batch's work"
    if multi:
        first += f" + {multi:g} decode steps to the next scheduling pass (one every {cal.scheduler_steps} steps)"
    slots_how = f" (KV taken as each grows: {prompt + held_output:,} tokens held on average)" if cal.kv_on_demand else ""
    how = (f"{requests_per_s:g} requests/s over {dp} replica(s): utilisation {rho:.2f} of {mu:,.2f} requests/s per replica "
           f"({basis}); {lo:,} sequences in flight (Little's law); TTFT = {cal.request_ms:g} ms request handling + {first} + "
           + (f"{wait * 1e3:,.1f} ms for one of {b_max:,} sequence slots{slots_how} (M/D/c, each held {in_engine(sv):,.1f} s)" if not saturated
              else f"an unbounded wait for one of {b_max:,} sequence slots (the rate is past the capacity)"))
    mean_ms = math.inf if saturated else ttft * 1e3
    return Load(lam, mu, rho, lo, b_max, mean_ms, wait * 1e3, sv.prefill * 1e3, sv.tpot * 1e3, saturated, how,
                mean_ms * cal.ttft_p99_factor, sv.tpot * 1e3 * cal.tpot_p99_factor)


def speed_at_rate(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration, sp: Speed,
                  explain: bool) -> tuple[Speed, Load]:
    """The plan's speed at the workload's arrival rate (queueing): its time to first token, and the step,
    speed per user and tokens served of the batch the rate keeps in flight, in place of the closed-loop
    figures of `concurrency` users; a plan past its capacity has no TTFT (no steady state)."""
    load = serving_at_rate(w, led, gpu, lay, rate, w.requests_per_s, cal)
    ttft = None if load.saturated else load.ttft_ms
    total = load.capacity_requests_per_s * lay.dp
    at_rate = {}
    if not load.saturated:
        # the batch the rate keeps in flight sets the step, the speed each user sees and the tokens served
        # (the rate's output, all of it below capacity), not the closed loop of `concurrency` users
        served = w.requests_per_s * w.output_tokens
        at_rate = dict(concurrency=load.in_flight * lay.dp, tpot_ms=load.tpot_ms, decode_ms_per_token=load.tpot_ms,
                       tokens_per_s_per_user=1e3 / load.tpot_ms, tokens_per_s=served, tokens_per_s_per_gpu=served / lay.count,
                       hours_per_million_tokens=1e6 / (served * 3600))
    elif total > 0:
        # past the capacity the plan serves what it can: its tokens, and so its cost per token, are the
        # capacity's (review 12: priced at one sequence, $337.58 per million output tokens for 16 x B200
        # serving 66.6 of 100 requests/s); its miss is the capacity (objective.shortfall)
        served = total * w.output_tokens
        at_rate = dict(tokens_per_s=served, tokens_per_s_per_gpu=served / lay.count, hours_per_million_tokens=1e6 / (served * 3600))
    if not explain:
        return replace(sp, ttft_ms=ttft, capacity_requests_per_s=total, **at_rate), load
    text = (f"at {w.requests_per_s:g} requests/s (requests_per_s): " +
            (f"capacity {total:,.2f} requests/s < {w.requests_per_s:g} requested: no steady state" if load.saturated
             else f"{load.ttft_ms:,.0f} ms mean, about {load.ttft_p99_ms:,.0f} ms at the 99th percentile (x {cal.ttft_p99_factor:.2f}, "
                  f"fitted on MLPerf Server logs' p99)") + f"; {load.formula}")
    terms = dict(sp.speed_explained)
    if at_rate and not load.saturated and not lay.pools:
        # the step's terms at the batch the rate keeps in flight, the one whose TPOT is shown (review 13: the
        # terms of the 32 sequences of `concurrency` beside a 42.4 ms TPOT of 107); the TTFT's stay
        at_batch = inference_speed(replace(w, concurrency=load.in_flight * lay.dp, concurrency_max=False), led, gpu, lay, rate, cal, True)
        terms.update({k: v for k, v in at_batch.speed_explained.items() if k != "ttft_ms"})
    explained = {**terms, "ttft_at_rate_ms": {
        "value": ttft, "factor": {"first_token_steps": cal.first_token_steps, "utilisation": round(load.utilisation, 4),
                                  "p99_ms": None if load.saturated else round(load.ttft_p99_ms, 1),
                                  "capacity_requests_per_s": round(total, 4), "in_flight_per_replica": load.in_flight},
        "source": "catalog/efficiency.yaml (first_token_steps fitted by bench/fit.py on MLPerf Server logs)", "formula": text}}
    why = {**sp.why, "ttft_ms": text}
    if at_rate and not load.saturated:
        why["tpot_ms"] = (f"the step of the {load.in_flight:,} sequences per replica that {w.requests_per_s:g} requests/s keep in flight "
                          f"(Little's law, over {lay.dp} replica(s)): {load.tpot_ms:,.1f} ms")
        why["tokens_per_s"] = (f"{w.requests_per_s:g} requests/s x {w.output_tokens:,} output tokens = {at_rate['tokens_per_s']:,.0f} "
                               f"tokens/s served (the rate's, below the capacity of {total:,.2f} requests/s)")
    elif at_rate:
        why["tokens_per_s"] = (f"the capacity, {total:,.2f} requests/s x {w.output_tokens:,} output tokens = {at_rate['tokens_per_s']:,.0f} tokens/s "
                               f"served of the {w.requests_per_s:g} requests/s asked")
    return replace(sp, ttft_ms=ttft, capacity_requests_per_s=total, speed_explained=explained, why=why, **at_rate), load

