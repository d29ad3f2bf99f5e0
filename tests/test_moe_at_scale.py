"""Issue 45 item 4: MoE pre-training at scale. DeepSeek-V3 (14.8T tokens, FP8) on at most 2,048 GPUs of
an H800's compute (the catalog has no H800: an H100 SXM has its compute and HBM, with more NVLink) is
planned within 1.25x of the 2.664M H800 GPU-hours the report publishes (arXiv 2412.19437, Table 1):
the planner's schedule hides the expert all-to-all (DualPipe, Megatron-Core's EP overlap), its own
global batch may reach DeepSeek-V3's 63M tokens, and it tries EP groups up to DeepSeek-V3's 64."""
import json

from advisor.shell.cli import main

DSV3 = ("name: dsv3\nmode: training\nmodel: deepseek-v3\nprecision: fp8\ncontext_tokens: 4096\nmicro_batch: 1\n"
        "training_tokens: 14.8e12\nconstraints:\n  deadline_hours: 1440\n  max_gpus: 2048\n  gpus: [h100-sxm]\n")


def _plan(tmp_path, capsys, extra=""):
    f = tmp_path / "dsv3.yaml"
    f.write_text(DSV3 + extra)
    main(["recommend", str(f), "--format", "json"])
    r = json.loads(capsys.readouterr().out)
    return next(c for c in r["estimate"]["candidates"] if c["gpu"] == "h100-sxm")


def test_deepseek_v3_on_2048_gpus_is_within_a_quarter_of_its_published_gpu_hours(tmp_path, capsys):
    c = _plan(tmp_path, capsys)
    gpu_hours = c["count"] * c["training_hours"]
    assert c["count"] <= 2048
    assert 2.664e6 / 1.25 <= gpu_hours <= 2.664e6 * 1.25
    # the plan hides its all-to-all and says so
    assert "hidden behind compute" in c["speed_explained"]["moe"]["formula"]


def test_a_stated_critical_path_alltoall_costs_that_plan_more(tmp_path, capsys):
    hidden = _plan(tmp_path, capsys)
    exposed = _plan(tmp_path, capsys, "alltoall_overlap: false\n")
    assert "on the critical path" in exposed["speed_explained"]["moe"]["formula"]
    assert exposed["count"] * exposed["training_hours"] > hidden["count"] * hidden["training_hours"]
