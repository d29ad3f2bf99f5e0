"""`gpu-advisor estimate` as a user runs it: JSON keys, text, and bad input (one line, exit 2)."""
import json
import subprocess
import sys

import pytest

from advisor.shell.cli import main

from conftest import EXAMPLES, ROOT


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_keys_and_values(capsys):
    code, out, _ = run(capsys, "estimate", str(EXAMPLES / "gpt-oss-120b-one-user.yaml"), "--gpu", "H200", "--format", "json")
    assert code == 0
    d = json.loads(out)
    assert set(d["ledger"]) == {"weights_gb", "kv_cache_gb", "activations_gb", "gradients_gb", "optimizer_gb", "overhead_gb", "total_gb"}
    assert set(d["compute"]) >= {"forward_flops_per_token", "train_flops_per_token"}
    assert d["kv_bytes_per_token"] == 37440
    [c] = d["candidates"]
    for key in ("gpu", "count", "nodes", "tp", "pp", "dp", "per_card_gb", "headroom_gb", "fits", "prefill_ms",
                "decode_ms_per_token", "tokens_per_s", "power_kw_per_node", "usd_per_hour", "usd_per_million_tokens", "usd_per_job"):
        assert key in c
    # the cheapest single-H200 offer: Shadeform's datacrunch_H200 in SkyPilot's catalog (commit 54ce89bb)
    assert c["gpu"] == "h200-sxm" and c["count"] == 1 and c["usd_per_hour"] == 2.45
    assert c["price"]["provider"] == "Shadeform" and c["price"]["kind"] == "on-demand"
    assert c["price"]["date"] == "2026-11-30" and c["price"]["commit"].startswith("54ce89bb")
    assert "10^9" in d["units"]
    assert "formula" in d["ledger_explained"]["weights_gb"]


def test_text_has_ledger_and_unknown_prices(capsys):
    code, out, _ = run(capsys, "estimate", str(EXAMPLES / "chat-assistant.yaml"), "--gpu", "gaudi-3", "--gpu", "h200")
    assert code == 0
    assert "weights" in out and "65.18 GB" in out and "GB = 10^9 bytes" in out
    assert "unknown" in out   # Gaudi 3 has no price in the catalog


def test_long_gpu_ids_keep_their_own_column(capsys, tmp_path):
    # rtx-4060-ti-16gb is 16 characters: the GPU column widens to it instead of running into 'yes'
    f = tmp_path / "w.yaml"
    f.write_text("name: w\nmode: inference\nmodel: {name: m, params_b: 34}\nprecision: fp16\nconcurrency: 16\n")
    code, out, _ = run(capsys, "estimate", str(f), "--gpu", "rtx-4060-ti-16gb", "--gpu", "h100-sxm")
    assert code == 0
    [row] = [ln for ln in out.splitlines() if ln.lstrip().startswith("rtx-4060-ti-16gb")]
    assert row.split()[:2] == ["rtx-4060-ti-16gb", "yes"]
    head = next(ln for ln in out.splitlines() if ln.lstrip().startswith("GPU"))
    assert head.index("fits") == row.index("yes")


def test_unknown_price_is_null_with_reason(capsys):
    _, out, _ = run(capsys, "estimate", str(EXAMPLES / "chat-assistant.yaml"), "--gpu", "gaudi-3", "--format", "json")
    c = json.loads(out)["candidates"][0]
    assert c["usd_per_hour"] is None and c["usd_per_million_tokens"] is None
    assert c["price_unknown"] == "no price known for this GPU"


def test_user_prices_add_quotes(capsys, tmp_path):
    f = tmp_path / "quotes.yaml"
    f.write_text("prices:\n  - {gpu: Gaudi 3, gpus_per_instance: 4, usd_per_hour: 6.0, provider: Acme, date: 2026-11, source: 'email quote'}\n")
    _, out, _ = run(capsys, "estimate", str(EXAMPLES / "chat-assistant.yaml"), "--gpu", "gaudi-3", "--prices", str(f), "--format", "json")
    c = json.loads(out)["candidates"][0]
    assert c["usd_per_hour"] == 6.0 and c["price"]["provider"] == "Acme"


@pytest.mark.parametrize("text, expected", [
    ("", "the workload is empty"),
    ("- a\n- b\n", "a workload must be a mapping"),
    ("mode: inference\nmodel: gpt-oss-120b\nconcurrency: -3\n", ":3: concurrency: must be at least 1"),
    # a service level in seconds where milliseconds are asked (the reviewer's 0.5 for 500 ms)
    ("mode: inference\nmodel: gpt-oss-120b\nlatency: {ttft_ms: 0.5, tpot_ms: 50}\n",
     ":3: latency.ttft_ms: 0.5 ms is below any time to first token a GPU server reaches (at least 10 ms): give milliseconds (0.5 s is 500)"),
    ("mode: inference\nmodel: gpt-oss-120b\nlatency: {tpot_ms: 0.05}\n", "latency.tpot_ms: 0.05 ms is below any time per output token"),
    # a field of another mode, or spot on the team's own cards, is refused, not ignored (the reviewer's F13)
    ("mode: training\nmodel: gpt-oss-120b\ntraining_tokens: 1e9\nprompt_tokens: 500\n",
     ":4: prompt_tokens: applies to LLM serving, an offline LLM batch job and RL post-training only; this workload is training or fine-tuning"),
    ("mode: inference\nmodel: gpt-oss-120b\nconstraints: {spot: true, deployment: on-prem}\n",
     ":3: constraints.spot: spot instances are a cloud offer; deployment on-prem runs on the team's own cards"),
    ("mode: inference\nmodel: gpt-oss-120b\ncontext_tokens: 1000000000\n", ":3: context_tokens: must be at most"),
    ("mode: inference\nmodel: {params_b: 1e15}\n", "model.params_b: must be at most"),
    ("mode: inference\nmodel: gpt-oss-120b\nconcurency: 3\n", "unknown field; did you mean 'concurrency'?"),
    ("mode: inference\nmodel: gtp-oss-120b\n", "unknown model 'gtp-oss-120b'; did you mean"),
    # a known key in the wrong mapping says where it goes (review 11: a top-level spot got 30 field names)
    ("mode: inference\nmodel: gpt-oss-120b\ntpot_ms: 40\n", ":3: tpot_ms: unknown field; a service level goes under latency: (latency: {tpot_ms: ...})"),
    ("mode: training\nmodel: gpt-oss-120b\nspot: true\n", ":3: spot: unknown field; it is a constraint: write it under constraints: (constraints: {spot: ...})"),
    ("mode: inference\nmodel: gpt-oss-120b\nconstraints: {ttft_ms: 500}\n", "constraints.ttft_ms: unknown constraint; a service level goes under latency:"),
    ("mode: inference\nmodel: gpt-oss-120b\nconstraints: {concurrency: 4}\n", "constraints.concurrency: unknown constraint; it is a workload field, not a constraint"),
    ("mode: inference\nmodel: gpt-oss-120b\nconstraints: {gpus: [H300]}\n", "unknown GPU 'H300'; did you mean"),
    ("mode: inference\nmodel: gpt-oss-120b\nmethod: lora\n", ":3: method: 'lora' is a training method"),
    ("mode: inference\nmodel: gpt-oss-120b\nconcurrency: many\n", "must be a number"),
    ("mode: inference\nmodel: [gpt\n", "YAML syntax error"),
    ("mode: !!python/object/apply:os.system ['touch /tmp/pwned-advisor']\nmodel: x\n", "tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed"),
])
def test_bad_workloads_exit_2_with_one_line_each(capsys, tmp_path, text, expected):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    code, out, err = run(capsys, "estimate", str(f))
    assert code == 2 and out == ""
    assert expected in err
    assert "Traceback" not in err
    assert all(line.startswith("gpu-advisor: error: ") for line in err.strip().splitlines())


def test_every_problem_of_a_file_is_reported(capsys, tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("mode: serving\nmodel: gpt-oss-120b\nconcurrency: 0\nfoo: 1\n")
    code, _, err = run(capsys, "estimate", str(f))
    assert code == 2 and len(err.strip().splitlines()) == 3
    assert "w.yaml:1: mode:" in err and "w.yaml:3: concurrency:" in err and "w.yaml:4: foo:" in err


def test_not_a_file(capsys, tmp_path):
    code, _, err = run(capsys, "estimate", str(tmp_path))
    assert code == 2 and "is a directory" in err
    code, _, err = run(capsys, "estimate", str(tmp_path / "missing.yaml"))
    assert code == 2 and "no such file" in err
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"mode: inference\nname: caf\xe9\n")
    code, _, err = run(capsys, "estimate", str(bad))
    assert code == 2 and "latin1.yaml:2: not UTF-8" in err


def test_unknown_gpu_option(capsys):
    code, _, err = run(capsys, "estimate", str(EXAMPLES / "chat-assistant.yaml"), "--gpu", "H2000")
    assert code == 2 and "--gpu: unknown GPU 'H2000'" in err


def test_console_script_and_module_run():
    out = subprocess.run([sys.executable, "-m", "advisor", "estimate", str(EXAMPLES / "chat-assistant.yaml"), "--gpu", "h200"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "h200-sxm" in out.stdout
