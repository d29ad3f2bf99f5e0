"""What each card holds in a layout: the copies of a sequence's KV cache an attention rank keeps, the
part of a replica that does not grow with its sequences, and `Memory` (what a chosen layout leaves:
its KV headroom, the most sequences and the longest context it serves). numbers.layouts sizes the
layouts it enumerates with these; the planner asks `memory` of the one it keeps."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from advisor.inputs.catalog import GPU
from advisor.inputs.parallel import Layout
from advisor.inputs.workload import Workload
from advisor.numbers.ledger import Ledger
from advisor.numbers.terms import GB, _gb

# a prefill replica holds the KV of the prompts it works on: per attention rank one being computed and
# one being sent to the decode pool (the transfer overlaps the next prompt's prefill); a choice, stated
PREFILL_PROMPTS_IN_FLIGHT = 2



def kv_replication(led: Ledger, lay: Layout) -> float:
    """How many copies of each sequence's KV cache an attention rank keeps: its tp / attention_dp
    cards split the KV heads, and hold them whole when they outnumber them (MLA has one latent head,
    so tensor parallelism copies it onto every card; attention DP does not, K14)."""
    kv_heads = led.kv.kv_heads if led.kv else None
    return max(1.0, lay.tp / lay.attention_dp / kv_heads) if kv_heads else 1.0


def fixed_bytes(led: Ledger, lay: Layout) -> float:
    """Bytes per card of a replica's part that does not grow with its sequences: weights (the
    non-expert ones once per attention rank) and overhead over TP x PP, activations per rank."""
    adp = lay.attention_dp
    return ((led.bytes("weights_gb") + led.bytes("overhead_gb")) * led.weight_copies(adp) / (lay.tp * lay.pp)
            + led.bytes("activations_gb") * adp / lay.tp)


@dataclass(frozen=True)
class Memory:
    """What each card holds in a layout and what is left: for the KV cache of a replica (K05, W06),
    the most sequences and the longest context the plan's memory serves."""

    per_card_gb: float
    headroom_gb: float
    kv_headroom_gb: float | None = None
    max_concurrency: float | None = None
    max_context_tokens: float | None = None
    # with the KV sized by the stated requests (Workload.kv_tokens): whether one request of the full
    # context_tokens still fits a replica beside its other sequences (None: sized at the context)
    long_request_fits: bool | None = None
    why: dict = field(default_factory=dict)


def memory(w: Workload, led: Ledger, gpu: GPU, lay: Layout, sequences: int | None = None) -> Memory:
    """The memory figures of `lay`; serving: at `sequences` at once (the concurrency the speed model
    resolved)."""
    per_card = lay.per_card_bytes / GB
    if w.training:
        return Memory(per_card, gpu.memory_gb - per_card)
    if lay.pools:
        # the decode pool holds what the KV headroom and the most sequences are about; per card, the
        # fuller of the two pools
        pf = lay.pools.prefill
        m = memory(w, led, gpu, lay.pools.decode, sequences)
        why = dict(m.why)
        why["per_card_gb"] = (f"the fuller pool: prefill {_gb(pf.per_card_bytes)} per card (weights + the KV of "
                              f"{PREFILL_PROMPTS_IN_FLIGHT} x {pf.attention_dp} prompts of {w.prompt_tokens:,} tokens in prefill or in transfer), "
                              f"decode {_gb(lay.pools.decode.per_card_bytes)} (weights + the KV of its share of all {w.concurrency:,} decoding sequences)")
        return replace(m, per_card_gb=per_card, headroom_gb=gpu.memory_gb - per_card, why=why)
    s = led.sized
    replica = lay.tp * lay.pp * gpu.memory_gb * GB
    held = s.weights_bytes * led.weight_copies(lay.attention_dp)
    copies = f" ({led.weight_copies(lay.attention_dp):.2f} copies: non-expert weights on each of {lay.attention_dp} attention ranks)" if lay.attention_dp > 1 else ""
    why = {"kv_headroom_gb": f"TP {lay.tp} x PP {lay.pp} x {gpu.memory_gb:g} GB - weights {_gb(held)}{copies} (K05, W06)"}
    max_conc = max_ctx = None
    if led.kv and not led.kv_fallback:
        rep = kv_replication(led, lay)
        fixed = ((led.bytes("weights_gb") + led.bytes("overhead_gb")) * led.weight_copies(lay.attention_dp)
                 + led.bytes("activations_gb") * lay.pp * lay.attention_dp)
        free = lay.count * gpu.memory_gb * GB - fixed * lay.dp
        per_seq = led.kv.bytes_per_sequence(w.kv_tokens) * rep
        max_conc = max(0.0, math.floor(free / per_seq)) if per_seq else None
        longest = led.kv.max_tokens(free / max(sequences or 0, 1) / rep)
        limit = w.model.num("max_context")
        max_ctx = min(longest, limit) if limit else (None if math.isinf(longest) else math.floor(longest))
        if w.kv_tokens < w.context_tokens:
            # the replica's room less its other sequences at their own length must hold one at the context
            others = max(math.ceil((sequences or w.concurrency) / lay.dp) - 1, 0) * per_seq
            long_fits = led.kv.bytes_per_sequence(w.context_tokens) * rep <= free / lay.dp - others
            return Memory(per_card, gpu.memory_gb - per_card, (replica - held) / GB, max_conc, max_ctx, long_fits, why)
    return Memory(per_card, gpu.memory_gb - per_card, (replica - held) / GB, max_conc, max_ctx, None, why)
