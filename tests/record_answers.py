"""Record the decision record of every shipped example (examples/*.yaml) on the fixed test catalog
(tests/data/catalog/), and the verdict of each on the shipped catalog/.

    python tests/record_answers.py      # rewrites tests/data/answers/ and tests/data/shipped-verdicts.json

The recorded answers run on a frozen copy of the catalog, so that a GPU, model or price added to the
shipped catalog moves none of them; they are stored keyed by GPU id, not by rank (`by_gpu`), so that
a GPU added to the test catalog adds its own entries and leaves every other GPU's as it was. Left
out is what names the code or the files rather than the answer (`versions`: digests, rule folders,
price files; the line a rule starts on). The shipped catalog keeps a smaller check: each example's
recommended GPU and count (`shipped-verdicts.json`), which only a GPU or price that wins moves.

tests/test_answers.py decides every example again and compares with these files field by field.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ANSWERS = ROOT / "tests" / "data" / "answers"
TEST_CATALOG = ROOT / "tests" / "data" / "catalog"
SHIPPED_CATALOG = ROOT / "catalog"
SHIPPED_VERDICTS = ROOT / "tests" / "data" / "shipped-verdicts.json"
VOLATILE = ("versions",)          # digests and paths: they follow the code and the files, not the answer
UNRANKED = ("rank", "order")      # positions among the other GPUs: kept once, in `ranked`


def examples() -> list[Path]:
    return sorted(p for p in (ROOT / "examples").glob("*.yaml") if p.name != "grid.yaml")


@contextlib.contextmanager
def catalog_folder(folder: Path):
    """Decide with the catalog in `folder` and the shipped rules only (a GPU_ADVISOR_RULES of the
    person recording must not leak into the answers)."""
    saved = {k: os.environ.get(k) for k in ("GPU_ADVISOR_CATALOG", "GPU_ADVISOR_RULES")}
    os.environ["GPU_ADVISOR_CATALOG"] = str(folder)
    os.environ.pop("GPU_ADVISOR_RULES", None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def record(path: Path, folder: Path = TEST_CATALOG) -> dict:
    """The record `recommend --format json` prints for the workload on the catalog in `folder`, less VOLATILE."""
    from advisor.shell.cli import main
    buf = io.StringIO()
    with catalog_folder(folder), contextlib.redirect_stdout(buf):
        code = main(["recommend", str(path), "--format", "json"])
    if code:
        raise SystemExit(f"{path}: exit {code}")
    rec = json.loads(buf.getvalue())
    for k in VOLATILE:
        rec.pop(k, None)
    return rec


def by_gpu(rec: dict) -> dict:
    """The record with every list of per-GPU entries (candidates, alternatives, the trace, warnings...)
    made a mapping from GPU id to its entry (or its entries, in their order, where a GPU has several),
    without their positions among the other GPUs; the ranking is kept once, as `ranked`. Rule lines
    are dropped: an edit above a rule moves its line, not the answer."""
    def norm(x):
        if isinstance(x, dict):
            out = {k: norm(v) for k, v in x.items()}
            if str(out.get("file", "")).startswith("rules/"):
                out.pop("line", None)
            return out
        if not isinstance(x, list):
            return x
        items = [norm(e) for e in x]
        if not items or not all(isinstance(e, dict) and "gpu" in e for e in items):
            return items
        groups: dict[str, list] = {}
        for e in items:
            groups.setdefault(str(e["gpu"]), []).append({k: v for k, v in e.items() if k not in UNRANKED})
        return {g: v[0] if len(v) == 1 else v for g, v in groups.items()}
    ranked = [c["gpu"] for c in sorted((c for c in rec.get("candidates", []) if c.get("rank") is not None),
                                        key=lambda c: c["rank"])]
    return {**norm(rec), "ranked": ranked}


def answer(path: Path) -> dict:
    """What tests/data/answers/ holds for the workload: its record on the test catalog, by GPU id."""
    return by_gpu(json.loads(json.dumps(record(path))))


def verdict(path: Path, folder: Path = SHIPPED_CATALOG) -> dict:
    """The recommended GPU and count for the workload on the catalog in `folder`."""
    r = record(path, folder)["recommendation"]
    return {"gpu": r.get("gpu"), "count": r.get("count")}


def dump(data) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    ANSWERS.mkdir(parents=True, exist_ok=True)
    for p in examples():
        (ANSWERS / f"{p.stem}.json").write_text(dump(answer(p)), encoding="utf-8")
        print(f"recorded {p.stem}")
    SHIPPED_VERDICTS.write_text(dump({p.stem: verdict(p) for p in examples()}), encoding="utf-8")
    print(f"recorded {SHIPPED_VERDICTS.name}")


if __name__ == "__main__":
    main()
