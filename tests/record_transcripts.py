"""Re-record the shipped dialogue transcripts (transcripts/*.yaml) by answering the real dialogue.

    python tests/record_transcripts.py          # rewrites transcripts/ after an intended change

Each scenario maps question ids to the raw answers typed (a list when the question is asked more than
once: wrong answers, `?`, `why` and `back` are recorded like any other input); a question not listed
is answered with Enter (its default). `gpu-advisor replay transcripts/*.yaml` and the test suite replay them.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.inputs import catalog
from advisor.judgement import knowledge  # noqa: E402
from advisor.judgement.advise import Setup  # noqa: E402
from advisor.shell.dialogue import Dialogue  # noqa: E402

SCENARIOS = {
    "gpt-oss-120b-one-user": {"mode": "inference", "model": ["gpt-oss-12", "gpt-oss-120b"], "concurrency": ["?", "1"]},
    "gpt-oss-120b-many-users": {"mode": "inference", "model": "gpt-oss-120b", "concurrency": ["why", "lots", "64"]},
    "kimi-k3-serving": {"mode": "inference", "model": "kimi-k3", "concurrency": "8"},
    "70b-full-fine-tuning": {"mode": "fine-tuning", "model": "llama-3.1-70b", "method": "full", "precision": "bf16",
                             "context_tokens": "4096", "zero_stage": "3", "training_tokens": "2e9"},
    "13b-full-fine-tuning": {"mode": "fine-tuning", "model": "other", "params_b": "13", "layers": "40",
                             "hidden_size": "5120", "kv_heads": "40", "head_dim": "128", "method": "full",
                             "precision": "fp16", "context_tokens": "2048"},
    "7b-lora": {"mode": "fine-tuning", "model": "mistral-7b", "method": "lora", "precision": "fp16",
                "context_tokens": "2048", "activation_checkpointing": "yes"},
    "128k-context-training": {"mode": "fine-tuning", "model": "llama-3.1-8b", "method": "full", "precision": "bf16",
                              "context_tokens": "131072", "activation_checkpointing": "yes", "zero_stage": "3"},
    "moe-training": {"mode": "training", "model": "mixtral-8x7b", "precision": ["bf16"], "context_tokens": "4096",
                     "zero_stage": "3", "training_tokens": "1e10"},
    "pretraining-deadline": {"mode": "training", "model": "llama-3.1-8b", "precision": "bf16", "context_tokens": "8192",
                             "training_tokens": "1T", "global_batch": "512", "deadline_hours": "720", "spot": "no"},
    "video-diffusion-training": {"mode": "training", "model": "other", "params_b": "5", "layers": "28",
                                 "hidden_size": "3072", "task": "video-diffusion", "precision": "bf16",
                                 "context_tokens": "32768", "activation_checkpointing": "yes"},
    "rlhf": {"mode": "fine-tuning", "model": "llama-3.1-8b", "task": "rlhf", "method": "grpo", "samples_per_prompt": "8",
             "prompts_per_step": "128", "rl_prompt_tokens": "512", "rl_output_tokens": "2k", "rl_steps": "200",
             "precision": "bf16", "context_tokens": "2560", "activation_checkpointing": "yes"},
    "import-restricted-inference": {"mode": "inference", "model": "gpt-oss-120b", "concurrency": "16",
                                    "import_restricted": ["why", "yes"]},
    "on-prem-no-liquid-5kw": {"mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "concurrency": "32",
                              "deployment": "on-prem", "liquid_cooling": "no", "power_kw_per_node": "5"},
    "small-image-classification": {"mode": "training", "model": "other", "params_b": "0.022", "layers": "12",
                                   "hidden_size": "384", "task": "image-classification", "precision": "bf16",
                                   "context_tokens": "197", "micro_batch": "256", "training_tokens": "2.5e11"},
    "high-concurrency-short-text": {"mode": "inference", "model": "llama-3.1-8b", "context_tokens": "1300",
                                    "prompt_tokens": "500", "output_tokens": "300", "concurrency": "256",
                                    "latency": "batch"},
    "units-and-synonyms": {"mode": "finetune", "model": "other", "params_b": "27B", "layers": "46", "hidden_size": "4608",
                           "kv_heads": "16", "head_dim": "128", "method": "full", "precision": "bfloat16",
                           "context_tokens": "4k", "zero_stage": "fsdp", "training_tokens": "60M",
                           "budget_usd_per_hour": "100/h"},
    "service-level-in-words": {"mode": "inference", "model": "llama-3.1-70b", "precision": "fp8", "concurrency": "32",
                               "service_level": ["?", "quick", "20 tokens/s, 1 s"]},
    # issue 42: a deadline in days, and an owned cluster busy office hours (8x5 was recorded as the month's
    # utilisation while the owning cost assumed "busy 70% (the default)")
    "deadline-in-days": {"mode": "fine-tuning", "model": "llama-3.1-8b", "method": "lora", "training_tokens": "1B",
                         "deadline_hours": ["soon", "2 days"]},
    "on-prem-office-hours": {"mode": "inference", "model": "llama-3.1-8b", "concurrency": "16", "deployment": "on-prem",
                             "liquid_cooling": "no", "busy_share": "8x5", "confirm": ["edit 99", "edit 16", "yes"]},
    "back-and-edit": {"mode": "inference", "model": ["llama-3.1-70b", "llama-3.1-8b"], "task": ["back", ""],
                      "confirm": ["edit concurrency", "yes"], "concurrency": ["4", "12"]},
}


def record(name: str, answers: dict, cat, kb, out: Path) -> dict:
    dlg = Dialogue(Setup(cat, kb), dry_run=True)
    queue = {k: list(v) if isinstance(v, list) else [v] for k, v in answers.items()}
    while dlg.stage not in ("done", "quit"):
        p = dlg.current()
        pending = queue.get(p.id)
        dlg.submit(pending.pop(0) if pending else "")
    t = dlg.transcript()
    t["scenario"] = name
    (out / f"{name}.yaml").write_text(dlg.transcript_yaml().replace("transcript: 1\n", f"transcript: 1\nscenario: {name}\n", 1))
    return t["decision"]


def main() -> None:
    cat, kb = catalog.default(), knowledge.load()
    out = ROOT / "transcripts"
    out.mkdir(exist_ok=True)
    for name, answers in SCENARIOS.items():
        d = record(name, answers, cat, kb, out)
        print(f"{name:<30} {d['count']} x {d['gpu']} (TP {d['tp']} x PP {d['pp']} x DP {d['dp']}), decided by {d['decisive_rule']}")


if __name__ == "__main__":
    main()
