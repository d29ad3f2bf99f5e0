"""The training launch of a plan: torchrun running TorchTitan (torchtitan.train, 0.3.0) with the plan's
TP, PP, DP (replicated, or sharded as FSDP when the plan shards its states or spreads experts), EP,
micro and global batch, activation checkpointing and checkpoint interval. Values only: the template
serve.sh.j2 places them (a training script is one command too)."""
from __future__ import annotations

import math

from advisor.shell.deploy.plan import Plan
from advisor.shell.deploy.serving import MASTER_PORT, Launch, _words

#: catalog model -> TorchTitan's own model and config (torchtitan/models/*/config_registry.py); a model it
#: has no config for is built from its Hugging Face repository by the transformers backend
TORCHTITAN_CONFIGS = {"llama-3.1-8b": ("llama3", "llama3_8b"), "llama-3.1-70b": ("llama3", "llama3_70b"),
                      "llama-3.1-405b": ("llama3", "llama3_405b"), "gpt-oss-20b": ("gpt_oss", "gpt_oss_20b"),
                      "gpt-oss-120b": ("gpt_oss", "gpt_oss_120b"), "deepseek-v3": ("deepseek_v3", "deepseek_v3_671b"),
                      "qwen3-0.6b": ("qwen3", "qwen3_0_6b"), "qwen3-1.7b": ("qwen3", "qwen3_1_7b"),
                      "qwen3-14b": ("qwen3", "qwen3_14b"), "qwen3-32b": ("qwen3", "qwen3_32b"),
                      "qwen3-30b-a3b": ("qwen3", "qwen3_30b_a3b")}
HF_BACKEND = ("transformers_modeling_backend", "transformers_modeling_backend_full")
HF_BACKEND_MOE = ("transformers_modeling_backend", "transformers_modeling_backend_full_moe")
#: the checkpoint interval of an on-demand plan: TorchTitan's own default (CheckpointManager.Config.interval)
DEFAULT_INTERVAL_STEPS = 500


def torchtitan(plan: Plan) -> Launch:
    """torchrun + TorchTitan for a training plan, or why it is not written."""
    w, lay, f = plan.workload, plan.layout, plan.figures
    out = Launch("torchtitan", "TorchTitan", program="torchrun")
    if w.method != "full":
        out.refused = (f"the plan fine-tunes with {w.method}; TorchTitan 0.3.0 trains full weights, and no other launcher "
                       "is written for LoRA or QLoRA yet")
        return out
    module, config = TORCHTITAN_CONFIGS.get(w.model.id) or (HF_BACKEND_MOE if w.model.num("experts") else HF_BACKEND)
    dp, micro = lay.dp, f.get("micro_batch") or w.micro_batch
    micro_batches = f.get("micro_batches") or 1
    global_batch = f.get("global_batch") or w.global_batch or micro * micro_batches * dp
    zero = f.get("zero_stage") if f.get("zero_stage") is not None else w.zero_stage
    # TorchTitan's expert ranks are drawn from the sharded data-parallel ranks: an EP plan shards (FSDP)
    shard = zero >= 1 or lay.ep > 1
    opts = {"--module": module, "--config": config}
    if module == HF_BACKEND[0]:
        opts["--hf_model"] = plan.model_repo if "/" in plan.model_repo else '"${MODEL:?set MODEL to the Hugging Face repository of the model}"'
    opts.update({"--parallelism.tensor_parallel_degree": lay.tp, "--parallelism.pipeline_parallel_degree": lay.pp,
                 "--parallelism.data_parallel_shard_degree" if shard else "--parallelism.data_parallel_replicate_degree": dp})
    if shard:
        opts["--parallelism.data_parallel_replicate_degree"] = 1
    else:
        opts["--parallelism.data_parallel_shard_degree"] = 1
    if lay.ep > 1:
        opts["--parallelism.expert_parallel_degree"] = lay.ep
    virtual = f.get("virtual_stages") or 1
    if lay.pp > 1:
        opts["--parallelism.pipeline_parallel_microbatch_size"] = micro
        opts["--parallelism.pipeline_parallel_schedule"] = "Interleaved1F1B" if virtual > 1 else "1F1B"
        layers = w.model.num("layers")
        if virtual > 1 and layers:
            opts["--parallelism.pipeline_parallel_layers_per_stage"] = max(1, math.ceil(layers / (lay.pp * virtual)))
    # a data-parallel rank's batch per step: its micro-batches (pipelined, or accumulated) of `micro` sequences
    local = micro * micro_batches if lay.pp > 1 else micro
    opts.update({"--training.seq_len": w.context_tokens, "--training.local_batch_size": local,
                 "--training.global_batch_size": global_batch})
    steps = math.ceil(w.training_tokens / (global_batch * w.context_tokens)) if w.training_tokens else None
    if steps:
        opts["--training.steps"] = steps
    interval, interval_why = _interval(plan, steps)
    opts.update({"--checkpoint.enable": True, "--checkpoint.folder": '"${CHECKPOINT_DIR:-checkpoint}"',
                 "--checkpoint.interval": interval})
    ac = bool(f.get("activation_checkpointing") if f.get("activation_checkpointing") is not None else w.activation_checkpointing)
    out.options = {k: v for k, v in opts.items() if k.startswith("--parallelism.")}
    out.cards, out.nodes = plan.count, plan.nodes
    out.notes = _notes(plan, module, config, shard, zero, local, global_batch, steps, interval_why, ac)
    run = _words(opts) + [f"activation-checkpoint:{'full' if ac else 'none'}"]
    per_node = plan.cards_per_node
    if plan.nodes == 1:
        out.head = [f"--standalone --nproc-per-node {per_node}", "-m torchtitan.train", *run]
        return out
    out.head = [f"--nnodes {plan.nodes}", f"--nproc-per-node {per_node}", '--node-rank "$NODE_RANK"', '--master-addr "$HEAD_ADDR"',
                f"--master-port {MASTER_PORT}", "-m torchtitan.train", *run]
    out.worker = out.head
    return out


def _interval(plan: Plan, steps: int | None) -> tuple[int, str]:
    """Steps between checkpoints: a spot plan's interval (Young's, from the record) in steps; else TorchTitan's default."""
    spot = ((plan.figures.get("price") or {}).get("spot") or {})
    hours, job_h = spot.get("checkpoint_interval_hours"), plan.figures.get("step_hours")
    if hours and job_h and steps:
        n = max(1, int(hours / (job_h / steps)))
        return n, (f"every {n:,} steps: the spot plan's checkpoint interval of {hours:.1f} h (Young's, from the "
                   f"interruption rate and the checkpoint's write time) at {job_h / steps * 3600:.1f} s a step")
    return DEFAULT_INTERVAL_STEPS, f"every {DEFAULT_INTERVAL_STEPS} steps, TorchTitan's default (an on-demand plan)"


def _notes(plan, module, config, shard, zero, local, global_batch, steps, interval_why, ac) -> list[str]:
    lay, w = plan.layout, plan.workload
    out = [f"--module {module} --config {config}: " + ("TorchTitan's own definition of the model" if module != HF_BACKEND[0]
                                                       else "TorchTitan builds the model from its Hugging Face repository (transformers backend)"),
           ("data-parallel ranks sharded (FSDP, "
            + (f"the plan's ZeRO stage {zero}" if zero else "as TorchTitan draws expert ranks from them") + ")") if shard
           else f"{lay.dp} data-parallel replicas (the plan keeps a whole copy of the states on each, ZeRO 0)",
           f"--training.local_batch_size {local}, --training.global_batch_size {global_batch:,}: the plan's batch "
           f"(gradient accumulation fills the global batch)",
           f"--training.seq_len {w.context_tokens}: the workload's context_tokens",
           (f"--training.steps {steps:,}: the workload's {w.training_tokens:,.0f} training tokens" if steps
            else "--training.steps not set: the workload gives no training_tokens (TorchTitan's default applies)"),
           f"--checkpoint.interval: {interval_why}; CHECKPOINT_DIR is where checkpoints go (the bucket mount on spot)",
           f"activation checkpointing {'on (full)' if ac else 'off'}, as the plan sized the activations"]
    if (w.precision or "bf16") not in ("bf16", "fp32"):
        out.append(f"the plan's weights are {w.precision}; TorchTitan trains in bf16 mixed precision")
    return out
