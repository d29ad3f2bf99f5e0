"""`gpu-advisor deploy` (and `recommend --deploy DIR`): the launch files of a plan, written into a folder.

plan.py reads the plan from the decision record (its layout as the one `Layout` value); serving.py
turns it into each engine's command (the layout's options declared in advisor/inputs/parallel.py) and
the benchmark that checks it; this module prepares every value the templates under templates/deploy/
place and writes the folder (folder.py: nothing the user wrote is replaced). docs/deploy.md lists the
files.
"""
from __future__ import annotations

from pathlib import Path

from advisor.shell.deploy import engines, launchers, serving, training
from advisor.shell.deploy.folder import render, write_folder
from advisor.shell.deploy.plan import Plan, read_plan

__all__ = ["write", "read_plan", "files_for"]

PARAMS = {
    "NODE_RANK": "this node's rank in the group: 0 on the head node, then 1, 2, ... on the others",
    "HEAD_ADDR": "the head node's IP address, reachable from every node of the group",
    "BASE_URL": "where bench.sh reaches the server (default http://localhost:8000)",
    "HF_TOKEN": "a Hugging Face token, for models whose repository asks for one",
}


def write(rec: dict, catalog, w, out: str | Path, force: bool = False, candidate: int | None = None) -> tuple[Plan, list[Path]]:
    """Write the launch folder of the record's plan; returns the plan and the files written."""
    plan = read_plan(rec, catalog, w, candidate)
    files = files_for(plan)
    return plan, write_folder(Path(out), files, force)


def files_for(plan: Plan) -> dict[str, str]:
    """Every file of the folder, name -> text."""
    listing, files, sections = [], {}, []
    launches = engines.launches(plan) if plan.serving else [training.torchtitan(plan)]
    if all(x.refused for x in launches):
        from advisor.base.errors import InputError, Problem
        raise InputError(Problem(f"no engine or launcher this tool writes files for can run the plan ({plan.notation} on "
                                 f"{plan.gpu_name}): " + "; ".join(f"{x.name}: {x.refused}" for x in launches), "deploy"))
    for x in launches:
        name = script_name(plan, x)
        sections.append(_section(plan, x, name))
        if x.refused:
            continue
        files[name] = render("serve.sh.j2", _serve_context(plan, x))
        if x.extra is not None:
            files[engines.TRTLLM_OPTIONS] = render("trtllm-options.yaml.j2", {"plan_line": _plan_line(plan), "o": x.extra})
            listing.append({"name": engines.TRTLLM_OPTIONS, "what": f"TensorRT-LLM's LLM API options, read by `{name}`",
                            "where": "beside it"})
        listing.append({"name": name, "what": f"starts {x.name} with the plan's layout and " +
                        ("memory settings" if plan.serving else "batch, checkpointing and checkpoint interval"),
                        "where": _where(x)})
    sg = [x for x in launches if x.engine == "sglang" and x.pool and not x.refused]
    if len(sg) == 2:
        files["router-sglang.sh"] = render("router.sh.j2", {"plan_line": _plan_line(plan), "port": ROUTER_PORT})
        listing.append({"name": "router-sglang.sh", "what": "SGLang's router for the two pools (sglang-router, "
                        "`--pd-disaggregation`): each request prefilled on one pool, decoded on the other",
                        "where": f"any machine that reaches both pools; clients and bench.sh use it (port {ROUTER_PORT})"})
    check = None
    if plan.serving:
        b = serving.bench(plan)
        files["bench.sh"] = render("bench.sh.j2", {**b, "port": serving.PORT})
        listing.append({"name": "bench.sh", "what": "the check: `vllm bench serve` at the workload's lengths and load",
                        "where": "any machine that reaches the server, once it answers"})
        w = plan.workload
        check = {**b, "lengths": f"{w.prompt_tokens:,} prompt and {w.output_tokens:,} output tokens",
                 "error": "The estimates carry the speed model's error (the memo's range); a measured figure well "
                          "outside it means the plan's assumptions do not hold on this machine: check the engine "
                          "version, the settings above and the load."}
    # SkyPilot and Kubernetes run the first engine (the plan's own when it can) whose every pool is written
    engine = next((x.engine for x in launches if not any(y.refused for y in launches if y.engine == x.engine)), None)
    if engine:
        side = {engines.TRTLLM_OPTIONS: files[engines.TRTLLM_OPTIONS]} if engine == "trtllm" else None
        files.update(_where_it_runs(plan, [x for x in launches if x.engine == engine], listing, side))
    listing.insert(0, {"name": "README.md", "what": "this file", "where": "(read first)"})
    multi = any(x.worker for x in launches)
    params = [{"name": k, "meaning": v} for k, v in PARAMS.items() if multi or k not in ("NODE_RANK", "HEAD_ADDR")]
    files["README.md"] = render("README.md.j2", {
        "title": f"Launch files: {plan.name}", "plan_line": _plan_line(plan), "summary": _summary(plan),
        "files": listing, "params": params, "launches": sections, "check": check, "assumptions": _assumptions(plan)})
    return dict(sorted(files.items()))


def script_name(plan: Plan, x: serving.Launch) -> str:
    return f"{'serve' if plan.serving else 'train'}-{x.engine}" + (f"-{x.pool}" if x.pool else "") + ".sh"


#: how each engine is installed on a SkyPilot node (the release whose options the tests check)
INSTALL = {"torchtitan": "pip install 'torchtitan==0.3.0'", "vllm": "pip install 'vllm==0.32.0'",
           "sglang": "pip install 'sglang==0.5.23'", "trtllm": "pip install 'tensorrt-llm==1.2.1'"}


def _where_it_runs(plan: Plan, group: list[serving.Launch], listing: list, written: dict | None = None) -> dict[str, str]:
    """skypilot.yaml (one per pool of a disaggregated plan) and kubernetes.yaml for one engine's launches."""
    import shlex
    files, k_groups = {}, []
    # a file the command reads (TensorRT-LLM's options) is written by the pod's command first: the container
    # has only the image
    prelude = "".join(f"printf '%s' {shlex.quote(text)} > {name}; " for name, text in (written or {}).items())
    for x in group:
        script = script_name(plan, x)
        sky_file = "skypilot" + (f"-{x.pool}" if x.pool else "") + ".yaml"
        per_node = min(plan.gpus_per_node, x.cards)
        spot = bool(plan.offer.kind == "spot" or plan.workload.constraints.spot)
        sky = launchers.skypilot(plan, script, x.engine, x.nodes, per_node, x.servers, plan.serving, INSTALL[x.engine],
                                 spot_bucket=spot and not plan.serving)
        sky["setup_lines"], sky["run_lines"] = sky["setup"].splitlines(), sky["run"].splitlines()
        if x.pool:
            sky["name"] += f"-{x.pool}"
        notes = [n for n in (sky["accelerator_missing"],) if n]
        if plan.offer.provider and not plan.offer.cloud:
            notes.append(f"the plan's offer is {plan.offer.provider}'s, not a SkyPilot cloud: SkyPilot picks the cheapest cloud it has")
        files[sky_file] = render("skypilot.yaml.j2", {"title": f"{x.name} {'server' if plan.serving else 'training'}: {plan.name}", "plan_line": _plan_line(plan),
                                                       "name": sky["name"], "sky": sky, "notes": notes,
                                                       "bucket_name": f"{sky['name']}-checkpoints"})
        where = ("`sky launch` (or `sky serve up`) from this folder" if plan.serving else
                 "`sky jobs launch skypilot.yaml` from this folder: a managed job, relaunched after a preemption, "
                 "TorchTitan resuming from the last checkpoint" if spot else "`sky launch` from this folder")
        listing.append({"name": sky_file, "what": f"a SkyPilot task running `{script}` on {x.nodes} node{'s' if x.nodes > 1 else ''} "
                        f"of {per_node} x {plan.accelerator or plan.gpu_name}" + (", checkpoints in a bucket mounted at "
                        f"{launchers.CHECKPOINT_MOUNT}" if sky["bucket"] else ""), "where": where})
        words = prelude + f"exec {_command(plan, x)} "
        app = f"{launchers.name_of(plan)}-{x.engine}" + (f"-{x.pool}" if x.pool else "")
        k_groups.append(launchers.kubernetes_group(plan, x.engine, app, words + " ".join(x.head),
                                                   (words + " ".join(x.worker)) if x.worker else None, x.nodes, per_node,
                                                   x.servers, plan.serving))
    k = launchers.kubernetes(plan, k_groups, None if plan.serving else launchers.CHECKPOINT_MOUNT)
    kinds = ", ".join(f"a LeaderWorkerSet of {g['nodes']}-pod groups" if g["multi"] else "a Deployment" if plan.serving
                      else "a Job" for g in k_groups)
    listing.append({"name": "kubernetes.yaml", "what": f"{kinds}, with the GPUs of a node per pod, /dev/shm and a model cache "
                    "volume" + (", and a Service per group" if plan.serving else ", checkpoints on a volume"),
                    "where": "`kubectl apply -f kubernetes.yaml`"})
    files["kubernetes.yaml"] = render("kubernetes.yaml.j2", {"title": f"{group[0].name.split(' ')[0]} {'servers' if plan.serving else 'training'}: {plan.name}",
                                                              "plan_line": _plan_line(plan), "k": k})
    return files


def _plan_line(plan: Plan) -> str:
    row = "the recommendation" if plan.row == 1 else f"row {plan.row} of the plan table"
    return f"{row}, {plan.count} x {plan.gpu_name} on {plan.nodes} node{'s' if plan.nodes > 1 else ''}, {plan.notation}"


def _summary(plan: Plan) -> str:
    from advisor.inputs.parallel import describe
    engine = serving.ENGINE_NAMES.get(plan.engine or "", plan.engine or "no engine named")
    words = describe(plan.layout, plan.gpus_per_node, training=not plan.serving)
    return (f"The model ({plan.model_repo}) is laid out as {plan.notation}: {words}. "
            + (f"The plan's figures are {engine}'s" + (f": {plan.engine_why}" if plan.engine_why else "") + "."
               if plan.serving else ""))


def _where(x: serving.Launch) -> str:
    where = f"each of the {x.nodes} nodes of a group, with NODE_RANK and HEAD_ADDR set" if x.worker else "the node with the GPUs"
    return where + (f"; {x.servers} copies behind a load balancer" if x.servers > 1 else "")


def _section(plan: Plan, x: serving.Launch, file: str) -> dict:
    shape = (f"{x.cards} card{'s' if x.cards > 1 else ''} per server on {x.nodes} node{'s' if x.nodes > 1 else ''}"
             + (f", {x.servers} servers behind a load balancer" if x.servers > 1 else "")
             + ("; " + ", ".join(f"{k} {v}" if v is not True else k for k, v in x.options.items()) if x.options else ""))
    notes = list(x.notes)
    if plan.engine and x.engine != plan.engine and not x.refused:
        notes.append(f"the memo's figures are {serving.ENGINE_NAMES.get(plan.engine, plan.engine)}'s: {x.name} runs the same "
                     f"layout, its speed may differ")
    return {"name": x.name, "own": x.engine == plan.engine, "refused": x.refused, "file": file, "shape": shape,
            "notes": notes}


def _serve_context(plan: Plan, x: serving.Launch) -> dict:
    where = (f"Run on every node of a {x.nodes}-node group: NODE_RANK=0 on the head node." if x.worker
             else "Run on the node with the GPUs.")
    if x.servers > 1:
        where += f" The plan runs {x.servers} such servers behind a load balancer."
    return {"title": f"{x.name} {'server' if plan.serving else 'training'}: {plan.name}", "plan_line": _plan_line(plan), "where": where,
            "param_lines": [f"HF_TOKEN: {PARAMS['HF_TOKEN']}"] + _model_note(plan),
            "multi": bool(x.worker), "rank_help": _rank_help(x.nodes), "command": _command(plan, x),
            "head": x.head, "worker": x.worker}


#: the port of SGLang's router in front of a disaggregated plan's pools
ROUTER_PORT = 8080


def _command(plan: Plan, x: serving.Launch) -> str:
    """The program and, for a server that takes it so, the model it serves (SGLang's and torchrun's are options)."""
    return f"{x.program} {plan.model_repo}" if plan.serving and x.model_arg else x.program


def _rank_help(nodes: int) -> str:
    others = "1 on the other" if nodes == 2 else f"1 to {nodes - 1} on the others"
    return f"set NODE_RANK to 0 on the head node and {others}"


def _model_note(plan: Plan) -> list[str]:
    """A model the catalog names no Hugging Face repository for: the folder says to put the checkpoint's in."""
    if "/" in plan.model_repo:
        return []
    return [f"{plan.model_repo}: the catalog names no Hugging Face repository for this model; replace it with "
            "the checkpoint's repository or local path"]


def _assumptions(plan: Plan) -> list[str]:
    w = plan.workload
    out = [f"{plan.count} x {plan.gpu_name} ({plan.memory_gb:g} GB each, {plan.gpus_per_node} per node)", *_model_note(plan)]
    if plan.offer.provider:
        out.append(f"priced on {plan.offer.provider}" + (f" {plan.offer.instance}" if plan.offer.instance else "")
                   + (f" ({plan.offer.kind})" if plan.offer.kind else "")
                   + (f" at ${plan.offer.usd_per_hour:,.2f} per instance-hour" if plan.offer.usd_per_hour else ""))
    if plan.serving:
        out.append(f"requests of {w.prompt_tokens:,} prompt and {w.output_tokens:,} output tokens, a context of "
                   f"{w.context_tokens:,} tokens, " + (f"{w.requests_per_s:g} requests/s" if w.requests_per_s
                                                       else f"{w.concurrency} at once"))
        out.append(f"KV cache in {w.kv_precision}; weights in {w.precision or 'the precision the checkpoint ships'}")
    return out
