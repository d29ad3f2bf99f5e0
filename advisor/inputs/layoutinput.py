"""The workload's `layout:`: a fixed colocated layout {tp, pp, dp, ep, attention_dp} or a disaggregated
one {prefill: {...}, decode: {...}}, parsed into the Workload's values and checked against what the
workload itself allows (node sizes depend on the GPU: the planner checks those per candidate)."""
from __future__ import annotations

from dataclasses import replace

from advisor.base import yamlio
from advisor.base.errors import Collector
from advisor.inputs.catalog import Model
from advisor.inputs.parallel import LAYOUT_FIELDS, POOL_FIELDS, POOLS, Layout, Pools, notation, pool_layout
from advisor.inputs.schema import Spec, check_value, _suggest

# the dimensions, the pools and a pool's fields are declared once (advisor.inputs.parallel)
# the serving engines' switches a `layout:` may carry beside the counts, each read into the same Layout
# (read_engine_form): vLLM's, SGLang's and TensorRT-LLM's spellings of attention data parallelism with
# expert parallelism ("DEP")
ENGINE_SWITCHES = {"enable_expert_parallel": "vLLM", "enable_dp_attention": "SGLang", "enable_attention_dp": "TensorRT-LLM"}


def parse_layout(raw, col: Collector, line, training: bool = False, notes: list | None = None) -> dict:
    """The Workload values of a `layout:` entry: {"layout": Layout} or {"pools": Pools}; {} with the
    problems collected when it is malformed. A serving engine's own notation is read into the same
    Layout (read_engine_form), and how it was read is added to `notes`."""
    if not isinstance(raw, dict):
        col.add("must be a mapping {tp: N, pp: N, dp: N, ep: N, attention_dp: N}", line, "layout")
        return {}
    if any(k in POOLS for k in raw):
        return {"pools": _pools(raw, col, line)}
    switches = {k: raw[k] for k in raw if k in ENGINE_SWITCHES}
    if raw.get("attention_dp") is True:       # TensorRT-LLM's enable_attention_dp written as attention_dp: true
        switches["enable_attention_dp"] = True
    counts = {k: v for k, v in raw.items() if k not in switches and not (k == "attention_dp" and v is True)}
    got = _counts(counts, LAYOUT_FIELDS + tuple(ENGINE_SWITCHES), col, "layout", line, "unknown layout field")
    for k, v in switches.items():
        if not isinstance(v, bool):
            col.add(f"must be true or false ({ENGINE_SWITCHES.get(k, 'TensorRT-LLM')}'s switch)", yamlio.line_of(raw, k, line), f"layout.{k}")
            return {}
    lay, how = read_engine_form(got, {k for k, v in switches.items() if v}, training)
    if isinstance(lay, str):
        col.add(lay, line, "layout")
        return {}
    if how and notes is not None:
        notes.append(f"layout {_written(raw)} read as {how}: {notation(lay)}")
    return {"layout": lay}


def _written(raw: dict) -> str:
    return "{" + ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in raw.items()) + "}"


def read_engine_form(got: dict, switches: set, training: bool) -> tuple:
    """(Layout, how it was read or "") of a layout's counts and engine switches; (a message, "") when the
    switches contradict the counts. Our notation is TensorRT-LLM's: `tp` is the group one replica spans,
    `ep` and `attention_dp` split it (tensorrt_llm/llmapi/llm_args.py: tensor_parallel_size,
    moe_expert_parallel_size, enable_attention_dp: attention data-parallel over every TP rank).
    - vLLM (vllm/config/parallel.py; FusedMoEParallelConfig.make flattens the MoE group over
      dp_size x tp_size, and with enable_expert_parallel puts the experts on all of them: "ep_size =
      tp_size", the flattened one): `dp: N, tp: T` with expert parallelism is one group of N x T cards,
      attention as N data-parallel ranks of T cards, experts over N x T. Read so when
      `enable_expert_parallel: true`, or when `ep` is N x T and does not divide T (the only reading of
      `dp: 8, tp: 1, ep: 8` that is a layout: DEP 8), serving only (training draws EP from TP x DP).
    - SGLang (python/sglang/srt/server_args.py: with enable_dp_attention, "assert self.tp_size %
      self.dp_size == 0"): `tp` is the group, `dp` its attention ranks, `ep` (--ep-size) its experts.
    - TensorRT-LLM: `enable_attention_dp: true` (or `attention_dp: true`) is attention DP over every TP rank."""
    given = Layout(**{k: got.get(k, 1) for k in LAYOUT_FIELDS})      # every declared dimension, as written
    tp, dp, ep = given.tp, given.dp, given.ep
    if "enable_dp_attention" in switches:
        if "attention_dp" in got:
            return "give SGLang's attention ranks as dp with enable_dp_attention, or as attention_dp without it, not both", ""
        if tp % dp:
            return (f"dp {dp} must divide tp {tp} with enable_dp_attention (SGLang: its DP attention ranks split the TP "
                    "group's cards)"), ""
        return replace(given, dp=1, attention_dp=dp), f"SGLang's --tp {tp} --dp {dp} --enable-dp-attention"
    if "enable_attention_dp" in switches:
        return (replace(given, attention_dp=tp),
                f"TensorRT-LLM's enable_attention_dp (attention data-parallel over all {tp} TP ranks)")
    vllm_ep = "enable_expert_parallel" in switches
    implicit = not training and dp > 1 and ep == tp * dp and tp % ep != 0 and "attention_dp" not in got
    if vllm_ep or implicit:
        group = tp * dp
        if "ep" in got and ep != group:
            return (f"ep {ep} with enable_expert_parallel: vLLM puts the experts over all dp x tp = {group} ranks "
                    f"(give ep {group} or leave it out)"), ""
        return (replace(given, tp=group, dp=1, ep=group, attention_dp=dp),
                f"vLLM's --data-parallel-size {dp} --tensor-parallel-size {tp} --enable-expert-parallel (the experts over "
                f"the {group} DP x TP ranks, attention data-parallel)")
    return given, ""


def _counts(m: dict, fields, col: Collector, where: str, line, unknown: str) -> dict:
    """A layout's or a pool's counts, each a whole number from 1 (empty: 1), the unknown keys reported."""
    got = {}
    for k, v in m.items():
        if k not in fields:
            hint = " (a pool's replica count is `replicas`)" if k == "dp" and "replicas" in fields else _suggest(k, fields)
            col.add(f"{unknown}{hint}", yamlio.line_of(m, k, line), f"{where}.{k}")
            continue
        checked = check_value(Spec("int", "", min=1, max=100_000), 1 if v is None else v, col,
                              f"{where}.{k}", yamlio.line_of(m, k, line))
        if checked is not None:
            got[k] = checked
    return got


def _pools(raw: dict, col: Collector, line) -> Pools | None:
    """`layout: {prefill: {...}, decode: {...}}`: both pools, each a mapping of POOL_FIELDS, as a
    Pools of two Layouts (each pool's `replicas` its dp); None (with the problems collected) when malformed."""
    out = []
    for k in raw:
        if k in LAYOUT_FIELDS:
            col.add(f"a disaggregated layout gives {k} inside each pool (prefill, decode), not beside them",
                    yamlio.line_of(raw, k, line), f"layout.{k}")
        elif k not in POOLS:
            col.add(f"unknown layout field{_suggest(k, POOLS)}", yamlio.line_of(raw, k, line), f"layout.{k}")
    for name in POOLS:
        pool = raw.get(name)
        pline = yamlio.line_of(raw, name, line)
        if name not in raw:
            col.add(f"a disaggregated layout needs both pools: {name} is missing", line, f"layout.{name}")
            continue
        if not isinstance(pool, dict):
            col.add("must be a mapping {tp: N, pp: N, ep: N, attention_dp: N, replicas: N}", pline, f"layout.{name}")
            continue
        out.append(pool_layout(_counts(pool, POOL_FIELDS, col, f"layout.{name}", pline, "unknown pool field")))
    return Pools(*out) if len(out) == 2 else None


def check_pools(values: dict, model, data, col: Collector, training: bool) -> None:
    """A given disaggregated layout: a serving layout, each pool's EP and attention-DP ranks dividing
    its TP group and its experts, the model's layers enough for its stages, both pools within max_gpus."""
    pools = values.get("pools")
    if not pools:
        return
    line = yamlio.line_of(data, "layout")
    raw = data.get("layout")
    if training:
        col.add("a disaggregated layout (prefill and decode pools) is for serving; training takes tp, pp and dp", line, "layout")
        return
    if values.get("concurrency_max"):
        col.add("a disaggregated layout sizes its pools for a stated number of users; give concurrency as a number",
                yamlio.line_of(data, "concurrency"), "concurrency")
    experts = model.num("experts") if isinstance(model, Model) else None
    layers = model.num("layers") if isinstance(model, Model) else None
    for name, lay in zip(POOLS, (pools.prefill, pools.decode)):
        pool = raw.get(name)
        pline = yamlio.line_of(raw, name, line)
        at = lambda k: yamlio.line_of(pool, k, pline)      # noqa: E731
        ep, pp = lay.ep, lay.pp
        for field_name, message in lay.problems():
            col.add(message, at(field_name), f"layout.{name}.{field_name}")
        if ep > 1 and isinstance(model, Model) and not (experts and (model.num("experts_per_token") or 0) < experts):
            col.add(f"ep {ep}: expert parallelism needs a mixture-of-experts model, and {model.id} has no routed experts",
                    at("ep"), f"layout.{name}.ep")
        elif ep > 1 and experts and experts % ep:
            col.add(f"ep {ep} does not divide {model.id}'s {experts:.0f} experts", at("ep"), f"layout.{name}.ep")
        if layers and pp > layers:
            col.add(f"{pp:,} pipeline stages, but {model.id} has {layers:.0f} layers (a stage holds at least one)",
                    at("pp"), f"layout.{name}.pp")
    cons = values.get("constraints")
    cap = cons.max_gpus if cons is not None else None
    total = pools.prefill.count + pools.decode.count
    if cap and total > cap:
        col.add(f"the two pools are {total:,} GPUs, more than constraints.max_gpus ({cap:,})", line, "layout")


def check_layout(values: dict, model, data, col: Collector, training: bool) -> None:
    """A given layout must be one the workload itself allows: within `max_gpus`, and no more pipeline
    stages than the model has layers (a stage holds at least one layer). Node size depends on the
    GPU, so the planner checks that per candidate (numbers.plan.given_layout)."""
    layout = values.get("layout")
    if not layout:
        return
    tp, pp, dp, ep, adp = layout.tp, layout.pp, layout.dp, layout.ep, layout.attention_dp
    line = yamlio.line_of(data, "layout")
    raw = data.get("layout") if isinstance(data.get("layout"), dict) else data
    # (training draws its expert-parallel ranks from TP x DP, Megatron-Core: Layout.problems knows)
    for name, message in layout.problems(training):
        col.add(message, yamlio.line_of(raw, name, line), f"layout.{name}")
    experts = model.num("experts") if isinstance(model, Model) else None
    if ep > 1 and isinstance(model, Model) and not (experts and (model.num("experts_per_token") or 0) < experts):
        col.add(f"ep {ep}: expert parallelism needs a mixture-of-experts model, and {model.id} has no routed experts",
                yamlio.line_of(raw, "ep", line), "layout.ep")
    elif ep > 1 and experts and experts % ep:
        col.add(f"ep {ep} does not divide {model.id}'s {experts:.0f} experts", yamlio.line_of(raw, "ep", line), "layout.ep")
    if adp > 1 and training:
        col.add("attention_dp is a serving layout; training takes tp, pp, dp and (for a MoE model) ep",
                yamlio.line_of(raw, "attention_dp", line), "layout.attention_dp")
    cons = values.get("constraints")
    cap = cons.max_gpus if cons is not None else None
    if cap and tp * pp * dp > cap:
        col.add(f"TP {tp} x PP {pp} x DP {dp} is {tp * pp * dp:,} GPUs, more than constraints.max_gpus ({cap:,})",
                line, "layout")
    layers = model.num("layers") if isinstance(model, Model) else None
    if layers and pp > layers:
        col.add(f"{pp:,} pipeline stages, but {model.id} has {layers:.0f} layers (a stage holds at least one)",
                yamlio.line_of(data.get("layout") if isinstance(data.get("layout"), dict) else data, "pp", line), "layout.pp")
    # tensor parallelism splits attention by heads (vLLM, SGLang and TensorRT-LLM refuse anything else):
    # the attention group's cards divide the query heads, and hold whole KV heads or copies of one
    heads = model.num("attention_heads") if isinstance(model, Model) else None
    kv = model.num("kv_heads") if isinstance(model, Model) and not model.num("mla_kv_dim") else None
    t_att = tp // adp if adp > 1 and not tp % adp else tp
    if t_att > 1 and heads and heads % t_att:
        col.add(f"tp {t_att} does not divide {model.id}'s {heads:.0f} attention heads (tensor parallelism splits attention by head)",
                yamlio.line_of(raw, "tp", line), "layout.tp")
    elif t_att > 1 and kv and kv % t_att and t_att % kv:
        col.add(f"tp {t_att} neither divides {model.id}'s {kv:.0f} key/value heads nor is a multiple of them (each card holds "
                "whole KV heads, or a copy of one)", yamlio.line_of(raw, "tp", line), "layout.tp")
    gb, mbs = values.get("global_batch"), values.get("micro_batch", 1)
    if training and gb and dp * mbs > gb:
        col.add(f"{dp:,} data-parallel replicas x micro_batch {mbs} need {dp * mbs:,} sequences a step, more than global_batch {gb:,}",
                yamlio.line_of(raw, "dp", line), "layout.dp")


def check_virtual_stages(values: dict, model, data, col: Collector, training: bool) -> None:
    """An interleaved pipeline the workload states: with its own layout, Megatron-LM's conditions for
    the schedule (each of PP x v chunks holds a layer; the micro-batches fill the stages in whole rounds),
    so the layout runs exactly as given (layers that do not split evenly leave the fullest stage a layer
    more: trainspeed.stage_imbalance)."""
    v, lay = values.get("virtual_stages"), values.get("layout")
    if not training or not v or v == 1 or not lay:
        return
    line = yamlio.line_of(data, "virtual_stages")
    pp, dp = lay.pp, lay.dp
    layers = model.num("layers") if isinstance(model, Model) else None
    if pp == 1:
        col.add(f"virtual_stages {v} interleaves pipeline stages, and the layout has none (pp 1)", line, "virtual_stages")
    elif layers and pp * v > layers:
        col.add(f"{model.id}'s {layers:.0f} layers are fewer than {pp} stages x {v} chunks (a chunk holds at least one layer)",
                line, "virtual_stages")
    gb, mbs = values.get("global_batch"), values.get("micro_batch", 1)
    if pp > 1 and gb and round(gb / (mbs * dp)) % pp:
        col.add(f"global_batch {gb:,} / (micro_batch {mbs} x DP {dp}) = {round(gb / (mbs * dp)):,} micro-batches, not a multiple of "
                f"PP {pp}: the interleaved schedule runs whole rounds of the stages", line, "virtual_stages")
