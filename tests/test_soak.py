"""The engine under load (a short version of bench/soak.py): memory stays flat after warm-up and
answers equal those of fresh processes. bench/soak.py runs the 10,000-decision version."""
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import soak  # noqa: E402


def test_many_decisions_in_one_process():
    result = soak.soak(600, report_every=100, fresh_checks=3, out=lambda s: None)
    assert result["growth"] < 0.10
    assert result["mismatches"] == 0
