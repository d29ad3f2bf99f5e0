"""How fast a disaggregated plan runs: the prefill pool (one prompt's prefill, its queue at the
users' arrival rate), the KV transfer between the pools, and the decode pool's step; TTFT from the
first two and the transfer, TPOT from the last (numbers.speed times each pool with serving_times).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.inputs.catalog import GPU
from advisor.inputs.workload import Workload
from advisor.numbers import comm
from advisor.numbers.calibration import Calibration
from advisor.numbers.ledger import Ledger
from advisor.numbers.speed import Serving, Speed, replica_times
from advisor.numbers.terms import Term, _gb

# the queue's utilisation is capped (as in serving_times) so that the M/D/c wait stays finite; an
# undersized prefill pool is bounded by the closed loop instead (pools_speed)
QUEUE_CAP = 0.95


@dataclass(frozen=True)
class KVTransfer:
    """The KV cache of one prompt, sent from the prefill pool to the decode pool."""

    bytes_per_request: float
    seconds: float
    how: str


def kv_transfer(led: Ledger, gpu: GPU, cal: Calibration, prefill, decode, prompt: int) -> KVTransfer:
    """Bytes per request (prompt tokens x KV bytes per token) and the seconds to send them: over the
    scale-up link when both pools fit in one NVLink domain, else over the network, each of the prefill
    replica's cards sending its own KV heads (a copied head is sent once), plus one latency floor.
    Added to TTFT whole: engines overlap it with the prefill layer by layer (Mooncake, Dynamo NIXL),
    so this is the bound, not the typical figure."""
    per_req = led.kv.bytes_per_sequence(prompt) if led.kv else 0.0
    if prefill.count + decode.count <= comm.nvlink_domain(gpu):
        link, where = cal.link_bytes_s(gpu)
    else:
        link, where = cal.scale_out_gb_s * 1e9, f"{cal.scale_out_gb_s:g} GB/s per GPU over the network (the pools span more than one {comm.nvlink_domain(gpu)}-GPU NVLink domain)"
    senders = max(1.0, prefill.attention_tp / prefill.rep) * prefill.pp
    secs = cal.allreduce_us * 1e-6 + per_req / (senders * link)
    return KVTransfer(per_req, secs, f"{_gb(per_req)} per request ({prompt:,} prompt tokens x "
                                     f"{per_req / prompt / 1e3:,.1f} kB KV per token) / ({senders:g} sending cards x {where}) "
                                     f"+ {cal.allreduce_us:g} us")


def erlang_c(servers: int, load: float) -> float:
    """Probability that an arrival waits in an M/M/c queue of `servers` at offered load `load` (= arrival
    rate x service time, below `servers`), by the Erlang B recursion (stable for thousands of servers)."""
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
    rho = load / servers
    return b / (1 - rho + rho * b)


def md_c_wait(arrivals_per_s: float, service_s: float, servers: int) -> float:
    """Mean wait in queue of `servers` prefill servers with fixed service time (M/D/c), by the
    Cosmetatos/Allen-Cunneen approximation: half the M/M/c wait (a deterministic service has no
    variance: (1 + 0) / 2 of the exponential's queue)."""
    load = arrivals_per_s * service_s
    if load <= 0:
        return 0.0
    mmc = erlang_c(servers, load) * service_s / (servers - load)
    return mmc / 2


def prefill_servers(prefill) -> int:
    """Prompts one prefill replica works on at once: one per attention rank per pipeline stage."""
    return prefill.pp * prefill.attention_dp


def arrival_rate(concurrency: int, ttft_s: float, output: int, tpot_s: float) -> float:
    """Requests per second that `concurrency` users send when each starts a new request as soon as the
    last one finished (a closed loop): users / (TTFT + output tokens x TPOT)."""
    return concurrency / (ttft_s + output * tpot_s)


def prefill_replicas_needed(w: Workload, led: Ledger, gpu: GPU, rate: Term, cal: Calibration, prefill, decode,
                            utilisation: float) -> int:
    """The fewest prefill replicas that keep the pool at most `utilisation` busy at the arrival rate
    the decode pool's speed implies (the prefill pool sized for its own work)."""
    pf = _pool_times(led, gpu, cal, rate, prefill, 1, w)
    dc = _pool_times(led, gpu, cal, rate, decode, math.ceil(w.concurrency / decode.dp), w)
    lam = arrival_rate(w.concurrency, cal.request_ms * 1e-3 + pf.prefill, w.output_tokens, dc.step)
    return max(1, math.ceil(lam * pf.prefill / (prefill_servers(prefill) * utilisation) - 1e-9))


def _pool_times(led: Ledger, gpu: GPU, cal: Calibration, rate: Term, pool, batch: int, w: Workload) -> Serving:
    return replica_times(w, led, gpu, cal, rate, pool, pool.rep)[0](batch)


def pools_speed(w: Workload, led: Ledger, gpu: GPU, lay, rate: Term, cal: Calibration) -> Speed:
    """A disaggregated plan's speed: TPOT from the decode pool's step (its batches hold no prefill),
    TTFT from the prefill pool (request handling, the M/D/c wait at the arrival rate, the prefill of
    one prompt) plus the KV transfer; throughput from the decode pool."""
    pfl, dcl = lay.pools.prefill, lay.pools.decode
    b = math.ceil(w.concurrency / dcl.dp)
    dc = _pool_times(led, gpu, cal, rate, dcl, b, w)
    pf = _pool_times(led, gpu, cal, rate, pfl, 1, w)
    kv = kv_transfer(led, gpu, cal, pfl, dcl, w.prompt_tokens)
    tpot = dc.step
    lam = arrival_rate(w.concurrency, cal.request_ms * 1e-3 + pf.prefill + kv.seconds, w.output_tokens, tpot)
    servers = pfl.dp * prefill_servers(pfl)
    rho_raw = lam * pf.prefill / servers
    wait = md_c_wait(min(QUEUE_CAP, rho_raw) * servers / pf.prefill, pf.prefill, servers)
    # the users form a closed loop: the pool finishes at most `servers / prefill` prompts a second, so
    # a user's request cycle is at least users / that rate (the operational-law bound); an undersized
    # prefill pool makes users wait and caps the output rate, whatever the M/D/1 wait says
    mu = servers / pf.prefill
    cycle_floor = w.concurrency / mu
    wait = max(wait, cycle_floor - w.output_tokens * tpot - (cal.request_ms * 1e-3 + pf.prefill + kv.seconds))
    ttft = cal.request_ms * 1e-3 + wait + pf.prefill + kv.seconds
    tokens_per_s = min(w.concurrency / tpot, mu * w.output_tokens)
    src = "catalog/efficiency.yaml (fitted by bench/fit.py)"
    sat = (f"; the pool is saturated (utilisation {rho_raw:.2f} >= 1): it finishes {mu:,.2f} prompts/s, so each user's "
           f"request cycle is at least {w.concurrency:,} / {mu:,.2f} = {cycle_floor:,.1f} s and output is capped at "
           f"{mu * w.output_tokens:,.0f} tokens/s" if rho_raw >= 1 else "")
    explained = {
        "decode_pool_step_ms": {"value": dc.step * 1e3, "factor": {"hbm_share": cal.bw_share, "compute_share": cal.compute_share},
                                "source": src,
                                "formula": f"decode pool: {dcl.dp} replica(s) of TP {dcl.tp} x PP {dcl.pp} at {b} sequences each: "
                                           f"the dense GEMMs and the attention each at its own roofline (reads {dc.step_mem * 1e3:,.2f} ms, "
                                           f"matmuls {dc.step_cmp * 1e3:,.2f} ms in all) "
                                           f"+ collectives {dc.step_comm * 1e3:,.2f} ms + step overhead; no prefill in its batches"},
        "prefill_pool_ms": {"value": pf.prefill * 1e3, "factor": {"compute_share": cal.compute_share}, "source": src,
                            "formula": f"prefill pool: one {w.prompt_tokens:,}-token prompt on TP {pfl.tp} x PP {pfl.pp} "
                                       f"(FLOPs incl. attention / rate, K04)"},
        "prefill_queue_ms": {"value": wait * 1e3, "factor": {"utilisation": rho_raw}, "source": "formula",
                             "formula": f"M/D/c wait (half the M/M/c Erlang-C wait, c = {servers} prompts at once, rho capped at {QUEUE_CAP:g}), rho = {lam:,.2f} requests/s x "
                                        f"{pf.prefill * 1e3:,.0f} ms / ({pfl.dp} replicas x {prefill_servers(pfl)} prompts at once) "
                                        f"= {rho_raw:.2f}; requests/s = {w.concurrency:,} users / (TTFT + {w.output_tokens:,} x TPOT){sat}"},
        "kv_transfer_ms": {"value": kv.seconds * 1e3, "factor": {"bytes_per_request": kv.bytes_per_request}, "source": "formula",
                           "formula": kv.how},
        "ttft_ms": {"value": ttft * 1e3, "factor": {"request_overhead_ms": cal.request_ms}, "source": src,
                    "formula": f"{cal.request_ms:g} ms request handling + {wait * 1e3:,.1f} ms queue + prefill {pf.prefill * 1e3:,.1f} ms "
                               f"+ KV transfer {kv.seconds * 1e3:,.1f} ms"},
    }
    why = {"prefill_ms": (f"{w.prompt_tokens:,} prompt tokens on the prefill pool's TP {pfl.tp} x PP {pfl.pp} "
                          f"(x {rate.formula} x {cal.compute_share:g} fitted serving share) (K04, K07)"),
           "decode_ms_per_token": (f"the decode pool's step at {b} sequences per replica (TP {dcl.tp} x PP {dcl.pp}), "
                                   "with no prefill interference: prompts are prefilled on the other pool (K06, K01)"),
           "ttft_ms": explained["ttft_ms"]["formula"],
           "kv_transfer_ms": f"{kv.seconds * 1e3:,.1f} ms: {kv.how}, added to the time to first token"}
    return Speed(concurrency=w.concurrency, prefill_ms=pf.prefill * 1e3, ttft_ms=ttft * 1e3, tpot_ms=tpot * 1e3,
                 decode_ms_per_token=tpot * 1e3, tokens_per_s=tokens_per_s, tokens_per_s_per_user=1 / tpot,
                 tokens_per_s_per_gpu=tokens_per_s / lay.count, hours_per_million_tokens=1e6 / (tokens_per_s * 3600),
                 speed_explained=explained, why=why)
