"""Dialogue transcripts: a session's answers, typed line by line, with the workload they made and the
decision it led to (transcripts/*.yaml; tests/record_transcripts.py records the shipped ones). A
replay types the same lines into a fresh dialogue and reports where the questions or the decision
now differ (`gpu-advisor replay`)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import yaml

from advisor import __version__
from advisor.base import yamlio
from advisor.base.errors import InputError

#: the decision's fields a replay compares (the digests change with any rule or catalog edit)
COMPARED = ("gpu", "count", "nodes", "tp", "pp", "dp", "decisive_rule")


def transcript(dlg) -> dict:
    """The transcript of a dialogue (advisor.shell.dialogue.Dialogue) as it stands."""
    rec = dlg.decision.record if dlg.decision else {}
    r = rec.get("recommendation") or {}
    return {
        "transcript": 1, "advisor": __version__,
        "preset": {k: dlg.answers[k] for k in sorted(dlg.preset) if k in dlg.answers},
        "steps": dlg.steps,
        "workload": dlg.workload_data(),
        "decision": {"gpu": r.get("gpu"), "count": r.get("count"), "nodes": r.get("nodes"), "tp": r.get("tp"),
                     "pp": r.get("pp"), "dp": r.get("dp"),
                     "decisive_rule": (rec.get("decisive_rule") or {}).get("id"),
                     "rules_sha256": rec.get("versions", {}).get("rules_sha256"),
                     "catalog_sha256": rec.get("versions", {}).get("catalog_sha256")},
    }


def transcript_yaml(dlg) -> str:
    return yaml.safe_dump(transcript(dlg), sort_keys=False, allow_unicode=True, width=100)


def _decision_steps(steps: list) -> list:
    """The steps a replay types: not the answers about files already there (a replay writes nothing, so it
    is never asked whether to replace them), nor a file name the user then declined to replace them with."""
    out = []
    for i, st in enumerate(steps):
        if isinstance(st, dict) and st.get("question") == "overwrite":
            continue
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        if (isinstance(st, dict) and st.get("question") == "path" and isinstance(nxt, dict) and nxt.get("question") == "overwrite"
                and str(nxt.get("answer", "")).strip().lower() in ("", "n", "no")):
            continue
        out.append(st)
    return out


def replay(path: str | Path, start: Callable[[dict], object]) -> tuple[bool, list[str]]:
    """Feed a transcript's answers through the dialogue that `start(preset answers)` opens (a dry run);
    (same, differences)."""
    t = yamlio.load(path)
    if not isinstance(t, dict) or t.get("transcript") != 1 or not isinstance(t.get("steps"), list):
        raise InputError(f"{path}: not a gpu-advisor transcript")
    dlg = start(dict(t.get("preset") or {}))
    diffs = []
    for i, step in enumerate(_decision_steps(t["steps"])):
        if dlg.stage in ("done", "quit"):
            diffs.append(f"step {i + 1}: the dialogue ended before '{step['question']}' was asked")
            break
        asked = dlg.current().id
        if asked != step["question"]:
            diffs.append(f"step {i + 1}: asked '{asked}', the transcript has '{step['question']}'")
            break
        dlg.submit(step["answer"])
    if not diffs and dlg.stage not in ("done", "quit"):
        diffs.append(f"the dialogue did not finish: it now asks '{dlg.current().id}'")
    got = transcript(dlg)["decision"] if dlg.decision else {}
    want = t.get("decision") or {}
    for k in COMPARED:
        if got.get(k) != want.get(k):
            diffs.append(f"decision {k}: transcript {want.get(k)!r}, now {got.get(k)!r}")
    return not diffs, diffs
