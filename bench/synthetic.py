"""Synthetic knowledge bases of N rules (for the scaling test and bench/run.py)."""
from __future__ import annotations

import random
from pathlib import Path

NUMERIC = [("candidate.per_card_gb", 1, 300), ("candidate.count", 1, 64), ("candidate.memory_gb", 16, 288),
           ("candidate.bandwidth_tb_s", 0.3, 8.0), ("workload.context_tokens", 512, 131072),
           ("candidate.tokens_per_s", 10, 20000), ("workload.per_card_need_gb", 1, 3000)]
STRINGS = [("candidate.vendor", ["nvidia", "amd", "huawei", "intel", "google"]),
           ("candidate.generation", ["ampere", "hopper", "blackwell", "ada", "cdna3"]),
           ("workload.mode", ["inference", "training", "fine-tuning"])]


GPUS = ["h100-sxm", "h200-sxm", "a100-80gb-sxm", "l40s", "b200", "mi300x", "ascend-910c", "rtx-4090"]
MODELS = ["gpt-oss-120b", "llama-3.1-70b", "llama-3.1-8b", "deepseek-v3", "kimi-k3"]


def write(directory: Path, n: int, seed: int = 1, per_file: int = 500, guarded: float = 0.0) -> Path:
    """n random rules in files of per_file. A share `guarded` of them start with the kind of test user
    rules usually have ("for the H200 ...", "for gpt-oss-120b ..."); the rest test random thresholds."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(0, n, per_file):
        lines = ["rules:"]
        for i in range(f, min(n, f + per_file)):
            conds = []
            if rng.random() < guarded:
                conds.append(rng.choice([f"candidate.gpu: {rng.choice(GPUS)}", f"workload.model: {rng.choice(MODELS)}"]))
            for _ in range(rng.randint(1, 3)):
                if rng.random() < 0.6:
                    fact, lo, hi = rng.choice(NUMERIC)
                    v = round(rng.uniform(lo, hi), 2) if isinstance(lo, float) else rng.randint(lo, hi)
                    conds.append(f"{fact}: {{{rng.choice(['lt', 'lte', 'gt', 'gte'])}: {v}}}")
                else:
                    fact, vals = rng.choice(STRINGS)
                    conds.append(f"{fact}: {{{rng.choice(['eq', 'ne'])}: {rng.choice(vals)}}}")
            if not any(c.startswith("candidate.") for c in conds):
                conds.append("candidate.fits: true")
            facts = {c.split(":")[0] for c in conds}
            conds = [c for c in conds if c.split(":")[0] in facts and not facts.discard(c.split(":")[0])]
            effect = rng.choice(["prefer: {weight: %d}" % rng.randint(1, 20), "avoid: {weight: %d}" % rng.randint(1, 20),
                                 "note: {text: synthetic}"])
            lines += [f"  - id: synthetic-{i}", f"    title: synthetic rule {i}", "    source: [synthetic]",
                      "    group: synthetic", "    when:"] + [f"      {c}" for c in conds] + [f"    then: {{{effect}}}"]
        (directory / f"synthetic-{f // per_file:03d}.yaml").write_text("\n".join(lines) + "\n")
    return directory
