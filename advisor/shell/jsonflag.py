"""JSON on every command, asked for the same way: `--format json` or its short form `--json`."""
from __future__ import annotations

import json
import sys


def add(parser, formats: tuple[str, ...] = ("text", "json"), default: str | None = "text", help: str | None = None) -> None:
    """`--format` (with these formats) and `--json`, the same as `--format json`."""
    if formats:
        parser.add_argument("--format", choices=formats, default=default, help=help)
    parser.add_argument("--json", action="store_true", help="the same as --format json")


def wanted(args) -> bool:
    """Whether the command prints JSON; `--json` with another --format is refused by `resolve`."""
    return getattr(args, "format", None) == "json" or bool(getattr(args, "json", False))


def resolve(args) -> None:
    """`--json` folded into args.format, so a command reads one field; `--json --format md` asks two
    things at once: an input error."""
    if getattr(args, "json", False):
        if getattr(args, "format", None) not in (None, "json", "text"):
            from advisor.base.errors import InputError, Problem
            raise InputError(Problem(f"asks for JSON and --format for {args.format}: give one", None, None, "--json"))
        args.format = "json"


def dump(value) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")
