"""Random rules through durable_rules and through the why-not evaluator: no disagreement
(bench/differential.py; bench/valgrind.sh runs the same under valgrind)."""
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import differential  # noqa: E402


def test_engine_agrees_with_evaluator():
    mismatches, fallbacks = differential.run(decisions=60, n_rules=120)
    assert fallbacks == 0, "the engine failed and the evaluator stood in"
    assert mismatches == 0


def test_engine_agrees_on_another_draw():
    mismatches, fallbacks = differential.run(decisions=40, n_rules=200, seed=11)
    assert (mismatches, fallbacks) == (0, 0)
