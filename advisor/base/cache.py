"""Where the advisor keeps what it can rebuild: parsed YAML, the checked and compiled catalog and
knowledge base (plain JSON), and the shipped memo templates compiled (Jinja's own bytecode cache).

Every entry is keyed by the bytes it was built from (and the source of the code that built it), so
a stale entry is never used, and carries the digest of its own content, so an edited or torn entry
is rebuilt rather than used. Set GPU_ADVISOR_CACHE=0 to disable caching, or GPU_ADVISOR_CACHE=DIR to
move it.

Compiled templates are code (Jinja's bytecode cache loads them with marshal), and a planted entry
would run on the next start: the folder is created private to the user (0700), and a folder that
another user owns or that others may write to is not used at all (a one-line warning says so).
"""
from __future__ import annotations

import functools
import os
from pathlib import Path


def cache_dir() -> Path | None:
    setting = os.environ.get("GPU_ADVISOR_CACHE", "")
    if setting == "0":
        return None
    if setting:
        d = Path(setting)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = Path(base) / "gpu-advisor"
    return d if _private(str(d)) else None


@functools.lru_cache(maxsize=None)
def _private(path: str) -> bool:
    """The cache folder exists (made 0700 if it did not), belongs to this user and nobody else may
    write to it; otherwise caching is off for this process."""
    import stat
    import sys
    d = Path(path)
    try:
        if not d.exists():
            d.mkdir(parents=True, mode=0o700, exist_ok=True)
        checks = [d, d / "jinja"] if (d / "jinja").exists() else [d]
        for p in checks:
            st = os.stat(p)
            if not stat.S_ISDIR(st.st_mode):
                why = "is not a folder"
            elif hasattr(os, "getuid") and st.st_uid != os.getuid():
                why = "belongs to another user"
            elif st.st_mode & 0o022:
                why = "may be written by other users"
            else:
                continue
            print(f"gpu-advisor: warning: the cache folder {p} {why}; caching is off (make it private with "
                  f"chmod 700, or set GPU_ADVISOR_CACHE)", file=sys.stderr)
            return False
    except OSError:
        return False            # cannot be made or read: run without a cache
    return True


def jinja_bytecode_cache(flavour: str = ""):
    """Jinja's on-disk bytecode cache (compiling templates is slow; starts should not be), or None.
    Environments that compile the same source to different code name their own `flavour`. For the
    templates the advisor ships only: an entry is code run on load, and a user's template (or rule
    text) is compiled afresh, so that nothing a user wrote is ever stored here as code."""
    d = cache_dir()
    if d is None:
        return None
    from jinja2 import FileSystemBytecodeCache
    try:
        (d / "jinja").mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    if not _private(str(d)) or not _check_private(d / "jinja"):
        return None
    return FileSystemBytecodeCache(str(d / "jinja"), f"__jinja2_{flavour}_%s.cache" if flavour else "__jinja2_%s.cache")


def _check_private(d: Path) -> bool:
    import stat
    try:
        st = os.stat(d)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and not (hasattr(os, "getuid") and st.st_uid != os.getuid()) and not st.st_mode & 0o022


def key(*parts: bytes | str) -> str:
    """A cache key: the sha256 of the parts, in order (each one length-prefixed)."""
    import hashlib
    h = hashlib.sha256()
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def source_of(*modules: str) -> bytes:
    """The bytes of some of the advisor's own modules (their source, or what they were loaded from in
    an install without sources): part of a key when they decide what is cached."""
    from importlib.util import find_spec
    out = []
    for m in modules:
        spec = find_spec(f"advisor.{m}")
        origin = spec.origin if spec is not None else None
        out.append(Path(origin).read_bytes() if origin and os.path.isfile(origin) else m.encode())
    return b"".join(out)


MARK = "\u0000pairs"      # a mapping JSON could not keep as it is, stored as its key/value pairs


def pack(obj):
    """Plain data made JSON-safe without losing what JSON would change: a mapping whose keys are
    not all text (numbers, booleans, null) becomes {MARK: [key, value, ...]}; tuples become lists.
    Read it back with read_json(..., packed=True)."""
    if isinstance(obj, dict):
        if all(type(k) is str for k in obj) and MARK not in obj:
            return {k: pack(v) for k, v in obj.items()}
        flat = []
        for k, v in obj.items():
            flat += (k, pack(v))
        return {MARK: flat}
    if isinstance(obj, (list, tuple)):
        return [pack(v) for v in obj]
    return obj


def _unpack(d: dict) -> dict:
    flat = d.get(MARK)
    if flat is None or len(d) != 1:
        return d
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def read_json(kind: str, name: str, packed: bool = False):
    """A cached JSON entry (written from pack()ed data when `packed`), or None when there is none,
    caching is off or the entry is unreadable."""
    import hashlib
    import json
    d = cache_dir()
    if d is None:
        return None
    try:
        digest, _, text = (d / kind / f"{name}.json").read_bytes().partition(b"\n")
        if hashlib.sha256(text).hexdigest().encode() != digest:
            return None          # edited or torn: rebuilt from the files it came from
        return json.loads(text.decode("utf-8"), object_hook=_unpack if packed else None)
    except (OSError, ValueError):
        return None


def write_json(kind: str, name: str, data) -> None:
    """Write an entry atomically (a reader never sees half of one); a cache that cannot be written
    only costs speed, so failures are ignored. The entry's first line is the sha256 of the rest."""
    import hashlib
    import json
    d = cache_dir()
    if d is None:
        return
    try:
        target = d / kind
        target.mkdir(parents=True, exist_ok=True)
        tmp = target / f".{name}.{os.getpid()}.tmp"
        text = json.dumps(data, ensure_ascii=False).encode("utf-8")
        tmp.write_bytes(hashlib.sha256(text).hexdigest().encode() + b"\n" + text)   # read_json checks it
        os.replace(tmp, target / f"{name}.json")
    except (OSError, TypeError, ValueError):
        pass
