"""The serving launch of a plan: each engine's command line (its options from the layout through
advisor.inputs.parallel.engine_layout, the memory and batch settings from the plan) and the benchmark
that checks the memo's figures. Values only: the templates under templates/deploy/ place them."""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

import json

from advisor.inputs.parallel import POOL_FLAGS, EngineLayout, Layout, engine_layout
from advisor.shell.deploy.plan import Plan

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
PORT = 8000
#: vLLM's multi-node ports: the data-parallel RPC port and the torch.distributed master port (any free port
#: the nodes reach; these are the values vLLM's own multi-node examples use)
DP_RPC_PORT = 13345
MASTER_PORT = 29500
#: vLLM's share of the card for weights + KV + activations; 0.9 is catalog/engines.yaml's (VLLM_ENGINE_ARGS)
VLLM_SHARE_MAX = 0.95
#: the KV cache precision in each engine's words: bf16 and fp16 are the model's own 16-bit type ("auto")
KV_DTYPE = {"vllm": {"bf16": "auto", "fp16": "auto", "fp32": "auto", "fp8": "fp8"},
            "sglang": {"bf16": "auto", "fp16": "auto", "fp32": "auto", "fp8": "fp8_e4m3"},
            "trtllm": {"bf16": "auto", "fp16": "auto", "fp32": "auto", "fp8": "fp8"}}
#: a 16-bit checkpoint quantised by the engine as it loads (online); other precisions need a checkpoint
#: quantised beforehand, whose config names its method (the engine reads it; no flag)
ONLINE_QUANT = {"fp8": "fp8"}
SHELL_EXPANSION = ('"$',)
#: the KV transfer of a disaggregated plan in vLLM: NIXL (NVIDIA's inference transfer library), the connector
#: vLLM's disaggregated-serving docs and llm-d run; prefill servers send, decode servers receive
VLLM_KV_CONNECTOR = "NixlConnector"


@dataclass
class Launch:
    """One engine's launch of the plan: the command of the head node and, for a multi-node group, of
    the others; or why the engine cannot run the plan (`refused`)."""

    engine: str
    name: str
    refused: str = ""
    head: list[str] = field(default_factory=list)       # shell words after the program, quoted
    worker: list[str] = field(default_factory=list)     # the other nodes' (empty: one node)
    program: str = ""
    servers: int = 1                                    # independent copies of this group behind a load balancer
    pool: str | None = None                             # a disaggregated plan's pool (prefill, decode)
    model_arg: bool = True                              # the model follows the program (SGLang names it by --model-path)
    extra: dict | None = None                           # TensorRT-LLM's LLM API options (its options file)
    nodes: int = 1                                      # nodes one copy spans
    cards: int = 0
    notes: list[str] = field(default_factory=list)
    options: dict = field(default_factory=dict)         # the layout's options as the engine names them


def _words(opts: dict) -> list[str]:
    """Options as shell words: `--flag value`, a true switch alone, a false one left out."""
    out = []
    for k, v in opts.items():
        if v is True:
            out.append(k)
        elif v is not False and v is not None:
            # a shell expansion the writer made ("$HEAD_ADDR") stays as written; anything else is quoted
            word = v if isinstance(v, str) and v.startswith(SHELL_EXPANSION) else shlex.quote(str(v))
            out.append(f"{k} {word}")
    return out


def memory_share(plan: Plan, engine: str = "vllm", tp: int = 1) -> tuple[float, str]:
    """The engine's share of each card for weights + KV (vLLM --gpu-memory-utilization, SGLang
    --mem-fraction-static): the catalog's share the plans are sized with (by TP where the engine sets it
    so), raised to what the plan's card holds when it needs more (never past 0.95)."""
    ks = plan.kv_shares.get(engine) or {}
    share = float((ks.get("by_tp") or {}).get(tp) or ks.get("v") or 0.9)
    need_gb = plan.figures.get("per_card_gb")
    why = f"{ENGINE_NAMES[engine]}'s share of the card in the catalog the plans are sized with (catalog/engines.yaml {engine}.kv_share)"
    if need_gb and plan.memory_gb:
        need = math.ceil(need_gb / plan.memory_gb * 100) / 100
        if need > share:
            why = (f"the plan holds {need_gb:.1f} GB of each {plan.memory_gb:g} GB card (weights, KV cache and "
                   f"activations at its concurrency): more than {ENGINE_NAMES[engine]}'s {share:.2f} default")
            share = min(need, VLLM_SHARE_MAX)
        else:
            why += f"; the plan holds {need_gb:.1f} GB of each {plan.memory_gb:g} GB card, {need:.2f} of it"
    return share, why


def batch_cap(plan: Plan, ranks: int) -> tuple[int, str]:
    """Sequences each engine rank runs at once: the plan's concurrency over the ranks that share it."""
    w = plan.workload
    total = plan.figures.get("concurrency") or w.concurrency
    if getattr(w, "requests_per_s", None) and plan.figures.get("max_concurrency"):
        total = int(plan.figures["max_concurrency"])
        return max(1, math.ceil(total / ranks)), (f"the {total:,} sequences the plan's KV cache holds, over {ranks} rank"
                                                  f"{'s' if ranks > 1 else ''} (requests arrive at a rate, so the batch varies)")
    return max(1, math.ceil(total / ranks)), f"the workload's {total:,} sequences at once, over {ranks} rank{'s' if ranks > 1 else ''}"


def vllm(plan: Plan, lay: Layout | None = None, pool: str | None = None) -> Launch:
    """`vllm serve` for the plan (or one pool of a disaggregated plan): one command per node of a replica
    group (multi-node: the head node's and the others', by NODE_RANK and HEAD_ADDR)."""
    el = engine_layout(lay or plan.layout, "vllm")
    out = Launch("vllm", ENGINE_NAMES["vllm"] + (f" {pool} pool" if pool else ""), program="vllm serve", pool=pool)
    if isinstance(el, str):
        out.refused = el
        return out
    w = plan.workload
    tp, pp, dp = el.options["--tensor-parallel-size"], el.options["--pipeline-parallel-size"], el.options["--data-parallel-size"]
    share, share_why = memory_share(plan, "vllm")
    seqs, seqs_why = batch_cap(plan, dp * el.servers)
    opts = dict(el.options)
    opts.update({"--max-model-len": w.context_tokens, "--max-num-seqs": seqs, "--gpu-memory-utilization": f"{share:.2f}",
                 "--kv-cache-dtype": KV_DTYPE["vllm"][w.kv_precision]})
    q = _quantisation(plan)
    if q:
        opts["--quantization"] = q
    if pool:
        kv = {"kv_connector": VLLM_KV_CONNECTOR, **POOL_FLAGS["vllm"][pool]}
        opts["--kv-transfer-config"] = json.dumps(kv, separators=(",", ":"))
        out.notes.append(f"--kv-transfer-config: the {pool} pool's side of the KV transfer ({VLLM_KV_CONNECTOR}, "
                         f"kv_role {kv['kv_role']}); a P/D-aware router sends each request to a prefill server, "
                         "then to a decode server (vLLM ships none in its package: llm-d's or vllm-router)")
    opts.update({"--served-model-name": plan.name, "--host": "0.0.0.0", "--port": PORT})
    out.options, out.servers, out.cards = el.options, el.servers, el.cards
    out.nodes = math.ceil(el.cards / plan.gpus_per_node)
    out.notes += [f"--gpu-memory-utilization {share:.2f}: {share_why}", f"--max-num-seqs {seqs}: {seqs_why}",
                  f"--max-model-len {w.context_tokens}: the workload's context_tokens",
                  _kv_note(plan, "vllm"), *_quant_notes(plan, q)]
    if out.nodes == 1:
        out.head = _words(opts)
        return out
    if tp * pp <= plan.gpus_per_node:
        # data-parallel ranks over nodes (vLLM "Data Parallel Deployment"): each node runs its share of the
        # ranks; the head node also runs the API server, the others are headless
        local = plan.gpus_per_node // (tp * pp)
        multi = {"--data-parallel-size-local": local, "--data-parallel-address": '"$HEAD_ADDR"',
                 "--data-parallel-rpc-port": DP_RPC_PORT}
        # the last node of an uneven split runs the ranks left (5 ranks, 2 a node: 2, 2, 1)
        last = local if dp % local == 0 else f'"$(({dp} - NODE_RANK * {local} < {local} ? {dp} - NODE_RANK * {local} : {local}))"'
        out.head = _words({**opts, **multi})
        out.worker = _words({**opts, **multi, "--data-parallel-size-local": last,
                             "--data-parallel-start-rank": f'"$((NODE_RANK * {local}))"', "--headless": True})
        out.notes.append(f"{dp} data-parallel ranks, {local} on each node; the head node (NODE_RANK 0) serves the API")
        return out
    if dp > 1:
        out.refused = "vLLM is not launched here with data-parallel ranks whose TP x PP group spans nodes"
        return out
    # one TP x PP group over nodes: torch.distributed across them, the head node serving the API
    multi = {"--nnodes": out.nodes, "--node-rank": '"$NODE_RANK"', "--master-addr": '"$HEAD_ADDR"', "--master-port": MASTER_PORT}
    out.head = _words({**opts, **multi})
    out.worker = _words({**opts, **multi, "--headless": True})
    out.notes.append(f"one TP {tp} x PP {pp} group over {out.nodes} nodes; the head node (NODE_RANK 0) serves the API")
    return out


def _quantisation(plan: Plan) -> str | None:
    w = plan.workload
    shipped = set(w.model.precision.values())
    if not w.precision or w.precision in shipped:
        return None
    return ONLINE_QUANT.get(w.precision)


def _quant_notes(plan: Plan, q: str | None) -> list[str]:
    w = plan.workload
    shipped = "/".join(dict.fromkeys(w.model.precision.values()))
    if not w.precision or w.precision in shipped.split("/"):
        return [f"weights as the checkpoint ships them ({shipped}): the engine reads the precision from its config"]
    if q:
        return [f"--quantization {q}: the {shipped} checkpoint quantised to {w.precision} as it loads (online)"]
    return [f"the plan has {w.precision} weights: load a checkpoint quantised to {w.precision} (replace MODEL); "
            f"the engine reads its quantisation method from the checkpoint's config"]


def _kv_note(plan: Plan, engine: str) -> str:
    kv = plan.workload.kv_precision
    return (f"KV cache {kv}: '{KV_DTYPE[engine][kv]}'" +
            (" (the model's own 16-bit type)" if KV_DTYPE[engine][kv] == "auto" else ""))


def layout_of(plan: Plan, engine: str) -> EngineLayout | str:
    return engine_layout(plan.layout, engine)


def bench(plan: Plan) -> dict:
    """`vllm bench serve` at the workload's lengths and its concurrency (or request rate), with the
    service level as goodput, and the figures the memo expects."""
    w = plan.workload
    opts = {"--backend": "openai", "--base-url": '"${BASE_URL:-http://localhost:8000}"', "--model": plan.name,
            "--tokenizer": plan.model_repo, "--dataset-name": "random", "--random-input-len": w.prompt_tokens,
            "--random-output-len": w.output_tokens, "--ignore-eos": True}
    load = (f"{w.requests_per_s:g} requests/s (Poisson arrivals)" if getattr(w, "requests_per_s", None)
            else f"{w.concurrency} requests at once")
    if getattr(w, "requests_per_s", None):
        opts["--request-rate"] = f"{w.requests_per_s:g}"
        prompts = max(200, math.ceil(w.requests_per_s * 120))
    else:
        opts["--max-concurrency"] = w.concurrency
        prompts = max(200, w.concurrency * 10)
    opts["--num-prompts"] = prompts
    sl = plan.service_level
    goodput = [f"{k}:{sl[k + '_ms']:g}" for k in ("ttft", "tpot") if sl.get(k + "_ms")]
    words = _words(opts)
    if goodput:
        words.append("--goodput " + " ".join(goodput))
    words += ["--percentile-metrics ttft,tpot,itl,e2el", "--metric-percentiles 50,90,99", "--save-result",
              "--result-filename bench-result.json"]
    f = plan.figures
    expected = [(label, _fmt(f.get(key), unit)) for label, key, unit in (
        ("time to first token", "ttft_ms", "ms"), ("time per output token", "tpot_ms", "ms"),
        ("output tokens per second, all users", "tokens_per_s", "tokens/s"),
        ("output tokens per second, each user", "tokens_per_s_per_user", "tokens/s"),
        ("cost per million output tokens", "usd_per_million_tokens", "$")) if f.get(key) is not None]
    return {"words": words, "load": load, "prompts": prompts, "expected": expected,
            "service_level": [f"{k.upper()} at most {sl[k + '_ms']:g} ms" for k in ("ttft", "tpot") if sl.get(k + "_ms")]}


def _fmt(v, unit: str) -> str:
    if unit == "$":
        return f"${v:,.3f}"
    return f"{v:,.1f} {unit}" if v < 100 else f"{v:,.0f} {unit}"
