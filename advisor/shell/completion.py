"""`gpu-advisor completion bash|zsh|tcsh`: a shell completion script, written by shtab (a maintained
library) from the command's own argparse parser, so every command and option it knows completes and
no script is kept by hand. Install it as the script's first lines say."""
from __future__ import annotations

import sys

SHELLS = ("bash", "zsh", "tcsh")
HOW = {"bash": "# bash: gpu-advisor completion bash > ~/.local/share/bash-completion/completions/gpu-advisor",
       "zsh": "# zsh: gpu-advisor completion zsh > ~/.zfunc/_gpu-advisor (with fpath+=(~/.zfunc) before compinit)",
       "tcsh": "# tcsh: gpu-advisor completion tcsh > ~/.gpu-advisor.completion.csh; source it from ~/.tcshrc"}


def add_arguments(c, build_parser) -> None:
    c.add_argument("shell", choices=SHELLS)
    c.set_defaults(func=lambda args: cmd_completion(args, build_parser))


def cmd_completion(args, build_parser) -> int:
    import shtab

    from advisor.inputs import catalog
    parser = build_parser()
    ids = " ".join(catalog.default().gpus)          # catalog ids: plain words, nothing to quote
    _files(parser, {"bash": "_gpu_advisor_gpus", "zsh": f"({ids})"})
    preamble = {"bash": f'_gpu_advisor_gpus() {{ compgen -W "{ids}" -- "$1"; }}'}
    sys.stdout.write(HOW[args.shell] + "\n" + shtab.complete(parser, shell=args.shell, preamble=preamble) + "\n")
    return 0


def _files(parser, gpus: dict) -> None:
    """Tell shtab which arguments are files (it completes them as paths), folders, or GPUs (the catalog's
    ids; a selector such as H100:8 or 80GB+ is typed as it is)."""
    import argparse

    import shtab
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _files(sub, gpus)
            continue
        if action.dest in ("gpu", "why_not", "selectors"):
            action.complete = gpus
            continue
        meta = str(action.metavar or "")
        if meta in ("DIR",) or action.dest in ("out_dir",):
            action.complete = shtab.DIRECTORY
        elif "." in meta or meta in ("FILE", "PATH", "TRANSCRIPT.yaml", "WORKLOAD.yaml"):
            action.complete = shtab.FILE
