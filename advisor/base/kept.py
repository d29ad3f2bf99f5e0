"""What a process computes once and reuses: one bounded table per job, every one listed here.

A table's key is built from values, never from an object's identity: `fingerprint(x)` is a digest of
a frozen value's fields (a workload, a model, a GPU, a ledger), `part_key(catalog, ...)` a digest of
the catalog parts a figure reads. Two workloads that differ in any field have different fingerprints,
so a table keyed by the whole workload can never hand one the other's figure; a table keyed by fewer
fields (a price reads only the workload's constraints on offers) says which in its key, and its test
(tests/test_kept.py) records the fields the figure really reads and checks that the key holds them.

A value's fingerprint is remembered on the value itself, as functools.cached_property remembers: the
values keyed are frozen dataclasses, and a loaded Catalog is never changed in place (a changed copy,
`dataclasses.replace` or `with_prices`, is a new object with its own keys). `clear()` empties every
table (a test that swaps the catalog folder, a long-lived process that wants its memory back).
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import pickle

_TABLES: list["Kept"] = []
_MISSING = object()


class Kept:
    """A memo of one job: `get(key, make)` returns the value kept for `key`, or `make()` kept. At most
    `most` entries; past that the oldest goes first (a sweep over many workloads never grows it)."""

    __slots__ = ("name", "most", "_values")

    def __init__(self, name: str, most: int):
        self.name, self.most, self._values = name, most, {}
        _TABLES.append(self)

    def get(self, key, make):
        got = self._values.get(key, _MISSING)
        if got is _MISSING:
            got = make()
            if len(self._values) >= self.most:
                del self._values[next(iter(self._values))]
            self._values[key] = got
        return got

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        self._values.clear()


def tables() -> tuple[Kept, ...]:
    return tuple(_TABLES)


def clear() -> None:
    """Empty every table and forget nothing else (fingerprints live on their values)."""
    for t in _TABLES:
        t.clear()


class _Fields(pickle.Pickler):
    """Pickles a dataclass as its type's name and its fields only: what a value's own caches hold
    (a GPU's numbers read so far, a ledger's cached figures) is not part of the value."""

    def reducer_override(self, obj):
        kind = type(obj)
        names = _FIELDS.get(kind)
        if names is None:
            names = _FIELDS[kind] = (tuple(f.name for f in dataclasses.fields(kind))
                                     if dataclasses.is_dataclass(kind) else ())
        mine = getattr(obj, "__dict__", None)
        if not names or mine is None or len(mine) == len(names):
            return NotImplemented       # pickled as it is: no state beside its fields (a price row)
        return tuple, ((kind.__module__, kind.__qualname__, tuple(mine[n] for n in names)),)


#: a dataclass type -> its field names (every other type -> ())
_FIELDS: dict[type, tuple[str, ...]] = {}


def _digest(value) -> str:
    buf = io.BytesIO()
    _Fields(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return hashlib.blake2b(buf.getbuffer(), digest_size=16).hexdigest()


def fingerprint(value) -> str:
    """The digest of a frozen value's fields (nested values included), made once per value."""
    mine = value.__dict__
    got = mine.get("_kept_fingerprint")
    if got is None:
        got = mine["_kept_fingerprint"] = _digest(value)
    return got


def part_key(catalog, *parts: str) -> str:
    """The digest of the named parts of a catalog (`prices`, `efficiency`, ...), made once per catalog."""
    try:
        return catalog.__dict__["_kept_parts"][parts]
    except KeyError:
        mine = catalog.__dict__.setdefault("_kept_parts", {})
        for p in parts:                 # each part digested once, whichever keys name it
            if (p,) not in mine:
                mine[(p,)] = _digest(getattr(catalog, p, None))
        got = mine[parts] = "+".join(mine[(p,)] for p in parts)
        return got
