"""The layout's dimensions, declared once: each with its workload name, its meaning in plain words,
what it must divide, its short notation and how the serving engines spell it; and `Layout`, the one
frozen value a layout is, from the workload's `layout:` through the planner to the record and memo.

It lives in the inputs layer because the workload already names a layout (`layout:`), and every
layer downstream (numbers, judgement, shell) reads this one declaration. A new dimension (context
parallelism, say) is one `Dim` here and one field of `Layout` (its default 1: not used); the
workload, the record and the memo's words follow from the table (advisor/numbers/README.md says
which speed and memory terms must read it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from operator import attrgetter

INTERNAL = {"record": False}       # a field the planner needs but the decision record does not show


@dataclass(frozen=True)
class Dim:
    """One parallel dimension of a layout."""

    field: str          # its name in the workload's `layout:`, on `Layout` and in the record
    notation: str       # the short form a practitioner writes ("TP 8")
    name: str           # in words, for the memo's first use ("tensor parallelism")
    meaning: str        # what N of it does, in plain words; `{n}` is the degree
    short: str = ""     # the same in a few words, for the memo's summary
    divides: str | None = None     # the dimension whose cards its ranks split (serving): n must divide it
    why_divides: str = ""
    shown: bool = False  # the record and the workload show it always (True) or only when used (> 1)
    #: its flag in vLLM (vllm/config/parallel.py ParallelConfig), SGLang (python/sglang/srt/server_args.py
    #: ServerArgs) and TensorRT-LLM (tensorrt_llm/llmapi/llm_args.py); None: the engine has no such knob
    engines: dict = field(default_factory=dict)
    #: a dimension of some kinds only (a diffusion replica's CFG or sequence parallelism): the record and
    #: the workload show it only when used, so the other kinds' records read as before
    kinds_only: bool = False


DIMS: tuple[Dim, ...] = (
    Dim("tp", "TP", "tensor parallelism", "each layer split over {n} cards", "each layer split over {n} cards", shown=True,
        engines={"vllm": "--tensor-parallel-size", "sglang": "--tp-size", "trtllm": "tensor_parallel_size"}),
    Dim("pp", "PP", "pipeline parallelism", "the layers cut into {n} stages, one after another", "{n} pipeline stages", shown=True,
        engines={"vllm": "--pipeline-parallel-size", "sglang": "--pp-size", "trtllm": "pipeline_parallel_size"}),
    Dim("dp", "DP", "data parallelism", "{n} replicas sharing the work", "{n} replicas", shown=True,
        engines={"vllm": "--data-parallel-size", "sglang": "--dp-size (with the router)", "trtllm": None}),
    Dim("ep", "EP", "expert parallelism", "the experts spread over {n} cards, an all-to-all per MoE layer", "experts over {n} cards",
        divides="tp", why_divides="its ranks split the TP group's cards",
        engines={"vllm": "--enable-expert-parallel (EP = DP x TP)", "sglang": "--ep-size",
                 "trtllm": "moe_expert_parallel_size"}),
    Dim("attention_dp", "attention DP", "attention data parallelism",
        "attention run as {n} data-parallel ranks, each with its own sequences and KV cache",
        "attention data-parallel over {n} ranks",
        divides="tp", why_divides="its ranks split the TP group's cards",
        engines={"vllm": "--data-parallel-size with --enable-expert-parallel", "sglang": "--enable-dp-attention --dp-size",
                 "trtllm": "enable_attention_dp"}),
    # image and video generation (advisor/kinds/diffusion): a replica's denoiser split over cards only to
    # meet a latency target; xDiT (xfuser) names both
    # (the LLM engines have no such knob: xDiT's flags are --use_cfg_parallel and --ulysses_degree / --ring_degree)
    Dim("cfg", "CFG", "classifier-free-guidance parallelism",
        "the guided and unguided passes of each step on {n} cards at once", "guidance passes on {n} cards", kinds_only=True,
        engines={"vllm": None, "sglang": None, "trtllm": None}),
    Dim("sp", "SP", "sequence parallelism (Ulysses/ring)",
        "each step's latent patches split over {n} cards, all-to-alls around every attention", "latent patches over {n} cards",
        kinds_only=True, engines={"vllm": None, "sglang": None, "trtllm": None}),
)
BY_FIELD = {d.field: d for d in DIMS}
LAYOUT_FIELDS = tuple(d.field for d in DIMS)
FORM_FIELDS = tuple(f for f in LAYOUT_FIELDS if f != "dp")
_FORM = attrgetter(*FORM_FIELDS)        # Layout.form: read thousands of times per plan, in C
# the order the memo tells a layout in: the model-parallel group and what splits it, then its stages, then copies
DESCRIBE_ORDER = ("tp", "attention_dp", "ep", "cfg", "sp", "pp", "dp")
assert sorted(DESCRIBE_ORDER) == sorted(LAYOUT_FIELDS), "advisor.inputs.parallel: place each dimension in DESCRIBE_ORDER"


@dataclass(frozen=True)
class Pool:
    """One pool of a disaggregated serving layout (DistServe, Splitwise; SGLang and NVIDIA Dynamo's PD
    disaggregation): its name, what it does and how the engines name it."""

    name: str
    meaning: str
    engines: dict


POOL_DIMS: tuple[Pool, ...] = (
    Pool("prefill", "prompts are prefilled here and each prompt's KV cache is sent on",
         {"vllm": 'kv_role "kv_producer" (--kv-transfer-config)', "sglang": "--disaggregation-mode prefill",
          "trtllm": "context_servers"}),
    Pool("decode", "the output tokens are generated here from the KV cache received",
         {"vllm": 'kv_role "kv_consumer" (--kv-transfer-config)', "sglang": "--disaggregation-mode decode",
          "trtllm": "generation_servers"}),
)
POOLS = tuple(p.name for p in POOL_DIMS)
# a pool's own fields: its replica count is `replicas` (the pools together are the plan's replicas)
POOL_FIELDS = tuple(f for f in LAYOUT_FIELDS if f != "dp" and not BY_FIELD[f].kinds_only) + ("replicas",)


@dataclass(frozen=True)
class Layout:
    """One way to lay the job out: TP x PP x DP cards (each dimension declared in DIMS) and, once the
    planner has sized it on a GPU, what each card holds.

    `tp` is the model-parallel group of one pipeline stage (SGLang's `--tp`, TensorRT-LLM's `tp_size`);
    inside it the MoE layers put their experts on `ep` ranks (each expert split over tp / ep cards) and
    attention runs as `attention_dp` data-parallel ranks of tp / attention_dp cards, each with its own
    sequences and KV cache (SGLang `--enable-dp-attention --dp N`, TensorRT-LLM `enable_attention_dp`:
    "DEP8" is tp 8, ep 8, attention_dp 8). Training reads `ep` as Megatron-Core does: expert-parallel
    ranks drawn from the stage's TP x DP cards (ep divides tp x dp), each holding whole experts
    (numbers.layouts.expert_split). A layout the workload gives has no sizes yet (per_card_bytes 0)."""

    # (no defaults: a plan without a layout reads them as None, numbers.plan._default)
    tp: int
    pp: int
    dp: int
    per_card_bytes: float = field(default=0.0, metadata=INTERNAL)
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
    # image/video generation: the guidance passes of a step on cfg cards at once, and sequence-parallel
    # ranks (Ulysses/ring) of one replica; recorded in the plan's `layout` when used (Layout.degrees)
    cfg: int = field(default=1, metadata=INTERNAL)
    sp: int = field(default=1, metadata=INTERNAL)

    @property
    def attention_tp(self) -> int:
        """Cards one attention rank splits its heads over."""
        return self.tp // self.attention_dp

    @property
    def split_width(self) -> int:
        """The widest tensor split of the TP group: attention over tp / attention_dp cards, each expert
        over tp / ep; that split must stay inside one node's links (K14), the group itself need not."""
        return max(self.tp // self.attention_dp, self.tp // self.ep)

    @property
    def form(self) -> tuple:
        """Every declared degree but the replica count (dp), in DIMS order: what makes one replica (a
        pool's form, the key of a replica's sizes, the planner's "same layout, more replicas")."""
        return _FORM(self)

    def with_form(self, form: tuple) -> Layout:
        """A layout of `form` (as `form` gives it) with this one's dp and nothing sized."""
        return Layout(**dict(zip(FORM_FIELDS, form)), dp=self.dp)

    def degrees(self) -> dict:
        """Every declared dimension by its workload name (a kind's own only when used)."""
        return {d.field: getattr(self, d.field) for d in DIMS if not d.kinds_only or getattr(self, d.field) != 1}

    def as_dict(self) -> dict:
        """The record's `layout`: every parallel dimension, by its workload name; a disaggregated
        layout as its two pools, each with its replica count (the workload's own form)."""
        if self.pools:
            return {"prefill": self.pools.prefill.pool_dict(), "decode": self.pools.decode.pool_dict()}
        return self.degrees()

    def all_degrees(self) -> dict:
        """Every declared dimension, those of some kinds only too (the rules' facts)."""
        return {d.field: getattr(self, d.field) for d in DIMS}

    def pool_dict(self) -> dict:
        d = self.degrees()
        d["replicas"] = d.pop("dp")
        return d

    def inputs(self) -> dict:
        """The workload's form of a given layout: the dimensions always shown, the others when used."""
        if self.pools:
            return {p.name: {k: v for k, v in lay.pool_dict().items() if k in ("replicas",) or BY_FIELD[k].shown or v != 1}
                    for p, lay in zip(POOL_DIMS, (self.pools.prefill, self.pools.decode))}
        return {k: v for k, v in self.degrees().items() if BY_FIELD[k].shown or v != 1}

    @property
    def count(self) -> int:
        if self.pools:
            return self.pools.prefill.count + self.pools.decode.count
        return self.tp * self.pp * self.dp * self.cfg * self.sp

    @property
    def replica_cards(self) -> int:
        """Cards of one model replica (the group an instance must hold whole, K13): the larger pool's."""
        if self.pools:
            return max(self.pools.prefill.tp * self.pools.prefill.pp, self.pools.decode.tp * self.pools.decode.pp)
        return self.tp * self.pp * self.cfg * self.sp

    def nodes(self, gpu) -> int:
        """Nodes of `gpu` (a catalog GPU: its gpus_per_node; not imported here, as the catalog reads
        this module through engines.yaml's layouts) the layout takes."""
        if self.pools and self.count > gpu.gpus_per_node:
            # each pool on nodes of its own: a node holds one kind of work (Splitwise, DistServe); pools that
            # fit one node together share it (Dynamo's single-node 2 x TP 2 prefill + TP 4 decode recipe,
            # DYNAMO_LLAMA33_70B), as their price (one instance) and KV transfer (over NVLink) take them
            return self.pools.prefill.nodes(gpu) + self.pools.decode.nodes(gpu)
        return math.ceil(self.count / gpu.gpus_per_node)

    def crosses_nodes(self, gpu) -> bool:
        """Serving traffic between nodes: a model copy wider than one, or pools on nodes of their own
        sending each request's KV cache across (a rented plan needs RDMA between its instances)."""
        return self.replica_cards > gpu.gpus_per_node or (self.pools is not None and self.nodes(gpu) > 1)

    def problems(self, training: bool = False) -> list[tuple[str, str]]:
        """(field, message) for each declared division this layout breaks: a dimension whose ranks
        split another's cards must divide it (serving); training draws its EP ranks from TP x DP
        (Megatron-Core) and has no attention DP."""
        out = []
        for d in DIMS:
            n = getattr(self, d.field)
            if n <= 1 or not d.divides:
                continue
            if training and d.field == "ep":
                if (self.tp * self.dp) % n:
                    out.append((d.field, f"ep {n} must divide tp x dp = {self.tp * self.dp:,}: its ranks are drawn from the tensor- and "
                                          f"data-parallel cards" + (f" (ep {n} is more than those {self.tp * self.dp:,} GPUs)" if n > self.tp * self.dp else "")))
            elif getattr(self, d.divides) % n:
                out.append((d.field, f"{d.field} {n} must divide {d.divides} {getattr(self, d.divides)}: {d.why_divides}"))
        return out


@dataclass(frozen=True)
class Pools:
    """A disaggregated serving layout (DistServe, Splitwise, Mooncake; SGLang and NVIDIA Dynamo's PD
    disaggregation): prompts are prefilled on one pool of replicas and their KV cache sent to another
    pool that decodes; each pool is a Layout whose `dp` is its replica count."""

    prefill: Layout
    decode: Layout


def declared_fields() -> tuple[str, ...]:
    """The Layout fields that are dimensions (checked against DIMS when this module loads)."""
    return tuple(f.name for f in fields(Layout) if f.name in BY_FIELD)


# every declared dimension is a field of Layout, the optional ones with their default 1 ("not used"): a
# Dim without its field (or the reverse) fails at import, not in a plan
assert set(declared_fields()) == set(BY_FIELD), "advisor.inputs.parallel: DIMS and Layout's fields differ"
assert all(f.default == 1 for f in fields(Layout) if f.name in BY_FIELD and not BY_FIELD[f.name].shown)


def notation(lay: Layout) -> str:
    """The layout in the short notation: "TP 8 x PP 1 x DP 2, EP 8, attention DP 8" (the dimensions
    always shown joined by x, the others after a comma when used); two pools each as replicas x (...)."""
    if lay.pools:
        return f"prefill {_pool_notation(lay.pools.prefill)} + decode {_pool_notation(lay.pools.decode)}"
    return _notation(lay, " x ".join(f"{d.notation} {getattr(lay, d.field)}" for d in DIMS if d.shown))


def _notation(lay: Layout, head: str) -> str:
    return head + "".join(f", {d.notation} {getattr(lay, d.field)}" for d in DIMS if not d.shown and getattr(lay, d.field) > 1)


def _pool_notation(lay: Layout) -> str:
    return f"{lay.dp} x (" + _notation(lay, f"TP {lay.tp} x PP {lay.pp}") + ")"


def define(dim: str, n: int | None = None) -> str:
    """A dimension defined in words on first use: "tensor parallelism (TP): each layer split over 8 cards"."""
    d = BY_FIELD[dim]
    return f"{d.name} ({d.notation})" + (f": {d.meaning.format(n=n)}" if n is not None else "")


def define_terms(lay: Layout) -> list[str]:
    """The definitions a reader needs for this layout: each dimension it uses (> 1), in words."""
    used = [lay.pools.prefill, lay.pools.decode] if lay.pools else [lay]
    out = []
    for d in DIMS:
        n = max(getattr(x, d.field) for x in used)
        if n > 1:
            out.append(define(d.field, n))
    return out


def from_record(c: dict) -> Layout | None:
    """The Layout a record's candidate or recommendation (or an alternative's plan) describes: its
    flat dimensions, or its two pools (`layout: {prefill, decode}`); None when it has none."""
    lay = c.get("layout")
    if isinstance(lay, dict) and "prefill" in lay:
        return of_pools(Pools(*(pool_layout(lay[p]) for p in POOLS)))
    src = lay if isinstance(lay, dict) and "tp" in lay else c
    if src.get("tp") is None:
        return None
    return Layout(**{d.field: src.get(d.field) or 1 for d in DIMS})


def of_pools(pools: Pools) -> Layout:
    """A disaggregated layout as one value: the decode pool's dimensions (its TPOT's), both pools kept."""
    dc = pools.decode
    return Layout(dc.tp, dc.pp, dc.dp, ep=dc.ep, attention_dp=dc.attention_dp, pools=pools)


def pool_layout(p: dict) -> Layout:
    """A pool's Layout from its workload or record form (`replicas` is its dp)."""
    return Layout(**{d.field: p.get("replicas" if d.field == "dp" else d.field) or 1 for d in DIMS})


def describe(lay: Layout, gpus_per_node: int | None = None, training: bool = False, virtual_stages: int = 1,
             short: bool = False) -> str:
    """The layout in words, each dimension it uses by its declared meaning and, the first time, its
    notation and name ("each layer split over 2 cards (TP: tensor parallelism, inside a node)");
    `short`: the summary's few words. A training layout's EP ranks are drawn from its TP x DP cards
    (Megatron-Core), so its DP ranks hold the experts in tp x dp / ep copies (review 13)."""
    if lay.pools:
        return _describe_pools(lay.pools, short)
    parts = []
    for d in (BY_FIELD[f] for f in DESCRIBE_ORDER):
        n = getattr(lay, d.field)
        if n <= 1 or (d.field == "tp" and lay.attention_dp > 1 and lay.attention_tp == 1):
            continue        # a DEP group: no card splits a layer's attention, each is its own rank
        copies = max(1, lay.tp * lay.dp // lay.ep) if d.field == "dp" and training and lay.ep > 1 else None
        if short:
            parts.append(f"{n} data-parallel ranks, {copies} model cop{'y' if copies == 1 else 'ies'}" if copies
                         else d.short.format(n=n))
            continue
        words = d.meaning.format(n=n) if not copies else f"{n} data-parallel ranks sharing the work"
        parts.append(f"{words} ({d.notation}: {d.name}{_where(d.field, lay, gpus_per_node, virtual_stages, copies)})")
    if short:
        return ", ".join(parts) or "the whole model on one card"
    return "; ".join(parts) or "the whole model on one card"


def _where(field_name: str, lay: Layout, gpus_per_node: int | None, virtual_stages: int, copies: int | None) -> str:
    """Where a dimension's cards sit, or what else a reader needs of it."""
    if field_name == "tp" and lay.attention_dp == 1:
        return ", inside a node"
    if field_name == "pp" and gpus_per_node:
        where = ", across nodes" if max(lay.tp, lay.ep) * lay.pp > gpus_per_node else ", in one node"
        return where + (f"; interleaved, {virtual_stages} model chunks per card" if virtual_stages > 1 else "")
    if field_name == "ep" and gpus_per_node:
        return ", inside a node" if lay.ep <= gpus_per_node else ", across nodes"
    if copies:
        return f"; the dense layers on each, the experts in {copies} cop{'y' if copies == 1 else 'ies'} of {lay.ep} cards"
    return ""


def _describe_pools(pools: Pools, short: bool) -> str:
    """A disaggregated layout in words: which pool does what, on how many replicas, and that each
    prompt's KV cache moves between them."""
    pf, dc = (_pool_words(p) for p in (pools.prefill, pools.decode))
    if short:
        return f"prompts on {pf}, generation on {dc}"
    return (f"disaggregated: prompts are prefilled on {pf}, and each prompt's KV cache is sent to the decode pool, "
            f"{dc} (tensor-parallel inside a node)")


def _pool_words(p: Layout) -> str:
    cards = p.tp * p.pp
    each = "one card" if cards == 1 else f"{cards} cards" + (f" in {p.pp} pipeline stages" if p.pp > 1 else "")
    return f"{p.dp} replica{'s' if p.dp > 1 else ''} of {each}"


# --- the engines' own spelling of a layout (the deploy writers read these; nothing else re-derives them) ---

@dataclass(frozen=True)
class EngineLayout:
    """One replica group of a layout as an engine is launched with it: its options (flag or option-file
    key -> value, declared below per engine), how many separate servers of that group the plan runs
    (`servers`: replicas the engine does not run inside one launch) and the cards one server takes."""

    engine: str
    options: dict
    servers: int
    cards: int


#: each engine's name for each degree it takes (vLLM: vllm/engine/arg_utils.py; SGLang: server_args.py;
#: TensorRT-LLM: the LLM API options of `trtllm-serve --extra_llm_api_options`, llmapi/llm_args.py)
ENGINE_FLAGS = {
    "vllm": {"tp": "--tensor-parallel-size", "pp": "--pipeline-parallel-size", "dp": "--data-parallel-size",
             "ep": "--enable-expert-parallel"},
    # SGLang 0.5.23: attention DP is --attn-dp-size N (`--dp-size N --enable-dp-attention` is its deprecated spelling)
    "sglang": {"tp": "--tp-size", "pp": "--pp-size", "dp": "--dp-size", "ep": "--ep-size",
               "attention_dp": "--attn-dp-size"},
    "trtllm": {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "ep": "moe_expert_parallel_size",
               "attention_dp": "enable_attention_dp"},
}


def engine_layout(lay: Layout, engine: str) -> EngineLayout | str:
    """`lay` (one replica group; a pool of a disaggregated layout is passed alone) in `engine`'s options,
    or why the engine cannot run it as planned. vLLM's EP is its whole TP x DP group (EP = DP x TP) and its
    attention DP is its DP with expert parallelism on; SGLang takes tp, ep and DP attention as given;
    TensorRT-LLM's attention DP spans the whole TP group. Replicas the engine does not run in one launch
    (the plan's dp, or any replica count beside an expert-parallel group) are separate servers."""
    f = ENGINE_FLAGS[engine]
    t, a, e, pp, d = lay.tp, lay.attention_dp, lay.ep, lay.pp, lay.dp
    if engine == "vllm":
        if e > 1 and e != t:
            return f"vLLM spreads the experts over its whole TP x DP group (EP = DP x TP): EP {e} inside TP {t} is not a vLLM layout"
        if a > 1 and e == 1:
            return "vLLM runs attention data-parallel only with expert parallelism (--data-parallel-size with --enable-expert-parallel)"
        opts = {f["tp"]: t // a, f["pp"]: pp, f["dp"]: a * (d if e == 1 else 1)}
        if e > 1:
            opts[f["ep"]] = True
        return EngineLayout(engine, opts, 1 if e == 1 else d, t * pp * (d if e == 1 else 1))
    if engine == "sglang":
        if a > 1 and pp > 1:
            return "SGLang does not combine DP attention with pipeline stages"
        opts = {f["tp"]: t, f["pp"]: pp}
        if a > 1:
            opts[f["attention_dp"]] = a
        if e > 1:
            opts[f["ep"]] = e
        return EngineLayout(engine, opts, d, t * pp)
    if a > 1 and a != t:
        return f"TensorRT-LLM's attention DP spans the whole TP group (enable_attention_dp): attention DP {a} inside TP {t} is not one of its layouts"
    opts = {f["tp"]: t, f["pp"]: pp, f["ep"]: e}
    if a > 1:
        opts[f["attention_dp"]] = True
    return EngineLayout(engine, opts, d, t * pp)


#: each pool of a disaggregated layout as the engines launch it (POOL_DIMS says the same in words): vLLM's
#: KV connector role (--kv-transfer-config kv_role), SGLang's --disaggregation-mode
POOL_FLAGS = {"vllm": {"prefill": {"kv_role": "kv_producer"}, "decode": {"kv_role": "kv_consumer"}},
              "sglang": {"prefill": {"--disaggregation-mode": "prefill"}, "decode": {"--disaggregation-mode": "decode"}}}
