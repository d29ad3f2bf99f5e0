"""Writing files so that a crash never leaves half of one, and nothing the user has is lost."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from advisor.base.errors import InputError, Problem


def refuse_inputs(path: str | Path, inputs) -> None:
    """An output that is one of the command's own inputs (a workload, template, rule or price
    file) would be overwritten by what was made from it: refuse."""
    p = Path(path)
    if not os.path.exists(p):
        return
    for i in inputs:
        if not i:
            continue
        try:
            if os.path.samefile(p, i):
                raise InputError(Problem(f"is an input of this command ({i}); refusing to overwrite it", str(path)))
        except OSError:
            continue


def write_atomic(path: str | Path, text: str, inputs=()) -> None:
    """Write the whole file or nothing: a temporary file in the same folder, renamed into place.
    A symbolic link is written through (the link stays, its target gets the text); a device or a
    pipe (/dev/null, /dev/stdout) is written to as it is, never replaced by a regular file."""
    path = Path(path)
    refuse_inputs(path, inputs)
    try:
        st = os.stat(path)             # follows links: what the path finally names
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(Problem(f"cannot write: {exc.strerror}", str(path))) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(Problem("is a directory", str(path)))
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    import tempfile
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if str(path.parent) else ".")
    except OSError as exc:
        raise InputError(Problem(f"cannot write: {exc.strerror}", str(path))) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)          # an existing file keeps its permissions
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask                    # mkstemp makes 0600; a memo is for colleagues to read
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
