"""Every shipped example answers as recorded in tests/data/answers/ on the fixed test catalog
(tests/data/catalog/), and recommends on the shipped catalog the GPU and count recorded in
tests/data/shipped-verdicts.json (re-record both with `python tests/record_answers.py` after an
intended change): a change that moves code must not move a figure, and a GPU or price added to the
shipped catalog moves no answer unless it wins. The first difference is named by its path in the
record, a GPU by its id (e.g. `record.candidates.h200-sxm.premium`)."""
import json
import math

import pytest

from record_answers import ANSWERS, SHIPPED_VERDICTS, answer, examples, verdict


def _first_difference(want, got, path="record"):
    if type(want) is not type(got) and not (isinstance(want, (int, float)) and isinstance(got, (int, float))):
        return f"{path}: {want!r} -> {got!r}"
    if isinstance(want, dict):
        for k in sorted(set(want) | set(got)):
            if k not in got or k not in want:
                return f"{path}.{k}: {'missing now' if k not in got else 'new'}"
            d = _first_difference(want[k], got[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(want, list):
        if len(want) != len(got):
            return f"{path}: {len(want)} items -> {len(got)}"
        for i, (a, b) in enumerate(zip(want, got)):
            d = _first_difference(a, b, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(want, float) or isinstance(got, float):
        # the same figure to 1e-9: Python 3.12's sum() rounds once where 3.11 rounded each step
        # (57945.59999999999 on 3.11, 57945.6 on 3.12), a difference in the last bit, not in the answer
        return None if math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-12) else f"{path}: {want!r} -> {got!r}"
    return None if want == got else f"{path}: {want!r} -> {got!r}"


@pytest.mark.parametrize("path", examples(), ids=lambda p: p.stem)
def test_example_answers_as_recorded(path):
    want = json.loads((ANSWERS / f"{path.stem}.json").read_text(encoding="utf-8"))
    got = answer(path)
    assert _first_difference(want, got) is None, _first_difference(want, got)


def test_every_example_recommends_on_the_shipped_catalog_as_recorded():
    """One test for all examples, naming each whose verdict moved: a GPU that wins some examples is one
    failure to read, not one per example."""
    want = json.loads(SHIPPED_VERDICTS.read_text(encoding="utf-8"))
    got = {p.stem: verdict(p) for p in examples()}
    assert sorted(got) == sorted(want), "examples added or removed: re-record with python tests/record_answers.py"
    moved = [f"{k}: {want[k]['count']} x {want[k]['gpu']} -> {got[k]['count']} x {got[k]['gpu']}"
             for k in sorted(got) if got[k] != want[k]]
    assert not moved, "on the shipped catalog: " + "; ".join(moved)
