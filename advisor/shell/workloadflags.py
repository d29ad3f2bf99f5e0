"""A workload from the command line: `recommend --model meta-llama/Llama-3.1-70B-Instruct --users 64`
needs no file, and the same flags beside a file override its fields (`recommend chat.yaml --users 128`).
`--gpu` takes what people write where they name a GPU (advisor/inputs/names.py: `H100`, `H100:8`,
`80GB+`). Every value is checked by the workload file's own rules (advisor/inputs/workload.py), its
errors naming the flag."""
from __future__ import annotations

from dataclasses import replace

from advisor.base.errors import InputError, Problem

#: flag (argparse dest) -> workload field; `constraints.` fields go under constraints:
FLAGS = {"model": "model", "users": "concurrency", "mode": "mode", "precision": "precision",
         "context": "context_tokens", "training_tokens": "training_tokens", "method": "method",
         "max_gpus": "constraints.max_gpus", "budget": "constraints.budget_usd_per_hour",
         "deployment": "constraints.deployment", "name": "name"}
#: where the command line's workload is said to come from in its messages
SOURCE = "command line"


def add_arguments(parser) -> None:
    """The flags of a workload without a file (recommend and estimate)."""
    g = parser.add_argument_group("a workload from flags (no file needed; beside a file they replace its fields)")
    g.add_argument("--model", metavar="ID", help="a catalog model or a Hugging Face id (meta-llama/Llama-3.1-70B-Instruct)")
    g.add_argument("--users", metavar="N", help="concurrent users (the workload's concurrency)")
    g.add_argument("--mode", choices=("inference", "training", "fine-tuning"), help="default: inference")
    g.add_argument("--precision", metavar="P", help="weights' precision (bf16, fp8, int4, ...)")
    g.add_argument("--context", metavar="TOKENS", help="tokens per sequence (context_tokens)")
    g.add_argument("--training-tokens", metavar="N", help="tokens of the whole training job")
    g.add_argument("--method", choices=("full", "lora", "qlora"), help="fine-tuning method")
    g.add_argument("--max-gpus", metavar="N", help="most GPUs the team can use")
    g.add_argument("--budget", metavar="USD_PER_HOUR", help="most the team pays per hour")
    g.add_argument("--deployment", metavar="WHERE", help="cloud, on-prem, air-gapped or workstation")
    g.add_argument("--name", metavar="TEXT", help="a name for the memo's title")


def given(args) -> dict[str, object]:
    """The workload fields the flags give (dest -> value), numbers as numbers."""
    return {dest: _value(getattr(args, dest)) for dest in FLAGS if getattr(args, dest, None) is not None}


def _value(text):
    """A flag's text as the YAML loader gives a number (64 -> 64, 1.5 -> 1.5, 2e12 -> 2e12); anything else
    stays text, for the workload's checks to read or refuse (`8k` and `one` alike)."""
    import re
    t = str(text).strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if re.fullmatch(r"-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?", t, re.I):
        return float(t)
    return text


def load(args, catalog):
    """The workload: the file's, with the flags' fields over it, or the flags' alone."""
    from advisor.base import yamlio
    from advisor.inputs import workload
    flags = given(args)
    path = getattr(args, "workload", None)
    if not path and "model" not in flags:
        raise InputError(Problem("give a workload file (WORKLOAD.yaml) or at least --model "
                                 "(e.g. --model meta-llama/Llama-3.1-70B-Instruct --users 64)", None, None, "WORKLOAD.yaml"))
    if not flags:
        return workload.load(path, catalog)
    data = yamlio.load(path) if path else {}
    if not isinstance(data, dict):
        return workload.load(path, catalog)             # its own message says what is wrong with it
    import copy
    data = copy.copy(data)                  # a YAML mapping keeps its lines for the file's own fields
    if not path:
        data.setdefault("mode", "inference")
        data.setdefault("name", _name(flags))
    for dest, value in flags.items():
        field = FLAGS[dest]
        if field.startswith("constraints."):
            inner = copy.copy(data.get("constraints")) if isinstance(data.get("constraints"), dict) else {}
            inner[field.split(".", 1)[1]] = value
            data["constraints"] = inner
        else:
            data[field] = value
    try:
        return workload.parse(data, catalog, path or SOURCE)
    except InputError as exc:
        raise InputError([_flag_named(p, path) for p in exc.problems]) from None


def _name(flags: dict) -> str:
    import re
    model = str(flags["model"]).split("/")[-1]
    users = f"-{flags['users']}-users" if "users" in flags else ""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{model}{users}")[:80]


def _flag_named(p: Problem, path) -> Problem:
    """A problem with a field the flags gave, told as the flag's (`--users: must be ...`)."""
    flag = next((f"--{dest.replace('_', '-')}" for dest, field in FLAGS.items() if p.field == field), None)
    if flag and (not path or p.file == SOURCE or p.line in (None, 0, 1)):
        return Problem(p.message, None, None, flag)
    return p


def with_gpu_flags(w, args, catalog):
    """The workload with --gpu's selectors applied: only the GPUs they name, and at most the count one
    gives (`H100:8`: a plan of at most 8 cards; the workload's own max_gpus when lower)."""
    from advisor.inputs import workload
    from advisor.inputs.names import select_many
    ids, count = select_many(args.gpu, catalog, "--gpu")
    w = workload.with_gpus(w, ids)
    if count is not None:
        cap = min(count, w.constraints.max_gpus or count)
        w = replace(w, constraints=replace(w.constraints, max_gpus=cap))
    return w
