"""SGLang's and TensorRT-LLM's launch of a serving plan (vLLM's is serving.vllm): the layout's options
from advisor.inputs.parallel.engine_layout, memory and batch from the plan, multi-node by NODE_RANK and
HEAD_ADDR, disaggregated pools by their mode and KV transfer backend."""
from __future__ import annotations

import math

from advisor.inputs.parallel import POOL_FLAGS, Layout, engine_layout
from advisor.shell.deploy.plan import Plan
from advisor.shell.deploy.serving import (ENGINE_NAMES, KV_DTYPE, PORT, Launch, _kv_note, _quant_notes,
                                          _quantisation, _words, batch_cap, memory_share, vllm)

#: SGLang's torch.distributed port on the head node (its multi-node docs use `--dist-init-addr HEAD:20000`)
SGLANG_DIST_PORT = 20000
#: SGLang's KV transfer between the pools: NIXL, as vLLM's (SGLang's default is Mooncake, which needs its
#: transfer engine installed; both are in its --disaggregation-transfer-backend choices)
SGLANG_KV_BACKEND = "nixl"
#: the file of TensorRT-LLM's LLM API options beside its command
TRTLLM_OPTIONS = "trtllm-extra-options.yaml"


def sglang(plan: Plan, lay: Layout | None = None, pool: str | None = None) -> Launch:
    """`python3 -m sglang.launch_server` for the plan or one pool: every node of a group runs the same
    command with its NODE_RANK; the head node serves the API."""
    el = engine_layout(lay or plan.layout, "sglang")
    out = Launch("sglang", ENGINE_NAMES["sglang"] + (f" {pool} pool" if pool else ""), program="python3 -m sglang.launch_server",
                 pool=pool, model_arg=False)
    if isinstance(el, str):
        out.refused = el
        return out
    w = plan.workload
    tp = el.options["--tp-size"]
    share, share_why = memory_share(plan, "sglang", tp)
    ranks = el.options.get("--attn-dp-size", 1) * el.servers
    seqs, seqs_why = batch_cap(plan, ranks)
    opts = {"--model-path": plan.model_repo, **el.options, "--context-length": w.context_tokens,
            "--max-running-requests": seqs * el.options.get("--attn-dp-size", 1),
            "--mem-fraction-static": f"{share:.2f}", "--kv-cache-dtype": KV_DTYPE["sglang"][w.kv_precision]}
    q = _quantisation(plan)
    if q:
        opts["--quantization"] = q
    if pool:
        opts.update(POOL_FLAGS["sglang"][pool])
        opts["--disaggregation-transfer-backend"] = SGLANG_KV_BACKEND
        out.notes.append(f"--disaggregation-mode {pool} with the KV cache sent over {SGLANG_KV_BACKEND.upper()}; "
                         "router-sglang.sh sends each request to a prefill and a decode server")
    opts.update({"--served-model-name": plan.name, "--host": "0.0.0.0", "--port": PORT})
    out.options, out.servers, out.cards = el.options, el.servers, el.cards
    out.nodes = math.ceil(el.cards / plan.gpus_per_node)
    out.notes += [f"--mem-fraction-static {share:.2f}: {share_why}",
                  f"--max-running-requests {opts['--max-running-requests']}: {seqs_why}",
                  f"--context-length {w.context_tokens}: the workload's context_tokens", _kv_note(plan, "sglang"),
                  *_quant_notes(plan, q)]
    if out.nodes > 1:
        opts.update({"--nnodes": out.nodes, "--node-rank": '"$NODE_RANK"', "--dist-init-addr": f'"$HEAD_ADDR:{SGLANG_DIST_PORT}"'})
        out.notes.append(f"one group over {out.nodes} nodes: the same command on each, NODE_RANK 0 serving the API")
        out.worker = _words(opts)
    out.head = _words(opts)
    return out


def trtllm(plan: Plan, lay: Layout | None = None, pool: str | None = None) -> Launch:
    """`trtllm-serve` with its LLM API options file for a one-node group."""
    out = Launch("trtllm", ENGINE_NAMES["trtllm"] + (f" {pool} pool" if pool else ""), program="trtllm-serve", pool=pool)
    if pool:
        out.refused = ("TensorRT-LLM runs disaggregated serving as `trtllm-serve disaggregated` with a config of context and "
                       "generation servers; that launch is not written yet")
        return out
    el = engine_layout(lay or plan.layout, "trtllm")
    if isinstance(el, str):
        out.refused = el
        return out
    if el.cards > plan.gpus_per_node:
        out.refused = ("a TensorRT-LLM group over nodes is launched through MPI or Slurm (trtllm-llmapi-launch); that launch "
                       "is not written yet")
        return out
    w = plan.workload
    seqs, seqs_why = batch_cap(plan, el.servers * (el.options.get("enable_attention_dp") and el.options["tensor_parallel_size"] or 1))
    free = float((plan.kv_shares.get("trtllm") or {}).get("v") or 0.9)
    kv = KV_DTYPE["trtllm"][w.kv_precision]
    out.extra = {"enable_attention_dp": bool(el.options.get("enable_attention_dp")),
                 "kv_cache_config": {"dtype": kv, "free_gpu_memory_fraction": free}}
    opts = {"--backend": "pytorch", "--host": "0.0.0.0", "--port": PORT, "--tp_size": el.options["tensor_parallel_size"],
            "--pp_size": el.options["pipeline_parallel_size"], "--ep_size": el.options["moe_expert_parallel_size"],
            "--max_batch_size": seqs, "--max_seq_len": w.context_tokens,
            "--kv_cache_free_gpu_memory_fraction": f"{free:.2f}", "--extra_llm_api_options": TRTLLM_OPTIONS}
    out.options, out.servers, out.cards, out.nodes = el.options, el.servers, el.cards, 1
    out.head = _words(opts)
    out.notes += [f"--kv_cache_free_gpu_memory_fraction {free:.2f}: the share of the memory the weights leave that the plans "
                  "give TensorRT-LLM's KV cache (catalog/engines.yaml trtllm.kv_share)",
                  f"--max_batch_size {seqs}: {seqs_why}", f"--max_seq_len {w.context_tokens}: the workload's context_tokens",
                  f"{TRTLLM_OPTIONS}: attention data parallelism {'on' if out.extra['enable_attention_dp'] else 'off'}, "
                  f"KV cache dtype {kv}", *_quant_notes(plan, None)]
    return out


def launches(plan: Plan) -> list[Launch]:
    """Every engine's launch of a serving plan, the plan's own engine first."""
    order = [plan.engine] if plan.engine in ENGINE_NAMES else []
    order += [e for e in ENGINE_NAMES if e not in order]
    writers = {"vllm": vllm, "sglang": sglang, "trtllm": trtllm}
    out = []
    for e in (e for e in order if e in writers):
        if plan.not_here.get(e):          # the engine does not run on this GPU (catalog/engines.yaml runs_on)
            out.append(Launch(e, ENGINE_NAMES[e], refused=plan.not_here[e]))
            continue
        if plan.layout.pools:
            out += [writers[e](plan, getattr(plan.layout.pools, p), p) for p in ("prefill", "decode")]
        else:
            out.append(writers[e](plan))
    return out
