"""Helpers of the deploy tests (tests/test_deploy.py, tests/test_deploy_engines.py): the engines' parsers
rebuilt from their own argument definitions (tests/data/engine-args/, extracted from their released wheels
by tests/engine_args.py), the written scripts run by bash with stand-in programs that record their
arguments, and SkyPilot's and Kubernetes' own validators (skipped when the packages are absent)."""
from __future__ import annotations


import argparse
import copy
import json
import os
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


def _recommend_json(path, capsys) -> str:
    capsys.readouterr()
    assert main(["recommend", str(path), "--format", "json"]) == 0
    return capsys.readouterr().out



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


DEP16 = ("mode: inference\nmodel: deepseek-v3\nconcurrency: 256\nlayout: {tp: 16, ep: 16, attention_dp: 16}\n"
         "constraints: {gpus: [h200]}\n")


# Disaggregated pools hand the KV cache across instances, and the planner prices traffic across instances
# only on offers that state RDMA (catalog/fabric.yaml, issue 46): on the cheapest H100 offer (no fabric
# stated) the plan stays colocated (TP 8 x DP 7), so the workload rents from Nebius (InfiniBand).
LONG_PROMPT = ("mode: inference\nmodel: llama-3.1-70b\nprompt_tokens: 32768\noutput_tokens: 1000\ncontext_tokens: 34000\n"
               "concurrency: 64\nlatency: {tpot_ms: 40}\nconstraints: {gpus: [h100], providers: [Nebius]}\n")



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
