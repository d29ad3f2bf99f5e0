"""A given layout is checked against what the workload allows; cache entries that were edited are
rebuilt; rule and grid files whose keys have the wrong type are refused with one line (issue 18)."""
import json
import os
import subprocess
import sys

from advisor.shell.cli import main

from conftest import EXAMPLES, ROOT, refuse


def workload(tmp_path, text):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    return str(f)


def test_a_given_layout_cannot_exceed_max_gpus(capsys, tmp_path):
    f = workload(tmp_path, "mode: inference\nmodel: llama-3.1-70b\nlayout: {tp: 8, pp: 1, dp: 4}\nconstraints: {max_gpus: 8}\n")
    refuse(capsys, ["recommend", f], "w.yaml:3: layout: TP 8 x PP 1 x DP 4 is 32 GPUs, more than constraints.max_gpus (8)")


def test_a_given_layout_within_max_gpus_is_evaluated(capsys, tmp_path):
    f = workload(tmp_path, "mode: inference\nmodel: llama-3.1-70b\nlayout: {tp: 4, pp: 1, dp: 2}\n"
                           "constraints: {max_gpus: 8, gpus: [h100]}\n")
    assert main(["estimate", f, "--format", "json"]) == 0
    c = json.loads(capsys.readouterr().out)["candidates"][0]
    assert (c["tp"], c["pp"], c["dp"], c["count"]) == (4, 1, 2, 8)


def test_more_pipeline_stages_than_layers_is_refused(capsys, tmp_path):
    f = workload(tmp_path, "mode: inference\nmodel: llama-3.1-70b\nlayout: {tp: 1, pp: 1000, dp: 1}\n")
    refuse(capsys, ["estimate", f], "w.yaml:3: layout.pp: 1,000 pipeline stages, but llama-3.1-70b has 80 layers")


def test_tensor_parallelism_wider_than_a_node_holds_nothing(capsys, tmp_path):
    f = workload(tmp_path, "mode: inference\nmodel: llama-3.1-70b\nlayout: {tp: 16, pp: 1, dp: 1}\n"
                           "constraints: {gpus: [h100, l40s]}\n")
    assert main(["estimate", f, "--format", "json"]) == 0
    cands = json.loads(capsys.readouterr().out)["candidates"]
    assert [c["fits"] for c in cands] == [False, False]
    assert all("TP 16 spans more than the 8 GPUs of one node" in c["reason"] for c in cands), cands


def test_replaces_must_be_one_id(capsys, tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    for value in ("[must-fit-in-memory]", "5"):
        (rules / "r.yaml").write_text(
            "rules:\n  - id: mine\n    title: t\n    source: [K01]\n    replaces: " + value
            + "\n    when: {workload.mode: inference}\n    then: {note: {text: hi}}\n")
        for argv in (["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(rules)], ["rules", "list", str(rules)]):
            refuse(capsys, argv, "r.yaml:5: replaces: replaces names the id of the shipped rule this one replaces")


def test_a_number_as_a_sweep_field_is_refused(capsys, tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(f"base: {EXAMPLES / 'chat-assistant.yaml'}\nvary:\n  5: [1, 2]\n")
    refuse(capsys, ["sweep", str(grid), "--out", str(tmp_path / "t.csv")], "g.yaml:3: vary.5: 5 is not a field name")
    assert not (tmp_path / "t.csv").exists()


def _h100_memory(cache_dir) -> float:
    code = "from advisor.inputs import catalog; print(catalog.default().gpu('h100').num('memory_gb'))"
    env = {**os.environ, "GPU_ADVISOR_CACHE": str(cache_dir)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return float(out.stdout)


def test_an_edited_cache_entry_is_rebuilt(tmp_path):
    cache_dir = tmp_path / "cache"
    assert _h100_memory(cache_dir) == 80.0           # builds the entry
    (entry,) = (cache_dir / "catalog").glob("*.json")
    text = entry.read_text(encoding="utf-8")
    edited = text.replace('["memory_gb", 80, ["MLENG_ACC"', '["memory_gb", 8000, ["MLENG_ACC"', 1)
    assert edited != text
    entry.write_text(edited, encoding="utf-8")       # still valid JSON, same key: only its digest tells
    assert _h100_memory(cache_dir) == 80.0
    assert entry.read_text(encoding="utf-8") == text  # and it was written again as built
