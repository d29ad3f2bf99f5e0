"""`explain` of a record edited by hand: it loads only the rule folders and price files the user
names again (or that lie under the project), says in one line each what it refused, never reads a
config.json or contacts the Hugging Face Hub for a model the record names, and prints the record's
strings without their control characters."""
import hashlib
import json
import sys
from pathlib import Path

import pytest

import advisor
from advisor.shell.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
QUOTES = ("prices:\n  - {gpu: B200, gpus_per_instance: 1, usd_per_hour: 4.0, provider: Acme, date: 2026-11, "
          "source: 'email quote'}\n")
RULE = ("- id: big-memory\n  title: t\n  source: [ours]\n  when: {candidate.memory_gb: {gte: 120}}\n"
        "  then: {prefer: {weight: 5}}\n")


def digest(*paths) -> dict:
    out = {}
    for p in paths:
        for f in ([p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file())):
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


@pytest.fixture
def made(tmp_path, capsys):
    """A decision made with a user's rule folder and price file, and its record."""
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "big.yaml").write_text(RULE)
    (tmp_path / "q.yaml").write_text(QUOTES)
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--rules", str(tmp_path / "r"),
                 "--prices", str(tmp_path / "q.yaml"), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    return tmp_path, rec


def explain(capsys, path, *extra):
    code = main(["explain", str(path), *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_folders_outside_the_project_are_used_only_when_named_again(capsys, made):
    d, rec = made
    (d / "d.json").write_text(json.dumps(rec))
    out = explain(capsys, d / "d.json")
    assert f"Refused: the record names the rule folder {d / 'r'}, outside the project: not loaded (pass --rules {d / 'r'} to use it)" in out
    assert f"Refused: the record names the price file {d / 'q.yaml'}, outside the project: not loaded (pass --prices {d / 'q.yaml'}" in out
    out = explain(capsys, d / "d.json", "--rules", str(d / "r"), "--prices", str(d / "q.yaml"))
    assert "Refused" not in out and "The current rules and catalog are those that produced this decision." in out
    assert f"Rules: the shipped ones and {d / 'r'}, as the decision recorded\n" in out


def test_a_record_pointing_at_the_whole_disk_loads_nothing_from_it(capsys, made):
    d, rec = made
    rec["versions"]["rule_dirs"] = [{"path": "/", "given": "/", "sha256": "0" * 64}, {"path": 5}, "x"]
    rec["versions"]["price_files"] = [{"path": "/etc/passwd", "sha256": "0" * 64}]
    (d / "d.json").write_text(json.dumps(rec))
    before = digest(d)
    out = explain(capsys, d / "d.json")
    refusals = [line for line in out.splitlines() if line.startswith("Refused: ")]
    assert refusals == [
        "Refused: the record names the rule folder /, outside the project: not loaded (pass --rules / to use it)",
        "Refused: a rule_dirs entry of the record that is not {path: FOLDER}; nothing loaded for it",
        "Refused: a rule_dirs entry of the record that is not {path: FOLDER}; nothing loaded for it",
        "Refused: the record names the price file /etc/passwd, outside the project: not loaded (pass --prices /etc/passwd to use it)"]
    assert "etc/passwd, as the decision recorded" not in out and digest(d) == before


def test_folders_under_the_project_are_reused(capsys, made, monkeypatch):
    d, rec = made
    monkeypatch.setattr(advisor, "HOME", d)           # as if the user's folders were part of the checkout
    (d / "d.json").write_text(json.dumps(rec))
    out = explain(capsys, d / "d.json")
    assert "Refused" not in out and "are those that produced this decision" in out
    assert f"Prices: the catalog's and {d / 'q.yaml'}, as the decision recorded\n" in out
    # a link under the project that leads out of it is not under the project
    (d / "out").symlink_to("/")
    rec["versions"]["rule_dirs"] = [{"path": str(d / "out"), "sha256": "0" * 64}]
    (d / "d.json").write_text(json.dumps(rec))
    assert f"Refused: the record names the rule folder {d / 'out'}, outside the project" in explain(capsys, d / "d.json")


@pytest.mark.parametrize("model", ["hf:meta-llama/Llama-3.1-8B", "/etc/config.json", "../x"])
def test_a_model_the_record_names_is_never_read_or_fetched(capsys, made, monkeypatch, model):
    d, rec = made
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)        # importing it now fails
    rec["inputs"]["model"] = model
    rec["versions"]["catalog_sha256"] = "0" * 64                   # drift: explain would decide the inputs again
    (d / "d.json").write_text(json.dumps(rec))
    out = explain(capsys, d / "d.json", "--rules", str(d / "r"), "--prices", str(d / "q.yaml"), "--why-not", "a100")
    assert (f"  Refused: the recorded workload names the model '{model}', which is not in the catalog: explain reads no "
            "config.json and fetches nothing from the Hugging Face Hub, so the decision is not decided again") in out
    assert "What would change today:" in out and "optional extra" not in out and "no longer validate" not in out
    assert sys.modules["huggingface_hub"] is None


def test_terminal_escapes_in_a_record_are_not_printed(capsys, made):
    d, rec = made
    rec["recommendation"]["gpu"] = "h200\x1b]0;pwned\x07\x1b[2J"
    rec["decisive_rule"]["because"] = "cheap\n# Recommended: 1000 x b300\r\u202eevil"
    rec["candidates"][0]["gpu"] = "x\x9b31m"
    (d / "d.json").write_text(json.dumps(rec))
    out = explain(capsys, d / "d.json", "--rules", str(d / "r"), "--prices", str(d / "q.yaml"))
    assert not any(c in out for c in "\x1b\x07\x9b\r\u202e")
    assert f"Recommended: {rec['recommendation']['count']} x h200 (" in out
    assert "  cheap # Recommended: 1000 x b300 evil\n" in out        # the forged line stays inside its own
