"""Text from outside (price files, configs, hand-edited records) made one line of visible text.

A provider, an instance or a model name is whatever a file says: it may hold a terminal control
sequence ('\\x1b]0;...\\x07' retitles the window), a line break (a forged line of output), or
bidirectional overrides that make text read otherwise than it runs. Inputs are cleaned when they are
read and outputs again when they are shown (the escaping for Markdown and HTML is the memo's).
"""
from __future__ import annotations

import re

_SEQUENCE = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]")   # OSC, CSI
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_BREAK = re.compile(r"[\t\n\r\x0b\x0c\x85\u2028\u2029]+")


def clean(text: str, limit: int | None = None) -> str:
    """One line of visible text: escape sequences, control, zero-width and bidirectional-override
    characters removed, line breaks and tabs made a space; at most `limit` characters."""
    out = _CONTROL.sub("", _BREAK.sub(" ", _SEQUENCE.sub("", text)))
    return out[:limit] if limit is not None else out


def clean_all(obj, keys: bool = False):
    """`clean` on every string inside plain data (and on mapping keys when `keys`)."""
    if isinstance(obj, str):
        return clean(obj)
    if isinstance(obj, dict):
        return {(clean(k) if keys and isinstance(k, str) else k): clean_all(v, keys) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(clean_all(v, keys) for v in obj) if type(obj) in (list, tuple) else obj
    return obj
