"""Every file a command writes, another reads (issue 42): `prices import-api --out FILE` is read by
`--api-prices FILE` and the workload's `api_prices: FILE` (and `--prices FILE` says so); `ask --out-dir`
creates its folder or refuses it before the first question, and no exit of the dialogue loses the answers."""
import json
import os
import subprocess
import sys

from advisor.judgement.advise import Setup
from advisor.shell import dialogue, session
from advisor.shell.cli import main
from conftest import ROOT, refuse

SNAPSHOT = ROOT / "tests" / "data" / "litellm-prices-2026-12-01.json"
OURS = ("api_prices:\n  - {model: llama-3.1-8b, provider: our-cloud, provider_model: our-cloud/llama-8b, "
        "usd_per_million_input: 0.015, usd_per_million_output: 0.025, date: 2026-12-01, source: our contract}\n")


def _offers(capsys, argv):
    assert main(argv) == 0
    rec = json.loads(capsys.readouterr().out)
    return rec, [o["provider"] for o in rec["api_comparison"]["offers"]]


def test_an_imported_api_price_file_is_read_by_api_prices(tmp_path, capsys):
    out = tmp_path / "my-api.yaml"
    assert main(["prices", "import-api", str(SNAPSHOT), "--date", "2026-12-01", "--source", "test", "--out", str(out)]) == 0
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: llama-3.1-8b\nconcurrency: 16\n")
    capsys.readouterr()
    assert main(["recommend", str(w), "--api-prices", str(out), "--format", "summary"]) == 0
    # given to --prices, the error says which option reads it (it had said "expected a mapping with a 'prices' list")
    refuse(capsys, ["recommend", str(w), "--prices", str(out)], "this is an API price file (per-token prices, api_prices:): "
                                                                 "use --api-prices FILE")


def test_our_own_api_offer_is_compared_from_the_option_and_from_the_workload(tmp_path, capsys):
    (tmp_path / "ours.yaml").write_text(OURS)
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: llama-3.1-8b\nconcurrency: 16\n")
    rec, providers = _offers(capsys, ["recommend", str(w), "--format", "json"])
    assert "our-cloud" not in providers
    rec, providers = _offers(capsys, ["recommend", str(w), "--format", "json", "--api-prices", str(tmp_path / "ours.yaml")])
    assert providers[0] == "our-cloud" and rec["api_comparison"]["api_usd_per_million_tokens"] == 0.02   # (0.015 + 0.025) / 2
    assert rec["versions"]["api_price_files"][0]["given"] == str(tmp_path / "ours.yaml")
    # the workload's own api_prices:, relative to its folder (run from elsewhere)
    w.write_text("mode: inference\nmodel: llama-3.1-8b\nconcurrency: 16\napi_prices: ours.yaml\n")
    rec, providers = _offers(capsys, ["recommend", str(w), "--format", "json"])
    assert providers[0] == "our-cloud"
    w.write_text("mode: inference\nmodel: llama-3.1-8b\napi_prices: missing.yaml\n")
    refuse(capsys, ["recommend", str(w)], "w.yaml:3: api_prices: no such file:")


def test_ask_creates_its_out_dir_and_keeps_the_answers(tmp_path):
    env = {**os.environ, "GPU_ADVISOR_PIPE": "1"}
    run = subprocess.run([sys.executable, "-m", "advisor", "ask", "--out-dir", "run2/sub"], input="inference\nllama-3.1-8b\n",
                         text=True, capture_output=True, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr          # the input ended: answers saved
    saved = tmp_path / "run2" / "sub" / ".gpu-advisor-resume.yaml"
    assert saved.is_file() and "llama-3.1-8b" in saved.read_text()
    (tmp_path / "afile").write_text("x")
    run = subprocess.run([sys.executable, "-m", "advisor", "ask", "--out-dir", "afile"], input="inference\n", text=True,
                         capture_output=True, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 2 and "afile: --out-dir: cannot use it as the output folder" in run.stderr
    assert "What will the GPUs do?" not in run.stdout                    # refused before the first question


def test_answers_survive_an_output_folder_that_went_away(catalog, kb, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    d = dialogue.Dialogue(Setup(catalog, kb), out_dir=gone)
    d.submit("inference")
    d.submit("llama-3.1-8b")
    gone.rmdir()
    path = session.save_resume(d, d.resume_path())
    try:
        assert path != d.resume_path() and "llama-3.1-8b" in path.read_text()
    finally:
        path.unlink()
