"""`gpu-advisor deploy`: the training launch (torchrun + TorchTitan), SGLang's and TensorRT-LLM's serving
launches, and the engines a GPU does not run; checked as tests/test_deploy.py checks (tests/deploytools.py)."""
from __future__ import annotations


import json
from pathlib import Path

import pytest

from advisor.shell.cli import main
from deploytools import (ROOT, ARGS, Refused, engine_parser, run_script, sglang_serve,
                         deploy, _file, _recommend_json, sky_task, k8s_documents, torchtitan_args,
                         DEP16, LONG_PROMPT)


# --- (d) training -----------------------------------------------------------------------------------------

PP_TRAINING = ("mode: training\nmodel: llama-3.1-8b\ntraining_tokens: 1e9\ncontext_tokens: 4096\n"
               "layout: {tp: 8, pp: 2}\nconstraints: {gpus: [h100]}\n")
SPOT_TRAINING = "mode: training\nmodel: llama-3.1-8b\ntraining_tokens: 2e10\ncontext_tokens: 4096\nconstraints: {spot: true, gpus: [h100]}\n"


def test_a_two_node_pipeline_training_plan(tmp_path):
    out = deploy(tmp_path, _file(tmp_path, PP_TRAINING))
    for rank in ("0", "1"):
        [call] = run_script(out / "train-torchtitan.sh", tmp_path, NODE_RANK=rank, HEAD_ADDR="10.0.0.1")
        run, t = torchtitan_args(call)
        assert run == {"nnodes": "2", "nproc-per-node": "8", "node-rank": rank, "master-addr": "10.0.0.1", "master-port": "29500"}
        assert (t.module, t.config) == ("llama3", "llama3_8b")
        assert (t.__dict__["parallelism.tensor_parallel_degree"], t.__dict__["parallelism.pipeline_parallel_degree"]) == (8, 2)
        assert t.__dict__["training.seq_len"] == 4096 and t.__dict__["checkpoint.enable"] is True
    task, config = sky_task(out / "skypilot.yaml")
    [res] = list(task.resources)
    assert config["num_nodes"] == task.num_nodes == 2 and res.accelerators == {"H100": 8}
    docs = k8s_documents(out / "kubernetes.yaml")
    assert [d["spec"]["leaderWorkerTemplate"]["size"] for d in docs if d["kind"] == "LeaderWorkerSet"] == [2]


def test_a_spot_training_plan_checkpoints_to_a_bucket_at_its_interval(tmp_path, capsys):
    f = _file(tmp_path, SPOT_TRAINING)
    rec = json.loads(_recommend_json(f, capsys))
    r = rec["recommendation"]
    c = next(c for c in rec["estimate"]["candidates"] if c["gpu"] == r["gpu"])
    assert r["price"]["kind"] == "spot"
    out = deploy(tmp_path, f)
    [call] = run_script(out / "train-torchtitan.sh", tmp_path, CHECKPOINT_DIR="/checkpoints")
    run, t = torchtitan_args(call)
    steps = -(-20_000_000_000 // (c["global_batch"] * 4096))
    assert t.__dict__["training.steps"] == steps and t.__dict__["training.global_batch_size"] == c["global_batch"]
    assert t.__dict__["checkpoint.folder"] == "/checkpoints"
    # the record's checkpoint interval (Young's, hours) in steps of the plan's step time
    per_step_h = c["step_hours"] / steps
    assert t.__dict__["checkpoint.interval"] == int(c["price"]["spot"]["checkpoint_interval_hours"] / per_step_h)
    task, config = sky_task(out / "skypilot.yaml")
    [res] = list(task.resources)
    assert res.use_spot is True and config["file_mounts"]["/checkpoints"]["mode"] == "MOUNT"
    assert config["envs"]["CHECKPOINT_DIR"] == "/checkpoints"
    docs = k8s_documents(out / "kubernetes.yaml")
    job = next(d for d in docs if d["kind"] == "Job")
    mounts = {m["mountPath"] for m in job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert "/checkpoints" in mounts
    assert "sky jobs launch skypilot.yaml" in (out / "README.md").read_text()


def test_every_torchtitan_config_deploy_names_is_torchtitans():
    from advisor.shell.deploy.training import HF_BACKEND, HF_BACKEND_MOE, TORCHTITAN_CONFIGS
    registry = json.loads((ARGS / "torchtitan.json").read_text())["registry"]
    for module, config in [*TORCHTITAN_CONFIGS.values(), HF_BACKEND, HF_BACKEND_MOE]:
        assert config in registry[module], (module, config)



# --- (c) SGLang and TensorRT-LLM --------------------------------------------------------------------------

def test_the_rebuilt_sglang_parser_refuses_what_sglang_refuses():
    p, spec = engine_parser("sglang")
    assert spec["version"] == "0.5.23"
    ok = p.parse_args(["--model-path", "m", "--tp-size", "8", "--attn-dp-size", "8", "--disaggregation-mode", "prefill"])
    assert (ok.tp_size, ok.attn_dp_size, ok.disaggregation_mode) == (8, 8, "prefill")
    for bad in (["--tp-size", "eight"], ["--disaggregation-mode", "both"], ["--tensor-parallel"], ["--tp_size", "2"]):
        with pytest.raises(Refused):
            p.parse_args(bad)


def test_sglang_runs_the_dep16_plan_as_tp16_with_attention_dp_and_ep_over_2_nodes(tmp_path):
    out = deploy(tmp_path, _file(tmp_path, DEP16))
    for rank in ("0", "1"):
        [call] = run_script(out / "serve-sglang.sh", tmp_path, NODE_RANK=rank, HEAD_ADDR="10.0.0.1")
        a = sglang_serve(call)
        assert (a.tp_size, a.attn_dp_size, a.ep_size) == (16, 16, 16)
        assert (a.nnodes, a.node_rank, a.dist_init_addr) == (2, int(rank), "10.0.0.1:20000")
    assert "(the engine the plan was sized with)" in (out / "README.md").read_text().split("## SGLang")[1].splitlines()[0]


def test_sglang_pools_of_a_disaggregated_plan_and_their_router(tmp_path):
    out = deploy(tmp_path, _file(tmp_path, LONG_PROMPT))
    for pool in ("prefill", "decode"):
        [call] = run_script(out / f"serve-sglang-{pool}.sh", tmp_path, NODE_RANK="0", HEAD_ADDR="10.0.0.1")
        a = sglang_serve(call)
        assert (a.disaggregation_mode, a.disaggregation_transfer_backend) == (pool, "nixl")
    [call] = run_script(out / "router-sglang.sh", tmp_path, PREFILL_URL="http://p:8000", DECODE_URL="http://d:8000")
    assert call[:3] == ["python3", "-m", "sglang_router.launch_router"]
    assert call[call.index("--prefill") + 1] == "http://p:8000" and "--pd-disaggregation" in call


def test_trtllm_serve_of_the_chat_example_with_its_options_file(tmp_path):
    import yaml
    out = deploy(tmp_path, ROOT / "examples" / "chat-assistant.yaml")
    [call] = run_script(out / "serve-trtllm.sh", tmp_path)
    assert call[:2] == ["trtllm-serve", "openai/gpt-oss-120b"]
    opts = dict(zip(call[2::2], call[3::2]))
    assert (opts["--tp_size"], opts["--pp_size"], opts["--max_seq_len"]) == ("2", "1", "8192")
    assert opts["--extra_llm_api_options"] == "trtllm-extra-options.yaml"
    extra = yaml.safe_load((out / "trtllm-extra-options.yaml").read_text())
    assert extra == {"enable_attention_dp": False, "kv_cache_config": {"dtype": "auto", "free_gpu_memory_fraction": 0.9}}
    # the plan's own engine (TensorRT-LLM on H100) is the one SkyPilot and Kubernetes run; the pod writes the options file
    task, config = sky_task(out / "skypilot.yaml")
    assert "bash serve-trtllm.sh" in config["run"]
    dep = next(d for d in k8s_documents(out / "kubernetes.yaml") if d["kind"] == "Deployment")
    assert dep["spec"]["template"]["spec"]["containers"][0]["args"][0].startswith("printf '%s' ")


def test_an_engine_that_does_not_run_on_the_gpu_gets_no_script_and_the_readme_says_why(tmp_path):
    # constrained to MI300X (kimi-k3-serving, once this test's workload, now plans H200 under the fabric rules)
    f = _file(tmp_path, "mode: inference\nmodel: llama-3.1-70b\nconcurrency: 16\nconstraints: {gpus: [mi300x]}\n")
    out = deploy(tmp_path, f)
    assert not (out / "serve-trtllm.sh").exists() and (out / "serve-vllm.sh").exists()
    readme = (out / "README.md").read_text()
    assert "Not written: TensorRT-LLM does not run on AMD Instinct MI300X" in readme


def test_a_plan_no_engine_can_run_on_its_gpu_is_refused_and_says_why(tmp_path, capsys):
    # one 8-card node: MI300X is rented only from RunPod, whose Pods state no RDMA between them, so a layout
    # over two nodes has no price and no plan (exit 3); TP 4 x PP 2 inside one node has a plan no engine runs
    f = _file(tmp_path, "mode: inference\nmodel: deepseek-v3\nconcurrency: 64\nlayout: {tp: 4, pp: 2, ep: 2, attention_dp: 2}\n"
                        "constraints: {gpus: [mi300x]}\n")
    capsys.readouterr()
    assert main(["deploy", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no engine or launcher this tool writes files for can run the plan (TP 4 x PP 2 x DP 1, EP 2, attention DP 2 " \
           "on AMD Instinct MI300X 192GB)" in err
    assert "TensorRT-LLM does not run on AMD Instinct MI300X" in err and "EP 2 inside TP 4 is not a vLLM layout" in err
    assert "SGLang does not combine DP attention with pipeline stages" in err
    assert "Traceback" not in err and not (tmp_path / "o").exists()
