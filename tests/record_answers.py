"""Record the decision record of every shipped example (examples/*.yaml), without what names the
code rather than the answer (`versions`: digests, rule folders, price files), so that a change meant
to move code, not answers, is shown to leave every figure as it was.

    python tests/record_answers.py      # rewrites tests/data/answers/ after an intended change

tests/test_answers.py decides every example again and compares with these files field by field.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ANSWERS = ROOT / "tests" / "data" / "answers"
VOLATILE = ("versions",)          # digests and paths: they follow the code and the files, not the answer


def examples() -> list[Path]:
    return sorted(p for p in (ROOT / "examples").glob("*.yaml") if p.name != "grid.yaml")


def answer(path: Path) -> dict:
    """The record `recommend --format json` prints for the workload, less VOLATILE."""
    from advisor.shell.cli import main
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["recommend", str(path), "--format", "json"])
    if code:
        raise SystemExit(f"{path}: exit {code}")
    rec = json.loads(buf.getvalue())
    for k in VOLATILE:
        rec.pop(k, None)
    return rec


def main() -> None:
    ANSWERS.mkdir(parents=True, exist_ok=True)
    for p in examples():
        (ANSWERS / f"{p.stem}.json").write_text(json.dumps(answer(p), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                                                encoding="utf-8")
        print(f"recorded {p.stem}")


if __name__ == "__main__":
    main()
