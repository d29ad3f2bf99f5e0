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
    parser = build_parser()
    _files(parser)
    sys.stdout.write(HOW[args.shell] + "\n" + shtab.complete(parser, shell=args.shell) + "\n")
    return 0


def _files(parser) -> None:
    """Tell shtab which arguments are files (it completes them as paths) and which are folders."""
    import argparse

    import shtab
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _files(sub)
            continue
        meta = str(action.metavar or "")
        if meta in ("DIR",) or action.dest in ("out_dir",):
            action.complete = shtab.DIRECTORY
        elif "." in meta or meta in ("FILE", "PATH", "TRANSCRIPT.yaml", "WORKLOAD.yaml"):
            action.complete = shtab.FILE
