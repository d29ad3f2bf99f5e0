"""`recommend` on a terminal: the memo's one-screen summary on the screen, the whole memo in a file.

A memo runs to a thousand lines; printed to a terminal its summary scrolls away (issue 42). So when
stdout is a terminal and no format, output file or template is asked for, `recommend` prints the
text memo's SUMMARY section (at most 40 lines of 80 columns for every shipped example) and writes the
whole memo, in Markdown with its charts beside it, to the current folder: `NAME-memo.md` for
`NAME.yaml`. A file there that gpu-advisor did not write is never replaced: the memo then takes the
next free name (`NAME-memo-2.md`, ...). `--full` prints the whole text memo instead, through a pager.
Anything else (a pipe, a script, `--out`, `--format`) gets what it always got.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from advisor.base.errors import InputError

#: the first line of every Markdown memo the shipped template writes; a file that starts otherwise
#: is the user's, and is never replaced by the default memo file
MEMO_MARK = "# GPU recommendation:"
#: names tried before giving up (a folder holding a hundred memos of one workload is someone's archive)
MAX_TRIES = 100


def wants_summary(args) -> bool:
    """Whether this `recommend` gets the terminal's summary: stdout a terminal, the default format,
    no --out, --template or --full."""
    return (args.format is None and not args.out and not args.template and not getattr(args, "full", False)
            and sys.stdout.isatty())


def colour_ok() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def memo_name(workload: str | None) -> str:
    """`chat-assistant.yaml` -> `chat-assistant-memo.md`; a workload from flags -> `gpu-advisor-memo.md`."""
    if not workload:
        return "gpu-advisor-memo.md"
    p = Path(workload)
    stem = p.name[: -len(p.suffix)] if p.suffix in (".yaml", ".yml") else p.name
    return f"{stem or 'workload'}-memo.md"


def _ours(path: Path) -> bool:
    """Whether a file is a memo this tool wrote (its first line is the shipped template's title)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(MEMO_MARK)).decode("utf-8", "replace") == MEMO_MARK
    except OSError:
        return False


def memo_target(name: str, folder: Path | None = None) -> Path:
    """Where the default memo goes: `name` in `folder` (the current one) when it is free or a memo this
    tool wrote, else the first free `stem-N.md`; a chart file of the name that exists while its memo
    does not is someone else's, so that name is not free either."""
    from advisor.shell.memo import chart_paths
    folder = folder or Path(".")
    stem = name[: -len(".md")]
    for n in range(1, MAX_TRIES + 1):
        p = folder / (name if n == 1 else f"{stem}-{n}.md")
        charts = chart_paths(p).values()
        if p.exists() or p.is_symlink():
            if p.is_file() and not p.is_symlink() and _ours(p):
                return p
            continue
        if not any(c.exists() or c.is_symlink() for c in charts):
            return p
    from advisor.base.errors import Problem
    raise InputError(Problem(f"{MAX_TRIES} files named like it exist already; give --out FILE", str(folder / name)))


def summary_section(memo_text: str) -> str:
    """The text memo's opening up to its second section heading (a line in capitals at the margin:
    RECOMMENDATION IN DETAIL after SUMMARY), without the blank lines before it."""
    lines = memo_text.split("\n")
    headings = [i for i, x in enumerate(lines) if _heading(x)]
    end = headings[1] if len(headings) > 1 else len(lines)
    return "\n".join(lines[:end]).rstrip() + "\n"


def _heading(line: str) -> bool:
    import re
    bare = re.sub(r"\033\[[0-9;]*m", "", line)     # a coloured heading is a heading
    return bool(bare) and not bare[0].isspace() and bare.isupper() and any(c.isalpha() for c in bare)


def show(rec: dict, catalog, workload: str | None) -> int:
    """Print the summary and write the whole memo beside it (see the module's docstring)."""
    from advisor.shell import memo
    text = memo.render(rec, catalog, "text", colour=colour_ok())
    sys.stdout.write(summary_section(text))
    try:
        target = memo_target(memo_name(workload))
        written = memo.write(rec, catalog, "md", target)
    except (OSError, InputError) as exc:      # a read-only folder, a full disk: the summary stands, said so
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        sys.stdout.write(f"\nThe full memo could not be written here ({why});\n"
                         "  --full prints it, --out FILE writes it elsewhere.\n")
        return 1
    charts = f" and its {len(written) - 1} charts beside it" if written[1:] else ""
    kept = target.name != memo_name(workload)
    sys.stdout.write(f"\nThe full memo{charts}: {target}\n"
                     + (f"  ({memo_name(workload)} there is not a memo gpu-advisor wrote: left as it is)\n" if kept else "")
                     + "  --full prints it here; --format json gives the decision record.\n")
    return 0


def page(text: str) -> None:
    """Print through the user's pager when stdout is a terminal ($PAGER, else less or more: pydoc's
    choice), straight to stdout otherwise."""
    if sys.stdout.isatty():
        import pydoc
        pydoc.pager(text)
    else:
        sys.stdout.write(text)
