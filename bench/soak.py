"""One process makes N decisions in a row over varied workloads; prints memory (RSS) as it goes and
checks the answers against fresh processes.

    python bench/soak.py [N]        # default 10,000
"""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ["gpt-oss-120b", "gpt-oss-20b", "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "kimi-k3", "qwen3-30b-a3b"]


def workloads():
    """An endless, varied stream of valid workload documents."""
    combos = itertools.product(MODELS, ["inference", "fine-tuning"], [1, 8, 64], [4096, 32768], [False, True])
    for model, mode, conc, ctx, restricted in itertools.cycle(list(combos)):
        doc = {"mode": mode, "model": model, "concurrency": conc if mode == "inference" else 1,
               "context_tokens": ctx, "constraints": {"import_restricted": restricted}}
        if mode == "fine-tuning":
            doc.update(method="lora" if conc == 8 else "full", precision="bf16")
        yield doc


def rss_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return 0.0


def answer(rec: dict) -> tuple:
    r = rec["recommendation"] or {}
    return (r.get("gpu"), r.get("count"), r.get("tp"), r.get("pp"), r.get("dp"), (rec["decisive_rule"] or {}).get("id"))


def soak(n: int, report_every: int = 1000, fresh_checks: int = 8, out=print) -> dict:
    from advisor.inputs import catalog, workload
    from advisor.judgement import decision, knowledge
    from advisor import kinds as estimator   # the advise path: the workload kind's estimate
    cat, kb = catalog.default(), knowledge.load()
    stream = workloads()
    answers, rss = {}, []
    warm = max(1, n // 10)
    t = time.perf_counter()
    for i in range(1, n + 1):
        doc = next(stream)
        rec = decision.decide(estimator.estimate(workload.parse(doc, cat, "soak"), cat), kb, cat).record
        key = json.dumps(doc, sort_keys=True)
        a = answer(rec)
        if key in answers and answers[key] != a:
            raise AssertionError(f"decision {i} differs from the same workload decided earlier: {doc}")
        answers[key] = a
        if i == warm or i % report_every == 0 or i == n:
            rss.append((i, rss_mb()))
            out(f"{i:>6} decisions  RSS {rss[-1][1]:6.1f} MB  {(time.perf_counter() - t) / i * 1000:5.1f} ms/decision")
    after_warm = [m for i, m in rss if i >= warm]
    growth = (max(after_warm) - after_warm[0]) / after_warm[0]
    # the same workloads decided by fresh processes
    mismatches = 0
    for key in list(answers)[:fresh_checks]:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            json.dump(json.loads(key), f)     # JSON is YAML
        r = subprocess.run([sys.executable, "-m", "advisor", "recommend", f.name, "--format", "json"],
                           capture_output=True, text=True, cwd=ROOT, check=True)
        mismatches += answer(json.loads(r.stdout)) != answers[key]
    out(f"memory growth after warm-up: {growth * 100:+.1f}%; distinct workloads {len(answers)}; "
        f"fresh-process mismatches {mismatches} of {min(fresh_checks, len(answers))}")
    return {"growth": growth, "mismatches": mismatches, "rss": rss}


if __name__ == "__main__":
    soak(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
