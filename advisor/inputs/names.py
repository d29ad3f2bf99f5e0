"""How a GPU or a model is found by name: its id, name or any alias, case and '-'/'_'/space alike; an
unknown name is an InputError that suggests the closest ids. The catalog's lookups and the `gpu` of
every price row resolve through here, so a name means the same in a workload and in a price file.
"""
from __future__ import annotations

import re

from advisor.base.errors import InputError, Problem


def name_index(items) -> dict[str, str]:
    """Normalised id, name and alias -> id, for entries with `id`, `name` and `aliases`."""
    index: dict[str, str] = {}
    for item in items:
        for n in (item.id, item.name, *item.aliases):
            index.setdefault(norm(n), item.id)
    return index


def norm(name: str) -> str:
    return re.sub(r"[\s_]+", "-", str(name).strip().lower())


def resolve(name, index: dict[str, str], kind: str, field_name: str, file, line) -> str:
    key = norm(name)
    if key in index:
        return index[key]
    ids = sorted(set(index.values()))
    import difflib      # only when there is something to suggest
    close = difflib.get_close_matches(key, list(index), n=5, cutoff=0.5)
    hint = sorted({index[c] for c in close})
    msg = f"unknown {kind} '{name}'"
    msg += f"; did you mean {', '.join(hint)}?" if hint else f"; known: {', '.join(ids)}"
    raise InputError(Problem(msg, file, line, field_name))
