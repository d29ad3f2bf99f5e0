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
    under the headers. justify "cut": left, and on a terminal cut with an ellipsis rather than wrapped."""
    from rich import box
    from rich.table import Table
    # a rule of '-' under the headers, as the tool's tables had (rich's SIMPLE_HEAD draws it in box characters)
    head = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
    t = Table(box=head, show_edge=False, pad_edge=False, header_style="bold", highlight=False)
    tty = sys.stdout.isatty()
    for i, (header, justify) in enumerate(columns):
        # on a terminal the first column (an id) and numbers keep whole, words wrap, and a code (an
        # instance type) is cut with an ellipsis at CUT_WIDTH; to a pipe every cell stays whole
        cut = justify == "cut"
        whole = i == 0 or justify == "right"
        t.add_column(header, justify="left" if cut else justify, no_wrap=not tty or whole or cut,
                     overflow="ellipsis" if cut and tty else "fold", max_width=CUT_WIDTH if cut and tty else None)
    return t


#: the widest a cut column gets on a terminal
CUT_WIDTH = 22


def render(tbl, columns: int | None = None) -> str:
    """The table as text: on a terminal at its width, to a pipe at the table's natural width without
    colour; trailing blanks dropped."""
    from rich.console import Console
    tty = sys.stdout.isatty()
    colour = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    buf = io.StringIO()
    # on a terminal narrower than the whole cells and the shortest wrapped ones need, the table is laid out
    # that wide and the terminal wraps its lines, rather than rich squeezing numbers into 3-letter columns
    width = columns or (max(_columns(), _least_width(tbl)) if tty else 10_000)
    console = Console(file=buf, width=width, force_terminal=colour,
                      no_color=not colour, color_system="standard" if colour else None, highlight=False,
                      emoji=False, markup=False, legacy_windows=False)
    console.print(tbl, crop=False, overflow="ignore" if not tty else None)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


#: the narrowest a column of words is wrapped to
WRAP_WIDTH = 20


def _least_width(tbl) -> int:
    """The width the table needs with its whole columns whole and its wrapped ones at WRAP_WIDTH."""
    total = 0
    for col in tbl.columns:
        widest = max([len(str(col.header))] + [len(str(c)) for c in col.cells])
        total += min(widest, col.max_width or WRAP_WIDTH) if (not col.no_wrap or col.max_width) else widest
    return total + 3 * max(0, len(tbl.columns) - 1)


def _columns() -> int:
    try:
        return int(os.environ.get("COLUMNS", 0)) or os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (ValueError, OSError, AttributeError):
        return 80
