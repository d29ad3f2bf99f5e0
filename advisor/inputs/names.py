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


#: words a model's published releases add to its architecture's name: the instruction-tuned or chat
#: weights (Llama-3.1-8B-Instruct, gemma-2-9b-it, Mistral-7B-Instruct-v0.1), a base marker, the Hugging
#: Face conversion (Llama-2-70b-chat-hf). A version (v0.3) or a precision (FP8) is not among them: those
#: releases differ in context or in the bytes of their weights
RELEASE_WORDS = frozenset({"instruct", "chat", "it", "base", "hf"})
#: a dated or numbered release (DeepSeek-V3-0324, Qwen3-235B-A22B-Instruct-2507), taken off last
RELEASE_DATE = re.compile(r"\d{4}")


def release_of(name, index: dict[str, str]) -> tuple[str, str | None] | None:
    """(id, what was taken off its name; None for an FP8 checkpoint of it) of a model named by a release
    of a catalog architecture: the publisher's prefix ('meta-llama/'), then the release words, then a
    trailing date taken off until the name is known ('meta-llama/Llama-3.1-8B-Instruct' -> llama-3.1-8b);
    None when nothing known remains."""
    key = norm(name)
    if key.endswith("-fp8") and len(key) > 4:
        # an FP8 checkpoint (Qwen3-30B-A3B-FP8) is no release of the same bytes: (id, None) names its architecture
        got = release_of(key[:-4], index) or ((index[key[:-4]], "") if key[:-4] in index else None)
        return (got[0], None) if got else None
    org, short = key.split("/", 1) if "/" in key else ("", key)
    words = short.split("-")
    plain = [x for x in words if x not in RELEASE_WORDS]
    tries = [(short, [])]
    if len(plain) < len(words):
        tries.append(("-".join(plain), [x for x in words if x in RELEASE_WORDS]))
    if plain and RELEASE_DATE.fullmatch(plain[-1]) and len(plain) > 1:
        tries.append(("-".join(plain[:-1]), [x for x in words if x in RELEASE_WORDS] + plain[-1:]))
    for k, off in tries:
        if k in index and (off or org):
            took = "; ".join(x for x in (f"'{'-'.join(off)}' weights" if off else "", f"publisher '{org}'" if org else "") if x)
            return index[k], took
    return None


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


#: a GPU as people write it where they name one (issue 42): a name (`H100`), SkyPilot's `GPU:N`
#: (`H100:8`: at most N cards of it), a memory size (`80GB`: the cards of that size) or a floor
#: (`80GB+`: every card with at least that memory), each with an optional `:N`
_COUNT = re.compile(r"^(?P<what>.*?):(?P<count>[^:]*)$")
MEMORY = re.compile(r"^(?P<gb>\d+(?:\.\d+)?)\s*gb(?P<plus>\+?)$", re.I)
#: most cards a selector may ask for (a workload's max_gpus has the same bound)
MAX_COUNT = 100_000


def select_gpus(text, catalog, field_name: str, file=None, line=None) -> tuple[list[str], int | None]:
    """(the GPU ids a selector names, in the catalog's order; the count it gives, None without one).
    An unknown name suggests the closest ids; a memory size no card has, or a count that is not a
    whole number from 1 to MAX_COUNT, is an InputError naming the field."""
    raw = str(text).strip()
    count = None
    m = _COUNT.match(raw)
    if m:
        c = m["count"].strip()
        if not c.isdigit() or not 1 <= int(c) <= MAX_COUNT:
            raise InputError(Problem(f"'{raw}': the count after ':' must be a whole number of cards from 1 to "
                                     f"{MAX_COUNT:,} (GPU:N, as in H100:8)", file, line, field_name))
        raw, count = m["what"].strip(), int(c)
    mem = MEMORY.match(raw)
    if not mem:
        return [catalog.gpu(raw, field_name, file, line).id], count
    gb, at_least = float(mem["gb"]), bool(mem["plus"])
    ids = [g.id for g in catalog.gpus.values()
           if g.memory_gb is not None and (g.memory_gb >= gb - 0.5 if at_least else abs(g.memory_gb - gb) < 0.5)]
    if not ids:
        sizes = sorted({int(g.memory_gb) for g in catalog.gpus.values() if g.memory_gb is not None})
        raise InputError(Problem(f"no GPU in the catalog has {mem['gb']} GB{' or more' if at_least else ''}; "
                                 f"the sizes known: {', '.join(map(str, sizes))} GB", file, line, field_name))
    return ids, count


def select_many(texts, catalog, field_name: str, file=None, lines=None) -> tuple[list[str], int | None]:
    """Several selectors (repeated --gpu, or a constraints.gpus list): their ids once each, in order,
    and their count: one count for all (it caps the cards of every plan: max_gpus), refused when they
    give different ones."""
    ids: dict[str, None] = {}
    counts = set()
    for i, t in enumerate(texts):
        got, n = select_gpus(t, catalog, field_name, file, lines[i] if lines else None)
        ids.update(dict.fromkeys(got))
        if n is not None:
            counts.add(n)
    if len(counts) > 1:
        raise InputError(Problem(f"give one count for all the GPUs named (got {', '.join(map(str, sorted(counts)))}): "
                                 "the count is the most cards a plan may use", file, lines[0] if lines else None, field_name))
    return list(ids), (counts.pop() if counts else None)
