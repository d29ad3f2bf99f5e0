"""Knowledge bases found, digested, loaded and cached: the rule folders in force (the shipped rules/,
GPU_ADVISOR_RULES, --rules DIR), their files read in order, checked by lint, and the compiled result
kept in the cache keyed by the files' bytes, the catalog and this package's own source.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from advisor import HOME
from advisor.base import cache, yamlio
from advisor.base.errors import Collector, InputError, Problem
from advisor.base.files import note_read
from advisor.base.gcpause import free_cycles, loads_for_good
from advisor.judgement.knowledge.lint import check_rules, vocabulary
from advisor.judgement.knowledge.language import KnowledgeBase, Leaf, Node, Rule

RULES_DIR = HOME / "rules"
NOT_RULES = {"questions.yaml"}   # the dialogue's questions live beside the rules


def _files(dirs: list[Path]) -> list[Path]:
    """The rule files of each folder in order (.yaml and .yml; the dialogue's questions.yaml is
    skipped in the shipped folder only: in a user's folder every YAML file is a rule file)."""
    out = []
    for d in dirs:
        d = Path(d)
        if d.is_file():
            out.append(d)
        elif d.is_dir():
            shipped = d.resolve() == RULES_DIR.resolve()
            for p in sorted(d.rglob("*")):
                if p.suffix not in (".yaml", ".yml") or (shipped and p.name in NOT_RULES) or p.is_dir():
                    continue
                note_read(p, "rule file")    # a FIFO or device named *.yaml is refused, not skipped
                out.append(p)
        else:
            # `--rules` takes a folder or one rule file: name what is missing as the user gave it
            what = "rule file" if d.suffix in (".yaml", ".yml") else "rules folder or rule file"
            raise InputError(Problem(f"no such {what}", str(d)))
    return out


def rule_dirs(extra: list[str] | None = None, shipped: bool = True) -> list[Path]:
    """rules/ first, then GPU_ADVISOR_RULES (a path list), then every --rules DIR: later files win."""
    dirs = [RULES_DIR] if shipped else []
    env = os.environ.get("GPU_ADVISOR_RULES")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [Path(p) for p in (extra or [])]
    return dirs


@loads_for_good
def load(dirs: list[Path] | None = None) -> KnowledgeBase:
    """Load, check and compile every rule file; any problem anywhere means nothing is loaded."""
    files = _files(dirs if dirs is not None else rule_dirs())
    try:
        digest = _digest(files)
    except OSError:
        digest = None        # the full load below reports what cannot be read
    vocab = vocabulary()     # values are checked against the catalog: its digest is part of the key
    kb = _compiled_get(digest, vocab.get("_catalog")) if digest and cache.cache_dir() is not None else None
    if kb is None:
        kb = _load(files, digest, vocab)
        if cache.cache_dir() is not None:
            _compiled_put(kb, vocab.get("_catalog"))
    return kb


def folder_digest(folder) -> str:
    """The digest of one rule folder's files (their paths inside it and their bytes): the same
    wherever the folder is named from."""
    folder = Path(folder)
    h = hashlib.sha256()
    for f in _files([folder]):
        h.update(str(f.relative_to(folder) if folder.is_dir() else f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _digest(files: list[Path]) -> str:
    """What identifies a knowledge base: its files' names (as shown) and bytes, in load order."""
    h = hashlib.sha256()
    for f in files:
        h.update(_display(f).encode())
        note_read(f, "rule file")
        h.update(f.read_bytes())
    return h.hexdigest()


def _load(files: list[Path], digest: str | None, vocab: dict | None = None) -> KnowledgeBase:
    problems: list[Problem] = []
    raw_rules = []
    shipped_files = set()
    for f in files:
        rel = _display(f)
        if is_shipped(f):
            shipped_files.add(rel)
        try:
            data = yamlio.load(f)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        col = Collector(rel)
        items = data.get("rules") if isinstance(data, dict) else data
        if data is None:
            continue
        if not isinstance(items, list):
            col.add("a rule file holds a list of rules (or 'rules: [...]')", getattr(data, "line", 1))
            problems.extend(col.problems)
            continue
        for i, r in enumerate(items):
            raw_rules.append((rel, yamlio.line_of(items, i), r))
    kb_rules, derived, found = check_rules(raw_rules, shipped_files, vocab)
    problems.extend(found)
    free_cycles()                 # parsing YAML and Jinja left some behind
    if problems:
        raise InputError(problems)
    return KnowledgeBase(kb_rules, [_display(f) for f in files], digest or _digest(files), derived)


# --- the compiled-knowledge-base cache -------------------------------------------------------------
# A knowledge base that passed every check is written out compiled (JSON: plain data only), keyed by
# the digest of its files' names and bytes and of the checker's own source. The next start with the
# same files reads it back instead of parsing, checking and compiling every rule again.

COMPILED_VERSION = "kb-4"


def _compiled_key(digest: str, catalog_digest: str | None) -> str:
    # Every module of this package decides what a compiled knowledge base holds (lint reads patterns
    # and numbers through evaluation and rule texts through texts), so all of them are in the key:
    # listed from the folder (.py, or .pyc in an install without sources) so a new module is never missed.
    here = Path(__file__).parent
    package = sorted({p.stem for p in here.iterdir() if p.suffix in (".py", ".pyc") and p.stem != "__init__"})
    code = cache.source_of("judgement.knowledge", *(f"judgement.knowledge.{m}" for m in package),
                           "judgement.facts", "judgement.engine", "base.yamlio")
    return cache.key(COMPILED_VERSION, digest, catalog_digest or "", code)


def _enc_cond(c):
    if isinstance(c, Node):
        return ["N", c.kind, [_enc_cond(i) for i in c.items]]
    if isinstance(c.value, tuple):
        return ["T", c.fact, c.op, list(c.value)]
    return ["L", c.fact, c.op, c.value]


def _dec_cond(c):
    tag = c[0]
    if tag == "N":
        return Node(c[1], tuple(_dec_cond(i) for i in c[2]))
    return Leaf(c[1], c[2], tuple(c[3]) if tag == "T" else c[3])


RULE_FIELDS = ("id", "title", "group", "priority", "because", "file", "line", "scope", "stratum", "overrides", "replaces")


def _compiled_put(kb: KnowledgeBase, catalog_digest: str | None = None) -> None:
    rules = [{**{k: getattr(r, k) for k in RULE_FIELDS}, "source": list(r.source), "when": _enc_cond(r.when),
              "effects": cache.pack(r.effects), "examples": cache.pack(r.examples),
              "facts_used": list(r.facts_used), "derives": list(r.derives)} for r in kb.rules]
    data = {"rules": rules, "files": kb.files, "digest": kb.digest, "derived": kb.derived}
    cache.write_json("kb", _compiled_key(kb.digest, catalog_digest), data)


def _compiled_get(digest: str, catalog_digest: str | None = None) -> KnowledgeBase | None:
    data = cache.read_json("kb", _compiled_key(digest, catalog_digest), packed=True)
    if data is None:
        return None
    try:
        rules = [Rule(d["id"], d["title"], tuple(d["source"]), d["group"], d["priority"], _dec_cond(d["when"]),
                      d["effects"], d["because"], d["examples"], d["file"], d["line"],
                      d["scope"], d["stratum"],
                      tuple(d["facts_used"]), tuple(d["derives"]), d["overrides"], d["replaces"]) for d in data["rules"]]
        return KnowledgeBase(rules, data["files"], data["digest"], data["derived"])
    except (KeyError, TypeError, IndexError):
        return None


def is_shipped(p: Path) -> bool:
    try:
        Path(p).resolve().relative_to(RULES_DIR.resolve())
        return True
    except ValueError:
        return False


def _display(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(HOME))
    except ValueError:
        return str(p)
