"""No command writes over a file it read (under any name), into the shipped folders, or at the
same time as another writer; inputs that are not files (FIFOs, devices, sockets) are refused before
they are opened. Every refusal is one line and exit code 2, and every file read keeps its digest."""
import hashlib
import io
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor import HOME
from advisor.base import files
from advisor.shell.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FIX = ROOT / "tests" / "fixtures"
WORKLOAD = "mode: inference\nmodel: gpt-oss-120b\nconcurrency: 4\ncontext_tokens: 8192\n"
QUOTES = ("prices:\n  - {gpu: B200, gpus_per_instance: 1, usd_per_hour: 4.0, provider: Acme, date: 2026-11, "
          "source: 'email quote'}\n")
RULE = ("- id: big-memory\n  title: t\n  source: [ours]\n  when: {candidate.memory_gb: {gte: 120}}\n"
        "  then: {prefer: {weight: 5}}\n")


def digests(*roots) -> dict:
    """sha256 of every file under each root (a file or a folder), and of the shipped folders."""
    out = {}
    for root in (*roots, HOME / "catalog", HOME / "rules", HOME / "templates"):
        root = Path(root)
        for f in ([root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())):
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def refused(capsys, argv, expected):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("gpu-advisor: error: "), err
    assert expected in err, err
    return err


@pytest.fixture
def inputs(tmp_path):
    """A workload using a config.json, a price file, a rule folder and a template, in tmp_path."""
    (tmp_path / "config.json").write_text((FIX / "configs" / "llama-3.1-8b" / "config.json").read_text())
    (tmp_path / "w.yaml").write_text("mode: inference\nmodel: config.json\nconcurrency: 4\ncontext_tokens: 8192\n")
    (tmp_path / "q.yaml").write_text(QUOTES)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "big.yaml").write_text(RULE)
    (tmp_path / "t.md.j2").write_text("Buy: {{ summary.sentence }}\n{% include 'part.j2' %}\n")
    (tmp_path / "part.j2").write_text("Decided by {{ decisive.id }}\n")
    return tmp_path


def _recommend(d, out, *extra):
    return ["recommend", str(d / "w.yaml"), "--prices", str(d / "q.yaml"), "--rules", str(d / "r"),
            "--template", str(d / "t.md.j2"), "--out", str(out), *extra]


def test_recommend_writes_through_a_temporary_file_and_leaves_no_lock(capsys, inputs):
    assert main(_recommend(inputs, inputs / "memo.md")) == 0
    assert (inputs / "memo.md").read_text().startswith("Buy: Use ")
    assert "Decided by " in (inputs / "memo.md").read_text()
    assert sorted(p.name for p in inputs.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("target", ["w.yaml", "config.json", "q.yaml", "r/big.yaml", "t.md.j2", "part.j2"])
def test_recommend_never_overwrites_what_it_read(capsys, inputs, target):
    before = digests(inputs)
    refused(capsys, _recommend(inputs, inputs / target), f"{inputs / target}: is an input of this command")
    assert digests(inputs) == before


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_another_name_for_an_input_is_refused(capsys, inputs, how):
    link = inputs / "memo.md"
    (os.symlink if how == "symlink" else os.link)(inputs / "config.json", link)
    before = digests(inputs)
    refused(capsys, _recommend(inputs, link), f"{link}: is an input of this command ({inputs / 'config.json'}")
    assert digests(inputs) == before and link.exists()


def test_the_shipped_catalog_is_never_written_from_a_checkout(capsys, monkeypatch, tmp_path):
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    monkeypatch.chdir(HOME)
    before = digests()
    for target in ("catalog/efficiency.yaml", "catalog/new.yaml", "rules/memory.yaml", "templates/memo.md.j2"):
        refused(capsys, ["recommend", str(tmp_path / "w.yaml"), "--out", target], "refusing to write there")
    os.symlink(HOME / "catalog" / "purchase.yaml", tmp_path / "p.yaml")       # through a link, too
    refused(capsys, ["recommend", str(tmp_path / "w.yaml"), "--out", str(tmp_path / "p.yaml")], "shipped catalog/ folder")
    assert digests() == before


def test_every_catalog_file_is_an_input_when_the_catalog_is_a_copy(capsys, monkeypatch, tmp_path):
    cat = tmp_path / "cat"
    shutil.copytree(HOME / "catalog", cat)
    monkeypatch.setenv("GPU_ADVISOR_CATALOG", str(cat))
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    before = digests(cat)
    read = ["sources.yaml", "sources-models.yaml", "gpus.yaml", "models.yaml", "prices.yaml", "prices-skypilot.yaml",
            "purchase.yaml", "efficiency.yaml", "knowledge.yaml"]        # what catalog.load reads
    for name in read:
        os.link(cat / name, tmp_path / f"out-{name}")        # the same file under a name outside the folder
        refused(capsys, ["recommend", str(tmp_path / "w.yaml"), "--format", "json", "--out", str(tmp_path / f"out-{name}")],
                "is an input of this command")
    assert digests(cat) == before


@pytest.fixture
def grid(inputs):
    (inputs / "g.yaml").write_text("base: w.yaml\nvary:\n  concurrency: [1, 2]\n")
    return inputs / "g.yaml"


@pytest.mark.parametrize("target", ["w.yaml", "g.yaml", "q.yaml", "r/big.yaml", "config.json", "t.csv"])
def test_sweep_summary_never_overwrites_what_it_read(capsys, inputs, grid, target):
    before = digests(inputs)
    argv = ["sweep", str(grid), "--out", str(inputs / "t.csv"), "--summary", str(inputs / target),
            "--prices", str(inputs / "q.yaml"), "--rules", str(inputs / "r"), "--jobs", "1", "--quiet"]
    expected = "the summary needs a file of its own" if target == "t.csv" else "is an input of this command"
    refused(capsys, argv, expected)
    assert digests(inputs) == before and not (inputs / "t.csv").exists()      # refused before any work


@pytest.mark.parametrize("target", ["w.yaml", "g.yaml", "q.yaml", "config.json"])
def test_sweep_out_never_overwrites_what_it_read(capsys, inputs, grid, target):
    before = digests(inputs)
    refused(capsys, ["sweep", str(grid), "--out", str(inputs / target), "--prices", str(inputs / "q.yaml"), "--quiet"],
            "is an input of this command")
    assert digests(inputs) == before


def test_prices_import_never_overwrites_its_csv_or_the_catalog(capsys, tmp_path, monkeypatch):
    (tmp_path / "lambda").mkdir()
    csv = tmp_path / "lambda" / "vms.csv"
    csv.write_text((FIX / "skypilot" / "lambda" / "vms.csv").read_text())
    before = digests(csv)
    refused(capsys, ["prices", "import", str(csv), "--out", str(csv)], f"{csv}: is an input of this command")
    monkeypatch.chdir(HOME)
    refused(capsys, ["prices", "import", str(csv), "--out", "catalog/prices.yaml"], "shipped catalog/ folder")
    assert digests(csv) == before


def test_rules_doc_never_overwrites_a_rule_file(capsys, inputs):
    before = digests(inputs)
    refused(capsys, ["rules", "doc", str(inputs / "r"), "--out", str(inputs / "r" / "big.yaml")], "is an input of this command")
    assert digests(inputs) == before


def test_ask_asks_again_for_a_memo_path_that_is_its_workload(capsys, monkeypatch, tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: gpt-oss-120b\nconcurrency: 64\ncontext_tokens: 8192\n")    # 14 questions left (the service level among them)
    before = digests(w)
    monkeypatch.setenv("GPU_ADVISOR_PIPE", "1")
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n" * 13 + "w.yaml\n\n"))
    assert main(["ask", "--from", str(w), "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"Cannot write there: {w}: is an input of this command" in out
    assert digests(w) == before and (tmp_path / "gpt-oss-120b-inference-memo.md").exists()


def test_a_second_writer_is_refused_while_the_first_holds_the_file(capsys, inputs):
    out = inputs / "memo.md"
    out.write_text("the first writer's text\n")
    with files.writing(out) as f:          # another gpu-advisor in the middle of writing memo.md
        f.write("whole\n")
        refused(capsys, _recommend(inputs, out), f"{out}: is being written by another gpu-advisor")
    assert out.read_text() == "whole\n"
    assert main(_recommend(inputs, out)) == 0 and out.read_text().startswith("Buy: ")


def test_two_concurrent_sweeps_to_one_table(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(f"base: {EXAMPLES / 'chat-assistant.yaml'}\nvary:\n  concurrency: {list(range(1, 301))}\n")
    out = tmp_path / "t.csv"
    exe = [sys.executable, "-m", "advisor", "sweep", str(grid), "--out", str(out), "--jobs", "1", "--quiet"]
    first = subprocess.Popen(exe, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (tmp_path / ".t.csv.lock").exists():
        time.sleep(0.05)
    second = subprocess.run(exe, cwd=ROOT, stderr=subprocess.PIPE, text=True, timeout=120)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 2 and second.stderr == (f"gpu-advisor: error: {out}: is being written by another "
                                                        f"gpu-advisor (it holds {tmp_path / '.t.csv.lock'}); run one at a time\n")
    lines = out.read_text().splitlines()
    assert len(lines) == 301 and len(set(lines[1:])) == 300 and lines[0].startswith("concurrency,gpu,")
    assert not (tmp_path / ".t.csv.lock").exists()


# --- inputs that are not files ------------------------------------------------------------------------

def _run(argv, cwd):
    """In a child process with a deadline: a regression here would hang, not fail."""
    p = subprocess.run([sys.executable, "-m", "advisor", *argv], cwd=cwd, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


@pytest.mark.parametrize("role", ["workload", "prices", "grid", "template", "rule file", "config.json", "record"])
def test_a_fifo_is_refused_before_it_is_opened(inputs, role):
    fifo = inputs / "fifo"
    os.mkfifo(fifo)
    w = str(inputs / "w.yaml")
    argv = {"workload": ["estimate", str(fifo)],
            "prices": ["estimate", w, "--prices", str(fifo)],
            "grid": ["sweep", str(fifo), "--out", str(inputs / "t.csv")],
            "template": ["recommend", w, "--template", str(fifo)],
            "rule file": ["rules", "lint", "--rules", str(fifo)],
            "config.json": ["estimate", str(inputs / "w2.yaml")],
            "record": ["explain", str(fifo)]}[role]
    if role == "config.json":
        (inputs / "w2.yaml").write_text("mode: inference\nmodel: fifo/config.json\n")
        fifo.unlink()
        (inputs / "fifo").mkdir()
        os.mkfifo(inputs / "fifo" / "config.json")
    code, err = _run(argv, inputs)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "is a named pipe (FIFO), not a" in err and "refusing to read it" in err, err


def test_a_fifo_in_a_rules_folder_is_not_read(tmp_path):
    rules = tmp_path / "r"
    rules.mkdir()
    os.mkfifo(rules / "x.yaml")
    (rules / "big.yaml").write_text(RULE)
    code, err = _run(["rules", "lint", str(rules)], tmp_path)
    # refused by name, never opened (opening a FIFO waits for a writer): a file the user put there is not skipped silently
    assert code == 2 and "x.yaml: is a named pipe (FIFO), not a rule file" in err, err


def test_devices_and_sockets_are_refused(capsys, tmp_path):
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    refused(capsys, ["estimate", str(tmp_path / "w.yaml"), "--prices", "/dev/zero"], "/dev/zero: is a device, not a YAML file")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s.yaml"))
        refused(capsys, ["estimate", str(tmp_path / "s.yaml")], "s.yaml: is a socket, not a YAML file")
    finally:
        sock.close()
    refused(capsys, ["estimate", str(tmp_path)], "is a directory, not a YAML file")
