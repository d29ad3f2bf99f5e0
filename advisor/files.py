"""Writing files so that a crash never leaves half of one."""
from __future__ import annotations

import os
from pathlib import Path

from advisor.errors import InputError, Problem


def write_atomic(path: str | Path, text: str) -> None:
    """Write the whole file or nothing: a temporary file in the same folder, renamed into place."""
    import tempfile
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if str(path.parent) else ".")
    except OSError as exc:
        raise InputError(Problem(f"cannot write: {exc.strerror}", str(path))) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)      # mkstemp makes 0600; a memo is for colleagues to read
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
