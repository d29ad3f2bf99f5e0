"""Notation (issue 46 item 10): vLLM's and SGLang's layout forms, read through `recommend` as the layouts
they mean (advisor/inputs/layoutinput.py read_engine_form)."""
import json

import pytest
import yaml

from advisor.shell.cli import main

BASE = {"mode": "inference", "model": "deepseek-v3", "precision": "fp8", "concurrency": 256, "prompt_tokens": 2000,
        "output_tokens": 500, "constraints": {"gpus": ["b200"]}}


def _recommend(tmp_path, capsys, layout) -> dict:
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump({**BASE, "layout": layout}))
    assert main(["recommend", str(f), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["recommendation"]


@pytest.mark.parametrize("layout, want", [
    # vLLM: --data-parallel-size 8 --tensor-parallel-size 1 with expert parallelism: DEP 8 (it had been
    # refused, "ep 8 must divide tp 1")
    ({"dp": 8, "tp": 1, "ep": 8}, (8, 8, 8, 8)),
    ({"dp": 8, "tp": 1, "enable_expert_parallel": True}, (8, 8, 8, 8)),
    # SGLang: --tp 8 --dp 8 --enable-dp-attention (--ep-size 8 for the experts)
    ({"tp": 8, "dp": 8, "enable_dp_attention": True, "ep": 8}, (8, 8, 8, 8)),
    ({"tp": 8, "dp": 8, "enable_dp_attention": True}, (8, 8, 1, 8)),
    # TensorRT-LLM's own
    ({"tp": 8, "ep": 8, "attention_dp": 8}, (8, 8, 8, 8)),
])
def test_engine_layout_forms_are_read_as_the_layout_they_mean(tmp_path, capsys, layout, want):
    r = _recommend(tmp_path, capsys, layout)
    assert (r["count"], r["tp"], r["ep"], r["attention_dp"]) == want and r["dp"] == 1


def test_a_task_given_as_a_list_is_a_field_error(tmp_path, capsys):
    # since the kinds landed `task: []` raised TypeError (a traceback); now the field's one-line error, exit 2
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: gpt-oss-120b\ntask: []\n")
    assert main(["recommend", str(f)]) == 2
    err = capsys.readouterr().err
    assert "w.yaml:3: task:" in err and "Traceback" not in err
