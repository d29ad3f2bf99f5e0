"""The decision record `ask` saves is the compact one (advisor/judgement/record.py: compact): small for
every shipped example, and `explain RECORD --why-not GPU` answers on it exactly as on the whole record."""
import io
import json
import sys

import pytest

from advisor.inputs import workload
from advisor.judgement import record
from advisor.judgement.advise import advise, setup
from advisor.shell.cli import main

from conftest import EXAMPLES

SHIPPED = sorted(p.stem for p in EXAMPLES.glob("*.yaml") if p.stem != "grid")
#: the bound the ask record keeps (issue 23: it was 110-550 kB; the largest shipped example is some 62 kB
#: with the 33 GPUs of the catalog: each candidate keeps explain's figures, about 1.5 kB a GPU)
MAX_BYTES = 75_000


@pytest.fixture(scope="module")
def decided():
    s = setup(None, None)
    return s, {name: advise(workload.load(EXAMPLES / f"{name}.yaml", s.catalog), s).record for name in SHIPPED}


def saved(rec: dict) -> str:
    """The record as the dialogue writes it (advisor/shell/session.py: write_outputs)."""
    return json.dumps(record.compact(rec), separators=(",", ":"), ensure_ascii=False, default=str) + "\n"


@pytest.mark.parametrize("name", SHIPPED)
def test_the_saved_record_is_small_for_every_shipped_example(decided, name):
    _, recs = decided
    full = json.dumps(recs[name], indent=2, ensure_ascii=False, default=str)
    small = saved(recs[name])
    assert len(small.encode()) < MAX_BYTES
    if len(full) > 200_000:                    # the many-candidate examples: a fifth or less of the whole
        assert len(small) < len(full) / 5
    rec = json.loads(small)
    assert rec["compact"] is True and rec["recommendation"] == json.loads(json.dumps(recs[name]["recommendation"], default=str))
    # every rule that fired is still in the trace (explain's "what would change today" compares them)
    assert {t["rule"] for t in rec["trace"]} == {t["rule"] for t in recs[name]["trace"]} == set(rec["trace_rules"])


@pytest.mark.parametrize("name", ["chat-assistant", "kimi-k3-serving", "workstation-gemma-27b", "7b-pretraining-deadline"])
def test_explain_why_not_answers_on_the_saved_record_as_on_the_whole(decided, name, tmp_path, capsys):
    _, recs = decided
    rec = recs[name]
    whole, small = tmp_path / "whole.json", tmp_path / "small.json"
    whole.write_text(json.dumps(rec, indent=2, ensure_ascii=False, default=str))
    small.write_text(saved(rec))
    # the runner-up (ranked, with the rules that raised the winner re-checked), an excluded GPU (its
    # rule, source, file:line and the facts it bound) and one that does not fit
    gpus = [rec["runner_up"]["gpu"]] if rec["runner_up"] else []     # a closest-plan answer has none
    gpus += [c["gpu"] for c in rec["candidates"] if c["excluded"]][:1]
    gpus += [c["gpu"] for c in rec["estimate"]["candidates"] if not c["fits"]][:1]
    assert len(gpus) >= 2
    for gpu in gpus:
        out = {}
        for which, path in (("whole", whole), ("small", small)):
            assert main(["explain", str(path), "--why-not", gpu]) == 0
            out[which] = capsys.readouterr().out
        assert f"Why not {gpu}:" in out["small"] and "The current rules and catalog are those" in out["small"]
        assert out["small"] == out["whole"], gpu


def test_ask_writes_the_small_record_and_explain_reads_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPU_ADVISOR_PIPE", "1")
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n" * 40))      # every default, then yes, md, the default path
    assert main(["ask", "--from", str(EXAMPLES / "chat-assistant.yaml"), "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "chat-assistant-decision.json"          # the file's own name (review 14: it was dropped)
    assert 20_000 < path.stat().st_size < MAX_BYTES, path.stat().st_size
    # the Markdown memo's charts beside it, said in the dialogue's last lines
    assert sorted(p.name for p in tmp_path.glob("*.svg")) == ["chat-assistant-memo.cost.svg", "chat-assistant-memo.memory.svg",
                                                              "chat-assistant-memo.tradeoff.svg"]
    assert "its charts beside it: chat-assistant-memo.cost.svg" in out
    assert main(["explain", str(path), "--why-not", "rtx-pro-6000"]) == 0
    text = capsys.readouterr().out
    assert "Recommended: 2 x h100-sxm (1 node(s), TP 2 x PP 1 x DP 1)" in text
    assert ("Why not rtx-pro-6000:\n  ranked 3 with score -20; the recommendation scored -10\n"
            "    no-scale-up-link-for-sharding: -10\n    fewer-cards-for-serving: -10") in text
    # TP 2 now (the higher throughput per card-hour under the per-token ranking), no longer one copy per card
    assert "figures: 2 cards, each needs 42.0 GB of its 96 GB, $1.98/h" in text
