"""Which layout: for one GPU, the layouts an expert would consider, each holding the ledger.

The planner enumerates what practitioners search (C12, K14): tensor parallelism inside a node only,
over 1, 2, 4, 8 cards that divide the KV heads (or replicate them); pipeline stages only across
nodes, each stage a whole node of tensor parallelism; data-parallel replicas for memory (KV cache,
ZeRO/FSDP shards), to fill the instances that are rented anyway, to meet a deadline or a service
level. For training it also tries ZeRO-0..3 (3 = FSDP full sharding) when the workload does not fix
`zero_stage`. It never prices or times a layout (numbers.cost and numbers.speed do) and never picks
one (numbers.planner does, by the workload's objective); `memory` gives what a chosen layout leaves.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field, replace

from advisor.base.kept import Kept, fingerprint
from advisor.inputs.catalog import GPU
from advisor.numbers import comm
from advisor.numbers.ledger import TRAINING_SAFETY, Ledger
from advisor.numbers.terms import GB, _gb
from advisor.inputs.workload import Workload

# the planner's ceiling when the workload sets no max_gpus: the largest clusters built (issue 21 asks
# for at least 100,000 GPUs) and the most `constraints.max_gpus` accepts (inputs.workload); when it
# binds, the plan says so (planner: `limits`)
MAX_GPUS = 100_000
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)
# the widest tensor split deployed: one HGX board's 8 GPUs (K14). On a rack-scale NVLink domain (NVL72:
# 72 GPUs per "node", the unit rented and bought) tensor parallelism stays at 8 too; the rest of the
# domain takes expert-parallel / attention-DP groups, pipeline stages and replicas
TENSOR_SPLIT_MAX = 8
# the widest MoE serving DEP group beyond a node's NVLink (a stated choice: SGLang serves DeepSeek-V3 on
# 2-12 H100 nodes with DP attention and EP over DeepEP, DeepSeek's own decode runs EP 144)
CROSS_NODE_DEP = 32
ZERO_STAGES = (0, 1, 2, 3)         # 3 = weights sharded too (FSDP FULL_SHARD)


INTERNAL = {"record": False}       # a field the planner needs but the decision record does not show


@dataclass(frozen=True)
class Layout:
    """One way to lay the job out on a GPU: TP x PP x DP cards and what each card holds.

    A new dimension is a field here (with its default meaning "not used"), the enumeration below that
    tries it, and the speed and memory terms that read it. `tp` is the model-parallel group of one
    pipeline stage (SGLang's `--tp`, TensorRT-LLM's `tp_size`); inside it the MoE layers put their
    experts on `ep` ranks (each expert split over tp / ep cards) and attention runs as `attention_dp`
    data-parallel ranks of tp / attention_dp cards, each with its own sequences and KV cache (SGLang
    `--enable-dp-attention --dp N`, TensorRT-LLM `enable_attention_dp`: "DEP8" is tp 8, ep 8,
    attention_dp 8). Training reads `ep` as Megatron-Core does: expert-parallel ranks drawn from the
    stage's TP x DP cards (ep divides tp x dp), each holding whole experts (numbers.layouts.expert_split)."""

    tp: int
    pp: int
    dp: int
    per_card_bytes: float = field(metadata=INTERNAL)
    rep: float = field(default=1.0, metadata=INTERNAL)      # KV heads replicated when TP exceeds them
    zero_stage: int | None = None  # training only
    min_dp: int = field(default=1, metadata=INTERNAL)       # replicas the memory needs (the rest: speed, filled instances)
    ep: int = 1                    # expert-parallel ranks of the MoE layers (inside the TP group)
    attention_dp: int = 1          # attention data-parallel ranks (inside the TP group; KV split, not copied)
    # disaggregated serving: the prefill and decode pools (this layout's own tp..attention_dp are the
    # decode pool's, which sets the time per output token); None: prefill and decode share replicas
    pools: Pools | None = field(default=None, metadata=INTERNAL)
    # training with pipeline stages: model chunks per card of Megatron's interleaved schedule (1: none;
    # None: the planner's choice once the micro-batches are known, trainspeed.schedule)
    interleave: int | None = field(default=1, metadata=INTERNAL)

    @property
    def attention_tp(self) -> int:
        """Cards one attention rank splits its heads over."""
        return self.tp // self.attention_dp

    def as_dict(self) -> dict:
        """The record's `layout`: every parallel dimension, by its workload name; a disaggregated
        layout as its two pools, each with its replica count (the workload's own form)."""
        if self.pools:
            return {"prefill": self.pools.prefill.pool_dict(), "decode": self.pools.decode.pool_dict()}
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep, "attention_dp": self.attention_dp}

    def pool_dict(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "ep": self.ep, "attention_dp": self.attention_dp, "replicas": self.dp}

    @property
    def count(self) -> int:
        if self.pools:
            return self.pools.prefill.count + self.pools.decode.count
        return self.tp * self.pp * self.dp

    @property
    def replica_cards(self) -> int:
        """Cards of one model replica (the group an instance must hold whole, K13): the larger pool's."""
        if self.pools:
            return max(self.pools.prefill.tp * self.pools.prefill.pp, self.pools.decode.tp * self.pools.decode.pp)
        return self.tp * self.pp

    def nodes(self, gpu: GPU) -> int:
        if self.pools and self.count > gpu.gpus_per_node:
            # each pool on nodes of its own: a node holds one kind of work (Splitwise, DistServe); pools that
            # fit one node together share it (Dynamo's single-node 2 x TP 2 prefill + TP 4 decode recipe,
            # DYNAMO_LLAMA33_70B), as their price (one instance) and KV transfer (over NVLink) take them
            return self.pools.prefill.nodes(gpu) + self.pools.decode.nodes(gpu)
        return math.ceil(self.count / gpu.gpus_per_node)


@dataclass(frozen=True)
class Pools:
    """A disaggregated serving layout (DistServe, Splitwise, Mooncake; SGLang and NVIDIA Dynamo's PD
    disaggregation): prompts are prefilled on one pool of replicas and their KV cache sent to another
    pool that decodes; each pool is a Layout whose `dp` is its replica count."""

    prefill: Layout
    decode: Layout


def _tp_options(gpu: GPU, kv_heads: int | None = None) -> list[int]:
    """TP degrees inside one node that split the KV heads evenly or replicate them whole (K14, C12);
    a whole node's TP stays available (padded heads) so that a model too big for one node can still
    take pipeline stages across nodes."""
    sizes = [t for t in TP_SIZES if t <= tensor_split_max(gpu)]
    even = [t for t in sizes if not kv_heads or kv_heads % t == 0 or t % kv_heads == 0]
    return even if sizes[-1] in even else even + [sizes[-1]]


def tensor_split_max(gpu: GPU) -> int:
    """The widest tensor split on this GPU: a node of it, at most TENSOR_SPLIT_MAX cards."""
    return min(gpu.gpus_per_node, TENSOR_SPLIT_MAX)


def rack_unit(gpu: GPU) -> int | None:
    """GPUs that are rented and bought only together, whatever a price source says: a rack-scale
    system's whole rack (NVL72: one 72-GPU "node", CoreWeave deploys full racks only), else None."""
    return gpu.gpus_per_node if gpu.gpus_per_node > TENSOR_SPLIT_MAX else None


def _pp_options(tp: int, widest: int, layers: int, fits) -> list[int]:
    """Pipeline stages only across nodes (K14; on an NVL72 rack, across its NVLink domain): PP 1, or
    when TP is the widest split (`widest`: a node, or 8 on a rack), the fewest such stages that hold
    the model (`fits(pp)`)."""
    if fits(1):
        return [1]
    if tp != widest:
        return []
    for pp in range(2, layers + 1):
        if fits(pp):
            return [pp]
    return []


def kv_replication(led: Ledger, tp: int, attention_dp: int = 1) -> float:
    """How many copies of each sequence's KV cache an attention rank keeps: its tp / attention_dp
    cards split the KV heads, and hold them whole when they outnumber them (MLA has one latent head,
    so tensor parallelism copies it onto every card; attention DP does not, K14)."""
    kv_heads = led.kv.kv_heads if led.kv else None
    return max(1.0, tp / attention_dp / kv_heads) if kv_heads else 1.0


def fixed_bytes(led: Ledger, tp: int, pp: int, attention_dp: int = 1) -> float:
    """Bytes per card of a replica's part that does not grow with its sequences: weights (the
    non-expert ones once per attention rank) and overhead over TP x PP, activations per rank."""
    return ((led.bytes("weights_gb") + led.bytes("overhead_gb")) * led.weight_copies(attention_dp) / (tp * pp)
            + led.bytes("activations_gb") * attention_dp / tp)


#: per ledger (alive as long as it is): the replica split of each card size, concurrency and split
_REPLICAS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LAST_REPLICAS: list = [None, None]      # (ledger, its entry of _REPLICAS): a weak lookup makes a weakref each time


def inference_replicas(w: Workload, led: Ledger, gpu: GPU, tp: int, pp: int, attention_dp: int = 1):
    """(per-card bytes of a replica's fixed part, KV bytes per card, fewest replicas, KV replication)
    for TP x PP (with `attention_dp` attention ranks in the TP group), or None when the fixed part
    alone does not fit. Kept per ledger by what else it reads (the card's memory, the concurrency):
    the planner asks again for every pipeline depth it tries and every replica count of a layout."""
    if _LAST_REPLICAS[0] is led:      # the planner asks hundreds of times for one ledger in a row
        mine = _LAST_REPLICAS[1]
    else:
        mine = _REPLICAS.get(led)
        if mine is None:
            mine = _REPLICAS[led] = {}
        _LAST_REPLICAS[:] = [led, mine]
    key = (gpu.memory_gb, w.concurrency, tp, pp, attention_dp)
    if key not in mine:
        mine[key] = _inference_replicas(w, led, gpu, tp, pp, attention_dp)
    return mine[key]


def _inference_replicas(w: Workload, led: Ledger, gpu: GPU, tp: int, pp: int, attention_dp: int):
    mem = gpu.memory_gb * GB
    rep = kv_replication(led, tp, attention_dp)
    fixed = fixed_bytes(led, tp, pp, attention_dp)
    if fixed >= mem:
        return None
    kv_card = led.bytes("kv_cache_gb") * rep / (tp * pp)
    if led.kv_fallback:     # a fixed reservation, not per-sequence: it cannot be spread over replicas
        dp = 1 if fixed + kv_card <= mem else None
    else:
        dp = max(1, math.ceil(kv_card / (mem - fixed) - 1e-9)) if kv_card > 0 else 1
        dp = min(dp, w.concurrency) if fixed + kv_card / min(dp, w.concurrency) <= mem else None
    if dp is None:
        return None
    return fixed, kv_card, dp, rep


def moe_options(w: Workload, gpu: GPU, tp: int) -> list[tuple[int, int]]:
    """(ep, attention_dp) pairs practitioners serve a MoE model with on a TP group (SGLang, vLLM and
    TensorRT-LLM's layouts): plain TP, TP attention with expert parallelism ("TEP"), and data-parallel
    attention with expert parallelism ("DEP"); a dense model (or a single card) has only plain TP."""
    n = w.model.num("experts")
    k = w.model.num("experts_per_token")
    if tp == 1 or not (n and k and n > k) or n % tp:
        return [(1, 1)]
    return [(1, 1), (tp, 1), (tp, tp)]


#: per ledger (alive as long as it is): the layouts enumerated for each GPU shape (below)
_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _per_shape(kind: str, w: Workload, led: Ledger, gpu: GPU, max_gpus: int, extra, make) -> list[Layout]:
    """`make()` once per ledger and GPU shape: the enumerations read of a GPU only its memory, its node
    size and its NVLink domain (a Layout holds no GPU), and of the workload only its model and
    concurrency, so the catalog's GPUs of one shape (34 GPUs, 18 shapes) share their layouts."""
    mine = _LAYOUTS.get(led)
    if mine is None:
        mine = _LAYOUTS[led] = {}
    key = (kind, fingerprint(w.model), w.concurrency, gpu.memory_gb, gpu.gpus_per_node, comm.nvlink_domain(gpu), max_gpus, extra)
    hit = mine.get(key)
    if hit is None:
        hit = mine[key] = tuple(make())
    return list(hit)


def inference_layouts(w: Workload, led: Ledger, gpu: GPU, max_gpus: int) -> list[Layout]:
    """Every (TP, PP) that holds one replica, with the fewest data-parallel replicas its KV cache
    needs; for a MoE model also every expert-parallel and attention-DP form of each TP group inside a
    node, and DEP groups (attention DP = EP = the group) up to the NVLink domain or CROSS_NODE_DEP cards."""
    return _per_shape("inference", w, led, gpu, max_gpus, None, lambda: _inference_layouts(w, led, gpu, max_gpus))


def _inference_layouts(w: Workload, led: Ledger, gpu: GPU, max_gpus: int) -> list[Layout]:
    kv_heads = led.kv.kv_heads if led.kv else None
    layers = int(w.model.num("layers") or 64)
    out = []
    # a rack-scale NVLink domain (NVL72) holds DEP groups wider than a node: each card one attention
    # rank and 1/tp of the experts, so no tensor split leaves a card and the all-to-all stays on NVLink;
    # elsewhere up to CROSS_NODE_DEP cards over the network too (review 19, F1: DeepSeek-R1, 2,048 users)
    domain = comm.nvlink_domain(gpu)
    widest = tensor_split_max(gpu)
    wide = [t for t in TP_SIZES if widest < t <= max(domain, CROSS_NODE_DEP) and moe_options(w, gpu, t)[-1] == (t, t)]
    for t in wide:
        r = inference_replicas(w, led, gpu, t, 1, t)
        if r and t * r[2] <= max_gpus:
            fixed, kv_card, dp, rep = r
            out.append(Layout(t, 1, dp, fixed + kv_card / dp, rep, None, dp, t, t))
    for tp in _tp_options(gpu, kv_heads):
        for ep, adp in moe_options(w, gpu, tp):
            for pp in _pp_options(tp, widest, layers, lambda p: inference_replicas(w, led, gpu, tp, p, adp) is not None):
                fixed, kv_card, dp, rep = inference_replicas(w, led, gpu, tp, pp, adp)
                if tp * pp * dp <= max_gpus:
                    out.append(Layout(tp, pp, dp, fixed + kv_card / dp, rep, None, dp, ep, adp))
    return out


def with_replicas(w: Workload, led: Ledger, gpu: GPU, base: Layout, dp: int) -> Layout:
    """The same TP x PP (and EP, attention DP) with `dp` replicas (at least the base's): memory per
    card recomputed. Training with EP: `dp` is rounded up until the EP ranks divide TP x DP."""
    dp = max(dp, base.min_dp)
    if w.training:
        dp = ep_dp(base.tp, dp, base.ep)
        per_card = training_per_card(led, base.tp, base.pp, dp, base.zero_stage or 0, base.ep)
    else:
        fixed, kv_card, _, _ = inference_replicas(w, led, gpu, base.tp, base.pp, base.attention_dp)
        per_card = fixed + kv_card / min(dp, w.concurrency)
    return replace(base, dp=dp, per_card_bytes=per_card)


def ep_dp(tp: int, dp: int, ep: int) -> int:
    """The fewest data-parallel replicas, at least `dp`, whose TP x DP ranks the `ep` expert-parallel
    ranks divide (Megatron-Core draws the EP group from the data-parallel x tensor ranks)."""
    if ep <= 1:
        return dp
    step = ep // math.gcd(tp, ep)
    return math.ceil(dp / step) * step


def expert_split(tp: int, ep: int) -> int:
    """Cards one pipeline stage spreads each routed expert's states over: TP without expert
    parallelism; with it, the EP ranks, each holding whole experts (expert tensor parallelism 1, as
    NeMo's MoE recipes set it: expert_tensor_parallel_size 1)."""
    return tp if ep <= 1 else ep


def _training_split(led: Ledger, z: int):
    """(ZeRO-sharded bytes, unsharded dense bytes, unsharded expert bytes) of one replica's states."""
    W, G, O, A = (led.bytes(k) for k in ("weights_gb", "gradients_gb", "optimizer_gb", "activations_gb"))
    eW, eG, eO = led.training_expert_bytes()
    keep_w, keep_g, keep_o = z < 3, z < 2, z < 1
    sharded = (W if not keep_w else 0) + (G if not keep_g else 0) + (O if not keep_o else 0)
    expert = (eW if keep_w else 0) + (eG if keep_g else 0) + (eO if keep_o else 0)
    return sharded, W + G + O + A - sharded - expert, expert


#: (a ledger, a ZeRO stage) -> its training split
_SPLITS = Kept("training split", 256)


def _split_of(led: Ledger, z: int) -> tuple:
    """_training_split once per (frozen) ledger and stage: the planner sizes every replica count of
    every base layout it tries (with_replicas) from it."""
    return _SPLITS.get((fingerprint(led), z), lambda: _training_split(led, z))


def training_per_card(led: Ledger, tp: int, pp: int, dp: int, z: int, ep: int = 1, split: tuple | None = None) -> float:
    """Bytes per card (with the x1.2 safety of C06): the unsharded dense part split over TP x PP, the
    unsharded expert part over PP x the expert split (TP, or EP with expert parallelism), the
    ZeRO-sharded part over all cards (the experts' shards over their expert-data-parallel ranks:
    TP x DP / EP of them, the same cards in all). `split`: _training_split(led, z), when the caller
    has it (the enumeration sizes every TP, PP and EP of a stage from one)."""
    sharded, dense, expert = split or _split_of(led, z)
    return (dense / (tp * pp) + expert / (pp * expert_split(tp, ep)) + sharded / (tp * pp * dp)) * TRAINING_SAFETY


#: expert-parallel sizes tried for training (Megatron-Core, NeMo and torchtitan recipes use powers of 2)
EP_SIZES = (2, 4, 8, 16, 32, 64, 128, 256)


def training_ep_options(w: Workload, gpu: GPU, tp: int) -> tuple[list[int], list[int]]:
    """(EP sizes inside the NVLink domain, EP sizes beyond it) for training a MoE model at TP `tp`:
    sizes dividing its experts; an EP group inside the domain (one card per rank) keeps the all-to-all
    on NVLink, and the narrowest wider one that holds the model is tried beside them, for shallower
    pipelines (DeepSeek-V3 trained with EP 64 over 8 nodes; review 19, F2). A dense model has EP 1 only."""
    n, k = w.model.num("experts"), w.model.num("experts_per_token")
    if not (n and k and n > k):
        return [1], []
    domain = comm.nvlink_domain(gpu)
    sizes = [e for e in EP_SIZES if e <= n and int(n) % e == 0]
    return [1] + [e for e in sizes if e <= domain], [e for e in sizes if e > domain]


def training_layouts(w: Workload, led: Ledger, gpu: GPU, max_gpus: int, stages=ZERO_STAGES, deep: bool = False) -> list[Layout]:
    """Every ZeRO stage x (TP, PP, EP) that holds the job, with the fewest replicas its shards need;
    for a MoE model every EP size inside the NVLink domain and the narrowest wider one that fits;
    `deep`: also deeper pipelines of a dense model at the node's TP (deeper_stages), the way to more GPUs
    once the global batch feeds no more data-parallel replicas."""
    return _per_shape("training", w, led, gpu, max_gpus, (tuple(stages), deep),
                      lambda: _training_layouts(w, led, gpu, max_gpus, stages, deep))


def deeper_stages(fewest: int, layers: int) -> list[int]:
    """Pipeline depths beyond the fewest that hold the model, tried when a deadline may need more GPUs
    than the global batch's replicas: the powers of two above it, with at least two layers per stage
    (Llama 3 405B: 126 layers on 16 stages; NeMo's 70B and 405B recipes run PP 4-16)."""
    out, pp = [], 2
    while pp * 2 <= layers:
        if pp > fewest:
            out.append(pp)
        pp *= 2
    return out


def _training_layouts(w: Workload, led: Ledger, gpu: GPU, max_gpus: int, stages, deep: bool = False) -> list[Layout]:
    mem = gpu.memory_gb * GB / TRAINING_SAFETY
    layers = int(w.model.num("layers") or 64)
    kv_heads = w.model.num("kv_heads")      # Megatron-style TP splits the KV-head groups evenly
    widest = tensor_split_max(gpu)
    # the TP degrees and each one's EP sizes read no ZeRO stage: found once, not once per stage
    tp_eps = [(tp, training_ep_options(w, gpu, tp)) for tp in _tp_options(gpu, int(kv_heads) if kv_heads else None)]
    out = []
    for z in stages:
        split = _split_of(led, z)
        sharded, dense, expert = split
        for tp, (inside, across) in tp_eps:
            def dp_for(pp, ep, tp=tp):
                m = tp * pp
                room = mem - dense / m - expert / (pp * expert_split(tp, ep))
                if room <= 0:
                    return None
                dp = 1 if sharded / m <= room else math.ceil(sharded / m / room - 1e-9)
                dp = ep_dp(tp, dp, ep)
                return dp if m * dp <= max_gpus else None
            for group in (inside, across):
                found = False
                for ep in group:
                    # a pipeline stage is a node's worth of model-parallel cards: TP, or with experts the
                    # wider of TP and the EP group
                    width = tp if ep == 1 else min(max(tp, ep), widest)
                    stages = _pp_options(width, widest, layers, lambda p, ep=ep: dp_for(p, ep) is not None)
                    if deep and ep == 1 and stages and width == widest:
                        stages = stages + deeper_stages(stages[0], layers)
                    for pp in (_even_stages(stages, layers) if ep > 1 else stages):
                        dp = dp_for(pp, ep)
                        if dp is None:
                            continue
                        out.append(Layout(tp, pp, dp, training_per_card(led, tp, pp, dp, z, ep, split), 1.0, z, dp, ep,
                                          interleave=interleaved_stages(layers, pp, w.virtual_stages)))
                        found = True
                    if found and group is across:
                        break       # the narrowest cross-node EP that holds the model
    return out


def interleaved_stages(layers: int, pp: int, given: int | None = None) -> int | None:
    """Model chunks per card a searched pipeline of `pp` stages is run with: Megatron-LM's interleaved
    schedule (--num-layers-per-virtual-pipeline-stage), which cuts the bubble v-fold, as Llama 3's and
    NeMo's large runs use: the workload's `virtual_stages` where each chunk keeps a layer; None when it
    states none (the planner's choice once the micro-batches are known: trainspeed.schedule); 1 without a
    pipeline."""
    if pp <= 1:
        return 1
    if given:
        return given if pp * given <= layers else 1
    return None


def _even_stages(stages: list[int], layers: int) -> list[int]:
    """Pipeline depths tried for an expert-parallel training layout: the fewest that hold it, the fewest
    that split the layers evenly up to twice that, and twice that (NeMo's MoE recipes take PP 4 where 2
    would hold gpt-oss-120b: deeper stages leave the memory that spares recomputing activations). No
    deeper search for an even split: Megatron-LM runs uneven stages (--decoder-first/last-pipeline-
    num-layers; DeepSeek-V3's 61 layers on 16 stages), and the only even split of a prime count of
    layers is a layer per stage, a depth nobody runs (review 11: PP 61 x EP 8 on 488 H100)."""
    if not stages or stages[0] <= 1:
        return stages
    even = next((p for p in range(stages[0], min(2 * stages[0], layers) + 1) if layers % p == 0), None)
    if even is None:
        return stages
    return sorted({stages[0], even} | ({2 * even} if layers % (2 * even) == 0 else set()))


def split_width(tp: int, ep: int = 1, attention_dp: int = 1) -> int:
    """The widest tensor split of a TP group: attention over tp / attention_dp cards, each expert over
    tp / ep; that split must stay inside one node's links (K14), the group itself need not."""
    return max(tp // attention_dp, tp // ep)


def given_layout(w: Workload, led: Ledger, gpu: GPU, stages=ZERO_STAGES) -> Layout | None:
    """The workload's own `layout: {tp, pp, dp, ep, attention_dp}` on this GPU, or None when it does
    not hold the job (for training, with the lowest ZeRO stage that makes it fit; `ep` there is the
    expert-parallel ranks drawn from TP x DP). A tensor split wider than a node is no layout at all: it
    stays inside one node's links (K14)."""
    tp, pp, dp, ep, adp = w.layout
    if w.training:
        if tp > gpu.gpus_per_node:
            return None
        mem = gpu.memory_gb * GB
        for z in stages:
            per_card = training_per_card(led, tp, pp, dp, z, ep)
            if per_card <= mem:
                return Layout(tp, pp, dp, per_card, 1.0, z, dp, ep, interleave=w.virtual_stages or 1)
        return None
    if split_width(tp, ep, adp) > gpu.gpus_per_node:
        return None
    r = inference_replicas(w, led, gpu, tp, pp, adp)
    if r is None:
        return None
    fixed, kv_card, _, rep = r
    per_card = fixed + kv_card / min(dp, w.concurrency)
    return Layout(tp, pp, dp, per_card, rep, None, dp, ep, adp) if per_card <= gpu.memory_gb * GB else None


# a prefill replica holds the KV of the prompts it works on: per attention rank one being computed and
# one being sent to the decode pool (the transfer overlaps the next prompt's prefill); a choice, stated
PREFILL_PROMPTS_IN_FLIGHT = 2


def prefill_pool(w: Workload, led: Ledger, gpu: GPU, tp: int, pp: int, ep: int, attention_dp: int,
                 replicas: int) -> Layout | None:
    """A disaggregated plan's prefill pool: `replicas` replicas of TP x PP, each card holding the
    weights and the KV cache of the prompts in prefill; None when that does not fit (or the KV size is
    unknown: nothing to size the transfer by)."""
    if not led.kv or led.kv_fallback or split_width(tp, ep, attention_dp) > gpu.gpus_per_node:
        return None
    rep = kv_replication(led, tp, attention_dp)
    kv = led.kv.bytes_per_sequence(w.prompt_tokens) * rep * PREFILL_PROMPTS_IN_FLIGHT * attention_dp / (tp * pp)
    per_card = fixed_bytes(led, tp, pp, attention_dp) + kv
    if per_card > gpu.memory_gb * GB:
        return None
    return Layout(tp, pp, replicas, per_card, rep, None, 1, ep, attention_dp)


def decode_pool(w: Workload, led: Ledger, gpu: GPU, tp: int, pp: int, ep: int, attention_dp: int,
                replicas: int | None = None) -> Layout | None:
    """A disaggregated plan's decode pool: TP x PP replicas holding the weights and the KV cache of
    every decoding sequence (prompt and output), at least as many as that cache needs (`replicas`
    None: the fewest); None when they do not fit."""
    if not led.kv or led.kv_fallback or split_width(tp, ep, attention_dp) > gpu.gpus_per_node:
        return None
    r = inference_replicas(w, led, gpu, tp, pp, attention_dp)
    if r is None:
        return None
    fixed, kv_card, least, rep = r
    dp = max(least, replicas or least)
    return Layout(tp, pp, dp, fixed + kv_card / min(dp, w.concurrency), rep, None, least, ep, attention_dp)


def disaggregated(prefill: Layout, decode: Layout) -> Layout:
    """The plan's one layout value for two pools: the decode pool's dimensions, the larger per-card
    need of the two, both pools kept."""
    return replace(decode, pools=Pools(prefill, decode), per_card_bytes=max(prefill.per_card_bytes, decode.per_card_bytes))


def given_pools(w: Workload, led: Ledger, gpu: GPU) -> Layout | None:
    """The workload's own `layout: {prefill: {...}, decode: {...}}` on this GPU, exactly as given, or
    None when a pool does not hold its work on it."""
    (ptp, ppp, pdp, pep, padp), (dtp, dpp, ddp, dep, dadp) = w.pools
    pf = prefill_pool(w, led, gpu, ptp, ppp, pep, padp, pdp)
    dc = decode_pool(w, led, gpu, dtp, dpp, dep, dadp, ddp)
    if pf is None or dc is None or dc.dp != ddp:
        return None
    return disaggregated(pf, dc)


def pool_forms(bases: list[Layout]) -> list[tuple[int, int, int, int]]:
    """The (tp, pp, ep, attention_dp) forms a pool may take on a GPU: those of the colocated layouts
    that hold the model on it (the same memory and node limits), each once."""
    return sorted({(b.tp, b.pp, b.ep, b.attention_dp) for b in bases})


def min_cards(layouts: list[Layout]) -> int | None:
    """The fewest cards any layout needs (the seeds' "2x H200 or 3x 80 GB cards" figure)."""
    return min((lay.count for lay in layouts), default=None)


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
        rep = kv_replication(led, lay.tp, lay.attention_dp)
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


def describe_layout(layout: tuple) -> str:
    """A layout tuple (tp, pp, dp, ep, attention_dp) in words, the EP and attention-DP parts when used."""
    tp, pp, dp, ep, adp = layout
    return (f"TP {tp} x PP {pp} x DP {dp}" + (f", EP {ep}" if ep > 1 else "")
            + (f", attention DP {adp}" if adp > 1 else ""))


def describe_pools(prefill: tuple, decode: tuple) -> str:
    """Two pool tuples (tp, pp, replicas, ep, attention_dp) in words."""
    def one(t):
        tp, pp, dp, ep, adp = t
        return (f"{dp} x (TP {tp} x PP {pp}" + (f", EP {ep}" if ep > 1 else "")
                + (f", attention DP {adp}" if adp > 1 else "") + ")")
    return f"prefill {one(prefill)} + decode {one(decode)}"
