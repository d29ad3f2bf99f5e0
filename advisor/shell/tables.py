"""Tables for the terminal and for pipes, laid out by rich (a maintained library) instead of padding
by hand: columns sized to their contents, numbers right-aligned, long cells wrapped on a terminal.
On a terminal a table fits its width (and is bold where rich styles it, unless NO_COLOR); to a pipe
it is plain text at its natural width, one row a line, so `grep` and `sort` see whole rows."""
from __future__ import annotations

import io
import os
import sys


def table(*columns: tuple[str, str]):
    """A rich Table with these (header, justify) columns, in the tool's plain style: no frame, a rule
    under the headers."""
    from rich import box
    from rich.table import Table
    # a rule of '-' under the headers, as the tool's tables had (rich's SIMPLE_HEAD draws it in box characters)
    head = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
    t = Table(box=head, show_edge=False, pad_edge=False, header_style="bold", highlight=False)
    for header, justify in columns:
        t.add_column(header, justify=justify, no_wrap=not sys.stdout.isatty())
    return t


def render(tbl, columns: int | None = None) -> str:
    """The table as text: on a terminal at its width, to a pipe at the table's natural width without
    colour; trailing blanks dropped."""
    from rich.console import Console
    tty = sys.stdout.isatty()
    colour = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    buf = io.StringIO()
    console = Console(file=buf, width=columns or (_columns() if tty else 10_000), force_terminal=colour,
                      no_color=not colour, color_system="standard" if colour else None, highlight=False,
                      emoji=False, markup=False, legacy_windows=False)
    console.print(tbl, crop=False, overflow="ignore" if not tty else None)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


def _columns() -> int:
    try:
        return int(os.environ.get("COLUMNS", 0)) or os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (ValueError, OSError, AttributeError):
        return 80
