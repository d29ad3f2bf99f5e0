"""Performance figures, printed as medians over repeated runs (never asserted in tests).

    python bench/run.py [--quick]

1. cold start of `gpu-advisor recommend EXAMPLE --format json` and of the Markdown memo, as whole processes
   (target <= 0.25 s), with the parse cache warm and with it off;
2. one in-process decision with the shipped knowledge base: load once, decide many (target <= 15 ms);
3. knowledge-base scaling: load + one decision with 50, 500 and 5,000 synthetic rules (target <= 1 s for 5,000);
4. sweep throughput in decisions per second on all cores (target >= 120).

The figures also go to bench/last.json (committed; `--out FILE` elsewhere), with the date and the
machine: README.md quotes them from there (docs/readme.py), so the README never times anything.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
EXAMPLE = ROOT / "examples" / "chat-assistant.yaml"
_ARGS = argparse.ArgumentParser(description="Performance figures, printed as medians (see the module docstring).")
_ARGS.add_argument("--quick", action="store_true", help="3 runs instead of 9, smaller sweep")
_ARGS.add_argument("--out", type=Path, default=ROOT / "bench" / "last.json", help="where the figures go (JSON)")
_OPTS = _ARGS.parse_args() if __name__ == "__main__" else _ARGS.parse_args([])
QUICK, LAST = _OPTS.quick, _OPTS.out.resolve()


def median_ms(samples):
    return statistics.median(samples) * 1000


def cli() -> list[str]:
    exe = Path(sys.executable).with_name("gpu-advisor")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "advisor"]


def cold_start(fmt: str, cache: str, runs: int) -> float:
    env = {**os.environ, "GPU_ADVISOR_CACHE": cache}
    cmd = cli() + ["recommend", str(EXAMPLE), "--format", fmt]
    subprocess.run(cmd, env=env, capture_output=True, check=True)          # warms the cache (if on)
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=True)
        samples.append(time.perf_counter() - t)
    return median_ms(samples)


def in_process(runs: int) -> dict:
    from advisor.inputs import catalog, workload
    from advisor.judgement import decision, knowledge
    from advisor import kinds as estimator   # the advise path: the workload kind's estimate
    cat, kb = catalog.default(), knowledge.load()
    names = ["chat-assistant", "gpt-oss-120b-one-user", "kimi-k3-serving", "llama-13b-full-finetune",
             "mistral-7b-lora", "llama-70b-fp16-serving", "gpt-oss-120b-training"]
    ws = [workload.load(ROOT / "examples" / f"{n}.yaml", cat) for n in names]
    for w in ws:
        decision.decide(estimator.estimate(w, cat), kb, cat)
    est_s, dec_s, rec_s = [], [], []
    for i in range(runs):
        w = ws[i % len(ws)]
        t = time.perf_counter()
        est = estimator.estimate(w, cat)
        t1 = time.perf_counter()
        d = decision.decide(est, kb, cat)
        t2 = time.perf_counter()
        d.record
        t3 = time.perf_counter()
        est_s.append(t1 - t)
        dec_s.append(t2 - t)
        rec_s.append(t3 - t)
    return {"estimate": median_ms(est_s), "estimate+decide": median_ms(dec_s), "with record": median_ms(rec_s)}


SCALE_CHILD = r"""
import sys, time, json
sys.path.insert(0, sys.argv[2])
t0 = time.perf_counter()
from advisor.inputs import catalog, workload
from advisor.judgement import decision, knowledge
from advisor import kinds as estimator   # the advise path: the workload kind's estimate
from pathlib import Path
cat = catalog.default()
kb = knowledge.load([Path(sys.argv[1])])
t1 = time.perf_counter()
w = workload.load(Path(sys.argv[2]) / "examples" / "chat-assistant.yaml", cat)
d = decision.decide(estimator.estimate(w, cat), kb, cat)
t2 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "decide": t2 - t1, "firings": len(d.firings)}))
"""


def scaling(n: int, cache: str, runs: int, guarded: float = 0.8) -> dict:
    import synthetic
    env = {**os.environ, "GPU_ADVISOR_CACHE": cache}
    out = []
    with tempfile.TemporaryDirectory(prefix=f"kb{n}-") as tmp:
        d = Path(tmp)
        synthetic.write(d, n, guarded=guarded)
        for _ in range(runs + (1 if cache != "0" else 0)):
            r = subprocess.run([sys.executable, "-c", SCALE_CHILD, str(d), str(ROOT)], env=env, capture_output=True,
                               text=True, check=True)
            out.append(json.loads(r.stdout))
    if cache != "0":
        out = out[1:]          # the first run filled the cache
    return {"load+decide": median_ms([o["load"] + o["decide"] for o in out]),
            "load": median_ms([o["load"] for o in out]), "decide": median_ms([o["decide"] for o in out]),
            "firings": out[0]["firings"]}


def sweep_throughput(n_conc: int) -> tuple[float, int]:
    from advisor.shell import sweep
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        grid = Path(tmp) / "grid.yaml"
        grid.write_text(f"base: {EXAMPLE}\nvary:\n  model: [gpt-oss-120b, llama-3.1-70b, llama-3.1-8b, mixtral-8x7b]\n"
                        f"  concurrency: {list(range(1, n_conc + 1))}\n  context_tokens: [4096, 32768]\n")
        t = time.perf_counter()
        written, total, _, _ = sweep.run(grid, Path(tmp) / "t.csv", progress=False)
        return written / (time.perf_counter() - t), written


def main() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "advisor")], check=True)
    with tempfile.TemporaryDirectory(prefix="gpu-advisor-bench-cache-") as cache:
        measure(cache)


def measure(cache: str) -> None:
    runs = 3 if QUICK else 9
    fig: dict = {"date": datetime.date.today().isoformat(), "runs": runs, "quick": QUICK,
                 "machine": {"cores": os.cpu_count(), "python": sys.version.split()[0],
                             "platform": f"{platform.system()} {platform.machine()}",
                             # what else the machine was doing: the figures are only as quiet as it was
                             "load_average_1min_at_start": round(os.getloadavg()[0], 2)}}
    print(f"gpu-advisor benchmarks on {os.cpu_count()} cores, Python {sys.version.split()[0]} (medians of {runs} runs)")
    print("1. cold start, whole process (target <= 250 ms)")
    fig["cold_start_ms"] = {}
    for fmt in ("json", "md"):
        warm, off = cold_start(fmt, cache, runs), cold_start(fmt, "0", runs)
        fig["cold_start_ms"][fmt] = {"cache_warm": round(warm, 1), "cache_off": round(off, 1)}
        print(f"   recommend --format {fmt:<4}  cache warm {warm:7.0f} ms   cache off {off:7.0f} ms")
    r = in_process(70 if QUICK else 350)
    fig["decision_ms"] = {k: round(v, 2) for k, v in r.items()}
    print(f"2. one in-process decision (target <= 15 ms): estimate {r['estimate']:.1f} ms, estimate + decide "
          f"{r['estimate+decide']:.1f} ms, and with the JSON decision record and its rule texts {r['with record']:.1f} ms")
    print("3. knowledge-base scaling, load + one decision (target <= 1,000 ms for 5,000 rules)")
    print("   (synthetic rules: 80% start with a test on one GPU or model, as user rules do; the rest test random thresholds)")
    fig["rules_ms"] = {}
    for n in (50, 500, 5000):
        warm = scaling(n, cache, 1 if QUICK else 3)
        cold = scaling(n, "0", 1)
        fig["rules_ms"][str(n)] = {"load+decide": round(warm["load+decide"], 1), "load": round(warm["load"], 1),
                                   "decide": round(warm["decide"], 1), "firings": warm["firings"],
                                   "first_load_without_cache": round(cold["load+decide"], 1)}
        print(f"   {n:>5} rules: {warm['load+decide']:7.0f} ms (load {warm['load']:.0f}, decide {warm['decide']:.0f}, "
              f"{warm['firings']} firings); first load without cache {cold['load+decide']:.0f} ms")
    every = scaling(5000, cache, 1 if QUICK else 3, guarded=1.0)
    fig["rules_ms"]["5000_all_guarded"] = {"load+decide": round(every["load+decide"], 1), "firings": every["firings"]}
    print(f"   5,000 rules that all start with such a test: {every['load+decide']:7.0f} ms (load {every['load']:.0f}, "
          f"decide {every['decide']:.0f}, {every['firings']} firings)")
    rate, n = sweep_throughput(10 if QUICK else 50)
    fig["sweep"] = {"decisions_per_s": round(rate, 1), "combinations": n}
    print(f"4. sweep on {os.cpu_count()} cores (target >= 120/s): {rate:.0f} decisions/s over {n} combinations")
    fig["machine"]["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    LAST.write_text(json.dumps(fig, indent=2) + "\n")
    print(f"wrote {LAST.relative_to(ROOT) if LAST.is_relative_to(ROOT) else LAST} (README.md quotes it: python docs/readme.py)")


if __name__ == "__main__":
    main()
