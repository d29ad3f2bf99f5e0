"""The chosen plan's `why` in words (numbers.planner keeps the plan, this says it): its memory split,
layout, ZeRO stage, checkpointing and idle GPUs, and for disaggregated pools each pool's form."""
from __future__ import annotations

from advisor.inputs.catalog import GPU
from advisor.inputs.workload import Workload
from advisor.numbers import comm, layouts, objective
from advisor.inputs.parallel import notation
from advisor.numbers.layouts import Layout
from advisor.numbers.ledger import HEADROOM_SOURCE, training_headroom_gb
from advisor.numbers.plan import Plan


def explain(w: Workload, p: Plan, lay: Layout, wv: Workload, unit: str, tried: int) -> dict:
    """The `why` of the chosen plan: its memory split, layout, ZeRO stage, checkpointing, idle GPUs."""
    if lay.pools:
        return _explain_pools(w, p, lay, unit, tried)
    why = {}
    why["per_card_gb"] = (f"ledger split over TP {lay.tp} x PP {lay.pp}" + (f" with KV heads replicated x{lay.rep:g}" if lay.rep > 1 else "")
                          + (f", the experts' weights, gradients and optimizer states over PP {lay.pp} x EP {lay.ep} (whole experts per rank)"
                             if w.training and lay.ep > 1 else "")
                          + (f", non-expert weights on each of {lay.attention_dp} attention ranks" if lay.attention_dp > 1 else "")
                          + (f", sequences over DP {lay.dp}" if lay.dp > 1 and not w.training else "")
                          + (f", ZeRO-{lay.zero_stage} shards over DP {lay.dp}" if w.training and lay.zero_stage and lay.dp > 1 else "")
                          + (", activations checkpointed" if w.training and wv.activation_checkpointing else ""))
    if w.training:
        why["per_card_gb"] += f"; at least {training_headroom_gb(p.gpu.memory_gb):.1f} GB kept free per card: {HEADROOM_SOURCE}"
    why["layout"] = (("the layout given in the workload" if w.layout_given else f"{objective.describe(w, unit)} of {tried} layout{'s' if tried != 1 else ''} tried")
                     + _group_words(p.gpu, lay) + ((f", PP {lay.pp} across nodes" if lay.nodes(p.gpu) > 1 else f", PP {lay.pp} inside the rack's NVLink domain") if lay.pp > 1 else "")
                     + (f", experts over EP {lay.ep} (dispatch and combine all-to-all)" if lay.ep > 1 else "")
                     + (f", attention as {lay.attention_dp} data-parallel ranks of TP {lay.attention_tp} (the KV cache split, not copied)"
                        if lay.attention_dp > 1 else "")
                     + (f", DP {lay.dp} ({lay.min_dp} for memory" + (f", {lay.dp - lay.min_dp} more" if lay.dp > lay.min_dp else "") + ")"
                        if lay.dp > 1 else ""))
    if w.method == "qlora":
        why["layout"] += ("; QLoRA: " + ("one card" if lay.count == 1 else
                                         f"FSDP-QLoRA over {lay.dp} data-parallel ranks" if lay.zero_stage == 3 else
                                         f"{lay.dp} data-parallel replicas")
                          + ", never tensor or pipeline parallelism (bitsandbytes' 4-bit layers have neither; QLORA_FSDP)")
    if w.training and "zero_stage" in w.defaults and lay.zero_stage is not None:
        why["zero_stage"] = (f"ZeRO-{lay.zero_stage} chosen by the planner: the lowest stage that fits this layout with the headroom kept free"
                             + (" (3 = FSDP full sharding)" if lay.zero_stage == 3 else ""))
    if w.training and "activation_checkpointing" in w.defaults:
        why["activation_checkpointing"] = ("on, chosen by the planner: it saves most activation memory for ~30% more compute (C06)"
                                           if wv.activation_checkpointing else "off: the plan fits, with the headroom kept free, without recomputing activations")
    idle = (p.price or {}).get("idle_gpus") or 0
    if idle:
        why["idle_gpus"] = (f"{idle} rented GPU(s) idle: a replica of TP {lay.tp} x PP {lay.pp} = {lay.tp * lay.pp} cards does not fill "
                            f"the {p.price['gpus_per_instance']}-GPU instances, "
                            + ("and the workload fixes the layout (K13)" if w.layout_given else "and every smaller or fuller plan costs more (K13)"))
    if p.misses:
        why["misses"] = f"no layout meets the target: the best misses it ({p.misses})"
    return why


def _group_words(gpu: GPU, lay: Layout) -> str:
    """The model-parallel group in the layout's `why`: a tensor split inside a node, or a DEP group
    (attention DP = EP = the group, no tensor split off a card) inside a rack's NVLink domain or over nodes."""
    if lay.tp <= layouts.TENSOR_SPLIT_MAX:
        return f": TP {lay.tp} inside a node (K14, C12)"
    where = ("inside the rack's NVLink domain" if lay.tp <= comm.nvlink_domain(gpu)
             else f"over {-(-lay.tp // gpu.gpus_per_node)} nodes")
    return f": a DEP group of {lay.tp} cards {where} (each card its own attention rank, no tensor split off a card)"


def _explain_pools(w: Workload, p: Plan, lay: Layout, unit: str, tried: int) -> dict:
    pf, dc = lay.pools.prefill, lay.pools.decode
    how = ("the layout given in the workload" if w.layout_given else
           f"{objective.describe(w, unit)} of {tried} layouts tried, disaggregated ones among them "
           f"(prompts of {w.prompt_tokens:,} tokens" + (f", TPOT {w.tpot_ms:g} ms" if w.tpot_ms else "") + ")")
    why = {"per_card_gb": p.why.get("per_card_gb", ""),
           "layout": (f"{how}: disaggregated prefill and decode, {notation(lay)}; "
                      f"the prefill pool sized for the prompts arriving, the decode pool for every sequence's KV cache "
                      f"({dc.min_dp} replica(s) for memory) at the TPOT; each prompt's KV cache sent between them "
                      "(DistServe, Splitwise, Mooncake; K14 for the TP groups)")}
    idle = (p.price or {}).get("idle_gpus") or 0
    if idle:
        why["idle_gpus"] = (f"{idle} rented GPU(s) idle: the prefill and decode pools take {lay.count} cards, which "
                            f"does not fill the {p.price['gpus_per_instance']}-GPU instances, and every fuller plan costs more (K13)")
    if p.misses:
        why["misses"] = f"no layout meets the target: the best misses it ({p.misses})"
    return why
