"""Every shipped example answers as recorded in tests/data/answers/ (re-record with
`python tests/record_answers.py` after an intended change): a change that moves code must not move a
figure. The first difference is named by its path in the record."""
import json
import math

import pytest

from record_answers import ANSWERS, answer, examples


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
    got = json.loads(json.dumps(answer(path)))
    assert _first_difference(want, got) is None, _first_difference(want, got)
