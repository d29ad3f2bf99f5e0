"""Where a plan runs: the SkyPilot task (its accelerators per node, nodes, the offer's cloud and region,
spot with a checkpoint bucket for training) and the Kubernetes manifest (a Deployment for a one-node
group, a LeaderWorkerSet for a multi-node one; GPUs, shared memory, the model cache). Values only:
templates/deploy/skypilot.yaml.j2 and kubernetes.yaml.j2 place them."""
from __future__ import annotations

import math
import re

from advisor.shell.deploy.plan import Plan

#: the Kubernetes extended resource of each vendor's device plugin
GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "habana.ai/gaudi", "google": "google.com/tpu"}
#: the engines' container images, at the release whose options the tests check (docs/deploy.md)
IMAGES = {("vllm", "nvidia"): "vllm/vllm-openai:v0.32.0", ("vllm", "amd"): "rocm/vllm:latest",
          ("sglang", "nvidia"): "lmsysorg/sglang:v0.5.23", ("sglang", "amd"): "lmsysorg/sglang:v0.5.23-rocm700",
          ("trtllm", "nvidia"): "nvcr.io/nvidia/tensorrt-llm/release:1.2.1",
          ("torchtitan", "nvidia"): "nvcr.io/nvidia/pytorch:25.10-py3", ("torchtitan", "amd"): "rocm/pytorch:latest"}
#: shared memory for NCCL and the engines' worker processes (vLLM's and SGLang's docs: --shm-size of a few GB
#: at least; 64 GiB is what their Kubernetes examples mount)
SHM = "64Gi"
CACHE_MOUNT = "/root/.cache/huggingface"
CHECKPOINT_MOUNT = "/checkpoints"
#: room for the model beside its checkpoint in the model cache (a download's temporary copy, tokenizer files)
CACHE_SLACK = 1.25


def name_of(plan: Plan) -> str:
    """A DNS-1123 name for the resources (lower case, digits and '-', at most 50 characters)."""
    n = re.sub(r"[^a-z0-9-]+", "-", plan.name.lower()).strip("-")[:50].strip("-")
    return n or "plan"


def cache_size_gi(plan: Plan) -> int:
    """The model cache volume, in GiB: the checkpoint (the catalog's size, else the record's weights in
    the plan's precision) and some room; 100 GiB when neither is known."""
    gb = plan.workload.model.num("checkpoint_gb") or plan.weights_gb
    if not gb:
        return 100
    return max(20, math.ceil(gb * 1e9 / 2 ** 30 * CACHE_SLACK / 10) * 10)


def skypilot(plan: Plan, script: str, engine: str, nodes: int, cards_per_node: int, servers: int, serving: bool,
             setup: str, spot_bucket: bool) -> dict:
    """The SkyPilot task's values: one server group (or the training job) on `nodes` nodes."""
    o = plan.offer
    # the engines' PyPI wheels are CUDA builds: on other GPUs the task runs in the engine's image instead
    image = None if plan.vendor == "nvidia" else IMAGES.get((engine, plan.vendor))
    if image:
        setup = f"echo 'the engine comes with the image {image}'"
    resources = {"image_id": f"docker:{image}" if image else None,
                 "accelerators": f"{plan.accelerator}:{cards_per_node}" if plan.accelerator else None,
                 "cloud": o.cloud, "region": o.region if o.cloud else None,
                 "use_spot": bool(o.kind == "spot" or plan.workload.constraints.spot),
                 "disk_size": max(256, cache_size_gi(plan) * 2), "ports": 8000 if serving else None}
    run = (f"export NODE_RANK=$SKYPILOT_NODE_RANK\n"
           f"export HEAD_ADDR=$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\n"
           f"bash {script}")
    return {"name": name_of(plan), "resources": resources, "num_nodes": nodes, "setup": setup, "run": run,
            "servers": servers if serving else None, "serving": serving,
            "bucket": CHECKPOINT_MOUNT if spot_bucket else None,
            "accelerator_missing": None if plan.accelerator else f"SkyPilot has no accelerator name for {plan.gpu_name}"}


def kubernetes_group(plan: Plan, engine: str, app: str, head: str, worker: str | None, nodes: int, cards_per_node: int,
                     servers: int, serving: bool) -> dict:
    """One group of the manifest (a server group, a pool, the training job): its container (image, GPUs of
    its node), its command on the head node and on the others, its copies; a LeaderWorkerSet when the
    group spans nodes."""
    container = {"image": IMAGES.get((engine, plan.vendor)) or IMAGES[(engine, "nvidia")], "gpus": cards_per_node,
                 "gpu_resource": GPU_RESOURCE.get(plan.vendor, "nvidia.com/gpu"), "port": 8000 if serving else None}
    # the group's rank and head address as LeaderWorkerSet gives them to each pod
    lws_env = "export NODE_RANK=$LWS_WORKER_INDEX HEAD_ADDR=$LWS_LEADER_ADDRESS; "
    return {"app": app, "engine": engine, "replicas": servers, "nodes": nodes, "multi": nodes > 1, "container": container,
            "head": (lws_env if nodes > 1 else "") + head, "worker": (lws_env + worker) if worker else None, "serving": serving}


def kubernetes(plan: Plan, groups: list[dict], checkpoint_mount: str | None = None) -> dict:
    """The manifest's values: its groups, shared memory and the model cache (shared by every pod of every
    group: ReadWriteMany when more than one pod mounts it)."""
    pods = sum(g["replicas"] * g["nodes"] for g in groups)
    return {"name": name_of(plan), "groups": groups, "any_multi": any(g["multi"] for g in groups),
            "access_mode": "ReadWriteMany" if pods > 1 else "ReadWriteOnce", "shm": SHM, "cache_mount": CACHE_MOUNT,
            "cache_gi": cache_size_gi(plan), "checkpoint_mount": checkpoint_mount, "checkpoint_gi": checkpoint_size_gi(plan)}


def checkpoint_size_gi(plan: Plan) -> int:
    """The checkpoint volume: room for the record's checkpoint (weights and optimizer states) kept twice (the
    last and the one being written); else four times the model cache."""
    spot = ((plan.figures.get("price") or {}).get("spot") or {})
    gb = spot.get("checkpoint_gb")
    if not gb:
        return cache_size_gi(plan) * 4
    return max(20, math.ceil(gb * 1e9 / 2 ** 30 * 2 / 10) * 10)
