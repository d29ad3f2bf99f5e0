"""Writing files so that a crash never leaves half of one, and nothing the user has is lost."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from advisor.errors import InputError, Problem


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


def regular_file(path: str | Path, max_bytes: int | None = None) -> os.stat_result:
    """The stat of `path` if it is a regular file (links followed) of at most `max_bytes`; anything
    else is refused before it is opened: reading a FIFO waits for a writer forever, a device never ends."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(Problem("no such file", str(path))) from None
    except OSError as exc:
        raise InputError(Problem(f"cannot read: {exc.strerror}", str(path))) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(Problem("is a directory, not a file", str(path)))
    if not stat.S_ISREG(st.st_mode):
        raise InputError(Problem("is not a regular file (a FIFO, device or socket is not read)", str(path)))
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputError(Problem(f"is {st.st_size / 2**20:,.0f} MB, more than the {max_bytes / 2**20:,.0f} MB this tool reads",
                                 str(path)))
    return st


def open_regular(path: str | Path, max_bytes: int | None = None):
    """A binary reader of a regular file, checked as `regular_file` does both before opening and on
    the opened descriptor (the name could be swapped for a FIFO in between: O_NONBLOCK keeps that
    open from waiting)."""
    regular_file(path, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputError(Problem(f"cannot read: {exc.strerror}", str(path))) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (max_bytes is not None and st.st_size > max_bytes):
        os.close(fd)
        raise InputError(Problem("changed while it was opened (not a regular file of a readable size any more)", str(path)))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
