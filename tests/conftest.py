import os
import tempfile
from pathlib import Path

import pytest

# the tests use a cache of their own, empty at the start of every run
os.environ["GPU_ADVISOR_CACHE"] = tempfile.mkdtemp(prefix="gpu-advisor-test-cache-")

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
    return decision.decide(estimator.estimate(w, catalog), kb, catalog)


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
