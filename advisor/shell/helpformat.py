"""argparse's help, laid out for the terminal's width without importing shutil at every start."""
from __future__ import annotations

import argparse
import os
import sys


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter, told the terminal width up front: left to itself it imports shutil
    (and with it bz2 and lzma) at every start just to ask."""

    def __init__(self, prog, **kw):
        if kw.get("width") is None:
            kw["width"] = columns() - 2          # what argparse does with shutil.get_terminal_size()
        super().__init__(prog, **kw)


def columns() -> int:
    """shutil.get_terminal_size().columns: COLUMNS if positive, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80
