"""README.md true by construction (issue 23): its excerpts are what the commands print today, its timing
claims what bench/run.py last wrote (bench/last.json); nothing here times anything."""
import importlib.util
import json
from pathlib import Path

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("readme_script", ROOT / "docs" / "readme.py")
readme = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme)

TEXT = (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def wanted():
    return readme.render(TEXT)


def test_readme_excerpts_are_what_the_commands_print(wanted):
    diff = readme.drift(TEXT, wanted)
    assert not diff, "README.md drifted (run `.venv/bin/python docs/readme.py`):\n" + "\n".join(diff[:60])


def test_every_marked_part_is_filled_and_shows_its_command():
    parts = {m["name"]: m["body"] for m in readme.MARK.finditer(TEXT)}
    assert set(parts) == set(readme.PARTS)
    assert "$ gpu-advisor recommend examples/workstation-gemma-27b.yaml" in parts["workstation"]
    assert "$ gpu-advisor recommend examples/fleet-h100.yaml" in parts["fleet"]
    assert "Buy or rent:" in parts["workstation"] and "owned" in parts["fleet"]
    assert "$ gpu-advisor ask" in parts["dialogue"] and "Recommendation:" in parts["dialogue"]


def test_timing_claims_are_bench_last_json():
    b = json.loads((ROOT / "bench" / "last.json").read_text())
    part = next(m["body"] for m in readme.MARK.finditer(TEXT) if m["name"] == "bench")
    assert part == readme.bench()
    assert f"{b['cold_start_ms']['json']['cache_warm']:.0f} ms with the cache warm" in part
    assert b["date"] in part and f"{b['machine']['cores']}-core" in part


def test_the_front_door_and_the_optional_prerequisites_are_listed():
    install = "CPPFLAGS=-DPyEval_CallObject=PyObject_CallObject .venv/bin/pip install -e"
    assert f"{install} . && .venv/bin/gpu-advisor recommend examples/chat-assistant.yaml" in TEXT
    # the test command installs the deploy files' validators too, as CI's full run does (.ci/run)
    assert f"{install} '.[test,deploy-test]' && .venv/bin/python -m pytest" in TEXT
    assert "install -q -e '.[test,deploy-test]'" in (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "Chromium" in TEXT and "tmux" in TEXT and "apt-get install -y chromium tmux" in TEXT


def test_drift_is_caught_and_only_the_memo_date_is_masked(wanted):
    assert not readme.drift(wanted, readme.DATE_LINE.sub(r"\g<1>1999-01-01", wanted))
    stale = wanted.replace("Per unit of work: $0.19 per million output tokens", "Per unit of work: $0.18 per million output tokens", 1)
    assert stale != wanted and readme.drift(stale, wanted)
