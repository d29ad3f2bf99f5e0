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


def test_no_background_dispatcher_threads():
    """durable_rules' Host runs dispatcher threads that can steal a pending action from the asserting
    thread (error 307 seen under valgrind); the advisor's Host has none."""
    import threading
    import time

    from advisor.judgement import knowledge
    from advisor.judgement.engine import runner
    before = {t for t in threading.enumerate() if isinstance(t, threading.Timer)}
    r = runner(knowledge.load())
    r.fire(0, "workload", [{"id": "workload", "w_mode": "inference", "w_load": "irregular"}])
    time.sleep(0.3)
    after = {t for t in threading.enumerate() if isinstance(t, threading.Timer)}
    assert after <= before
