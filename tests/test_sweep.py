"""Sweeps: every combination decided (as a single decision would), in parallel, rows kept when
interrupted, a summary with its chart, and invalid grids refused."""
import csv
import signal
import subprocess
import sys
import time

import pytest

from advisor.shell.cli import main

from conftest import EXAMPLES, ROOT


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_grid_is_decided_like_single_decisions(tmp_path, capsys):
    out = tmp_path / "t.csv"
    summary = tmp_path / "s.html"
    assert main(["sweep", str(EXAMPLES / "grid.yaml"), "--out", str(out), "--summary", str(summary), "--jobs", "2"]) == 0
    table = rows(out)
    assert len(table) == 24
    assert list(table[0])[:4] == ["model", "concurrency", "context_tokens", "constraints.import_restricted"]
    one = next(r for r in table if r["model"] == "gpt-oss-120b" and r["concurrency"] == "1"
               and r["context_tokens"] == "8192" and r["constraints.import_restricted"] == "false")
    assert one["gpu"] and int(one["count"]) >= 1 and float(one["usd_per_hour"]) > 0         # priced from the market
    assert all(r["gpu"].startswith("ascend") for r in table if r["constraints.import_restricted"] == "true")
    html = summary.read_text()
    assert "<svg" in html and html.count('class="bar cards-bar"') == 24 and "Recommended GPU per combination" in html
    capsys.readouterr()
    # the same combinations decided alone agree
    import json
    for model, concurrency, context, row in (("llama-3.1-70b", 128, 32768, None), ("gpt-oss-120b", 1, 8192, one)):
        w = tmp_path / "w.yaml"
        w.write_text(f"mode: inference\nmodel: {model}\nconcurrency: {concurrency}\ncontext_tokens: {context}\n"
                     "latency: interactive\nname: chat-assistant\n")
        assert main(["recommend", str(w), "--format", "json"]) == 0
        rec = json.loads(capsys.readouterr().out)["recommendation"]
        row = row or next(r for r in table if r["model"] == model and r["concurrency"] == str(concurrency)
                          and r["context_tokens"] == str(context) and r["constraints.import_restricted"] == "false")
        assert (row["gpu"], int(row["count"]), int(row["tp"])) == (rec["gpu"], rec["count"], rec["tp"])
        assert float(row["usd_per_hour"]) == pytest.approx(rec["usd_per_hour"], abs=0.006)


def test_markdown_summary(tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text(f"base: {EXAMPLES / 'chat-assistant.yaml'}\nvary:\n  concurrency: [1, 64]\n")
    assert main(["sweep", str(grid), "--out", str(tmp_path / "t.csv"), "--summary", str(tmp_path / "s.md")]) == 0
    md = (tmp_path / "s.md").read_text()
    table = rows(tmp_path / "t.csv")
    assert "| concurrency | GPU |" in md and [r["concurrency"] for r in table] == ["1", "64"]
    for r in table:                                  # one line per combination, as the CSV decided it
        assert f"| {r['concurrency']} | {r['gpu']} | {r['count']} |" in md
    assert int(table[1]["count"]) >= int(table[0]["count"])          # more users, no fewer cards


@pytest.mark.parametrize("text, expected", [
    ("vary: {concurency: [1, 2]}\nbase: {mode: inference, model: gpt-oss-20b}\n", "unknown field; did you mean 'concurrency'?"),
    ("vary: {concurrency: 3}\nbase: {mode: inference, model: gpt-oss-20b}\n", "vary.concurrency: must be a non-empty list"),
    ("vary: {method: [full, lora]}\nbase: {mode: inference, model: gpt-oss-20b}\n", "(method=lora)"),
    ("base: {mode: inference}\n", "a grid is a mapping with 'base'"),
])
def test_invalid_grids_are_refused(tmp_path, capsys, text, expected):
    grid = tmp_path / "g.yaml"
    grid.write_text(text)
    assert main(["sweep", str(grid), "--out", str(tmp_path / "t.csv")]) == 2
    assert expected in capsys.readouterr().err


def test_a_bad_value_in_a_grid_is_named_once_with_its_line(tmp_path, capsys):
    # left in session 12: a bad value was reported once per combination, as "g.yaml [model=..., concurrency=lots]"
    # without a line; now once, at the line of the value in the grid, with how many combinations it broke
    grid = tmp_path / "g.yaml"
    grid.write_text("base: {mode: inference, model: gpt-oss-20b}\nvary:\n  model: [gpt-oss-20b, llama-3.1-8b]\n"
                    "  concurrency:\n    - 1\n    - lots\n")
    assert main(["sweep", str(grid), "--out", str(tmp_path / "t.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gpu-advisor: error: {grid}:6: vary.concurrency: must be a number (got 'lots') "
                   "(in 2 of 4 combinations, e.g. model=gpt-oss-20b, concurrency=lots)"]
    assert not (tmp_path / "t.csv").exists()


def test_a_misspelt_field_offers_both_names_it_is_as_near_to(tmp_path, capsys):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: gpt-oss-20b\nmodle: 1\n")
    assert main(["estimate", str(f)]) == 2
    assert "w.yaml:3: modle: unknown field; did you mean 'mode' or 'model'?" in capsys.readouterr().err
    f.write_text("mode: inference\nmodel: gpt-oss-20b\ncontxt_tokens: 1\n")      # output_tokens is far: not offered
    assert main(["estimate", str(f)]) == 2
    assert capsys.readouterr().err.strip().endswith("contxt_tokens: unknown field; did you mean 'context_tokens'?")


def test_interrupting_keeps_the_rows_decided(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(f"base: {EXAMPLES / 'chat-assistant.yaml'}\nvary:\n  concurrency: {list(range(1, 401))}\n"
                    "  context_tokens: [4096, 8192, 16384]\n")
    out = tmp_path / "t.csv"
    exe = [sys.executable, "-m", "advisor", "sweep", str(grid), "--out", str(out), "--jobs", "2"]
    p = subprocess.Popen(exe, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60

    def decided():          # the rows go to a temporary file beside the table until the sweep ends
        part = [f for f in tmp_path.glob(".t.csv.*") if not f.name.endswith(".lock")]
        return len(part[0].read_text().splitlines()) if part else 0
    while time.time() < deadline and decided() < 20:
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    kept = rows(out)
    assert 19 <= len(kept) < 1200
    assert f"{len(kept)} of 1200 rows decided and kept" in err
    assert all(r["gpu"] and r["count"] for r in kept)        # every kept row is whole


def test_a_broken_knowledge_base_is_refused_before_any_worker_starts(tmp_path):
    """The shipped rules named again as a user's folder (every id twice): refused at once, before any
    worker starts -- a pool whose workers fail while starting respawns them for ever (bench/run.py did
    this through sweep.run). In a child process with a deadline: a regression hangs, not fails."""
    out = tmp_path / "t.csv"
    code = ("import sys\nfrom advisor.base.errors import InputError\nfrom advisor.shell import sweep\n"
            f"try:\n    sweep.run({str(EXAMPLES / 'grid.yaml')!r}, {str(out)!r}, [{str(ROOT / 'rules')!r}], jobs=2, progress=False)\n"
            "except InputError as exc:\n    print(exc.problems[0]); sys.exit(2)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.stdout[-300:], p.stderr[-300:])
    assert "duplicate rule id" in p.stdout
    assert not out.exists()
    assert main(["sweep", str(EXAMPLES / "grid.yaml"), "--out", str(out), "--rules", str(ROOT / "rules")]) == 2
    assert not out.exists()


def test_sweep_chart_gives_every_row_a_bar_and_compares_cost_per_unit_of_work(tmp_path):
    """Issue 42: 12 of 24 rows (the Ascend plans, unpriced) had no bar, and $/hour was compared across 1
    and 128 users. Every row now has its cards as a bar; the cost bar is per million tokens."""
    import re
    out, summary = tmp_path / "t.csv", tmp_path / "s.html"
    assert main(["sweep", str(EXAMPLES / "grid.yaml"), "--out", str(out), "--summary", str(summary), "--jobs", "2",
                 "--quiet"]) == 0
    html = summary.read_text()
    table = rows(out)
    cards = [float(w) for w in re.findall(r'<rect class="bar cards-bar" [^>]*width="([0-9.]+)"', html)]
    assert len(cards) == len(table) == 24 and all(w > 0 for w in cards)
    # 120 px for the axis's round end, 25 cards above the most (24 x h100-sxm): width = cards x 120 / 25
    for w, r in zip(cards, table):
        assert w == pytest.approx(int(r["count"]) * 120 / 25, abs=0.06)
    priced = [r for r in table if r["usd_per_million_tokens"]]
    costs = [float(w) for w in re.findall(r'<rect class="bar cost-bar" [^>]*width="([0-9.]+)"', html)]
    assert len(costs) == len(priced) == 12
    # $29.91 per million tokens (4 x H100 for one user of Llama 3.1 70B; $29.93 before the serving refit's
    # factors) is the dearest: the axis ends at $50
    assert max(float(r["usd_per_million_tokens"]) for r in priced) == pytest.approx(29.91, abs=0.01)
    for w, r in zip(costs, priced):
        assert w == pytest.approx(float(r["usd_per_million_tokens"]) * 220 / 50, abs=0.06)
    assert '>$0<' in html and '>$25<' in html and '>$50<' in html and ">12.5<" not in html
    assert "USD per million tokens (output tokens served, or training tokens)" in html
    assert "USD per hour" not in html.split("<table>")[0]                # no $/hour compared across users
    assert html.split("</svg>")[0].count(">no price known<") == 12                            # the Ascend rows say why they have no cost bar
