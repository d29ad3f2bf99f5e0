import os
import tempfile
from pathlib import Path

import pytest

# the tests use a cache of their own, empty at the start of every run
os.environ["GPU_ADVISOR_CACHE"] = tempfile.mkdtemp(prefix="gpu-advisor-test-cache-")

from advisor import kinds
from advisor.inputs import catalog as catalog_mod
from advisor.inputs import workload
from advisor.judgement import decision, knowledge
from advisor.numbers import estimate as estimator

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="session")
def catalog():
    return catalog_mod.default()


@pytest.fixture(scope="module")
def kb():
    return knowledge.load()


def decide(catalog, kb, data):
    """The decision on a workload given as a mapping (named "w" in its errors)."""
    w = workload.parse(data, catalog, "w")
    return decision.decide(kinds.estimate(w, catalog), kb, catalog)    # by the workload's kind, as advise does


@pytest.fixture(scope="session")
def estimate_file(catalog):
    """Run the estimator on a workload file under examples/ (by stem) or any path."""
    def run(name: str, **overrides):
        path = EXAMPLES / f"{name}.yaml" if not name.endswith(".yaml") else Path(name)
        data = dict(workload.yamlio.load(path))
        data.update(overrides)
        return estimator.estimate(workload.parse(data, catalog, str(path)), catalog)
    return run


def refuse(capsys, argv, expected):
    """Run the CLI in-process: exit 2, `expected` in the error, every line an error line, no traceback."""
    from advisor.shell.cli import main
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert expected in err, err
    assert "Traceback" not in err and all(line.startswith("gpu-advisor: error: ") for line in err.strip().splitlines())
    return err


# The smoke set CI runs on the Pythons other than the first (the full suite runs once, on 3.11):
# the modules that exercise what differs between Python versions (the engine's C build and its
# warnings, the dialogue's terminal library, the CLI's exits) and every example decided end to end.
SMOKE_MODULES = {"test_answers.py", "test_engine_differential.py", "test_decisions.py", "test_dialogue.py",
                 "test_fast_paths.py", "test_cli_estimate.py", "test_readme.py"}
# real-program tests that take tens of seconds: run once, in the full suite (not in the smoke set)
SLOW = {"test_many_decisions_in_one_process", "test_two_concurrent_sweeps_to_one_table",
        "test_ctrl_c_during_a_parallel_sweep_gives_one_line", "test_5000_rules_decide_correctly"}


def pytest_configure(config):
    config.addinivalue_line("markers", "smoke: the smoke set run on every supported Python")
    config.addinivalue_line("markers", "slow: a real-program test of tens of seconds, run in the full suite only")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SMOKE_MODULES:
            item.add_marker(pytest.mark.smoke)
        if item.originalname in SLOW:
            item.add_marker(pytest.mark.slow)
