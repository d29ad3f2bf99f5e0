"""Where the advisor keeps what it can rebuild: parsed YAML, lint results, compiled templates.

Everything here is content-addressed or keyed by digests, so a stale entry is never used. Set
GPU_ADVISOR_CACHE=0 to disable caching, or GPU_ADVISOR_CACHE=DIR to move it.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path | None:
    setting = os.environ.get("GPU_ADVISOR_CACHE", "")
    if setting == "0":
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu-advisor"


def jinja_bytecode_cache():
    """Jinja's on-disk bytecode cache (compiling templates is slow; starts should not be), or None."""
    d = cache_dir()
    if d is None:
        return None
    from jinja2 import FileSystemBytecodeCache
    try:
        (d / "jinja").mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return FileSystemBytecodeCache(str(d / "jinja"))
