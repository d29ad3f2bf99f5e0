"""Reading inputs and writing outputs: what a command read is never what it writes, a crash never
leaves half of a file, two writers never interleave, and nothing opened can block the process.

Every reader notes what it reads (`note_read`, or `read_input`, which also reads it); every writer
goes through `writing` / `write_atomic`, which refuse an output that is one of those files under any
name (a symbolic or hard link included) or that lies in the shipped catalog/, rules/ or templates/.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from advisor.base.errors import InputError, Problem

#: (device, inode) -> the name a file was read under, for every file this process read as an input.
_READ: dict[tuple[int, int], str] = {}

#: The shipped folders no command writes into (a refit or a rebuild of the catalog has its own tools).
SHIPPED = ("catalog", "rules", "templates")


def _not_a_file(st: os.stat_result) -> str | None:
    """What a path is when it is not a regular file, in words (None for a regular file)."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"          # opening one waits for a writer: it is never opened
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refuse_kind(st: os.stat_result, path, what: str) -> None:
    kind = _not_a_file(st)
    if kind:
        raise InputError(Problem(f"is {kind}, not a {what}: refusing to read it", str(path)))


def note_read(path: str | Path, what: str = "file") -> None:
    """Record that this command reads `path` (so that no output replaces it), after refusing, before
    anything opens it, a FIFO, device, socket or directory. A missing path is left to the reader."""
    try:
        st = os.stat(path)
    except OSError:
        return
    _refuse_kind(st, path, what)
    # the latest name wins: a file deleted since (a test's temporary one) frees its inode for the next
    _READ[(st.st_dev, st.st_ino)] = str(path)


@contextlib.contextmanager
def open_input(path: str | Path, max_bytes: int, what: str = "file"):
    """A binary reader of the input file `path` (at most `max_bytes` by its size), for streaming; every
    failure an InputError naming the file. Opened without blocking and checked on the open
    descriptor, so a FIFO put in a file's place between a check and the open cannot hang the
    command; recorded as read (no output may replace it)."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InputError(Problem("no such file", name)) from None
    except IsADirectoryError:
        raise InputError(Problem(f"is a directory, not a {what}", name)) from None
    except OSError as exc:
        try:                               # a socket cannot even be opened: say what it is
            _refuse_kind(os.stat(path), path, what)
        except OSError:
            pass
        raise InputError(Problem(f"cannot read: {exc.strerror}", name)) from None
    try:
        st = os.fstat(fd)
        _refuse_kind(st, path, what)
        if st.st_size > max_bytes:
            raise InputError(Problem(f"larger than {_size(max_bytes)}: not a {what} this tool reads", name))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    _READ[(st.st_dev, st.st_ino)] = name
    with os.fdopen(fd, "rb") as f:
        yield f


def read_input(path: str | Path, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of the input file `path`, at most `max_bytes` of them (see open_input)."""
    with open_input(path, max_bytes, what) as f:
        try:
            raw = f.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(Problem(f"cannot read: {exc.strerror}", str(path))) from None
    if len(raw) > max_bytes:               # it grew while being read
        raise InputError(Problem(f"larger than {_size(max_bytes)}: not a {what} this tool reads", str(path)))
    return raw


def _size(n: int) -> str:
    return f"{n // 2**20} MB" if n >= 2**20 else f"{n:,} bytes"


def inputs_read() -> list[str]:
    """The files this process read as inputs, by the names they were read under."""
    return list(_READ.values())


def refuse_output(path: str | Path, replaces: str | Path | None = None) -> None:
    """Refuse to write `path` when it is a file this command read (followed through links: any name
    of the same file) or lies in a shipped folder. `replaces` is an input the caller means to
    replace (a resume file it continues and saves again)."""
    from advisor import HOME
    real = os.path.realpath(path)
    for folder in SHIPPED:
        root = os.path.realpath(HOME / folder)
        if os.path.commonpath([root, real]) == root:
            raise InputError(Problem(f"is inside the shipped {folder}/ folder ({root}); refusing to write there", str(path)))
    try:
        st = os.stat(path)
    except OSError:
        return                            # not there yet: not an input
    if not stat.S_ISREG(st.st_mode):
        return                            # /dev/null, a terminal: written to, never replaced
    key = (st.st_dev, st.st_ino)
    if key not in _READ:
        return
    if replaces is not None:
        try:
            r = os.stat(replaces)
            if (r.st_dev, r.st_ino) == key:
                return
        except OSError:
            pass
    read_as = _READ[key]
    try:
        again = os.stat(read_as)          # the name it was read under still names it (not a reused inode)
    except OSError:
        return
    if (again.st_dev, again.st_ino) == key:
        shown = read_as if os.path.realpath(read_as) == real else f"{read_as}, the same file"
        raise InputError(Problem(f"is an input of this command ({shown}); refusing to overwrite it", str(path)))


@contextlib.contextmanager
def _locked(target: Path):
    """An exclusive lock on a lock file beside `target`, taken without waiting: a second writer is
    refused. The lock file is removed by its holder; a writer that locked a file removed meanwhile
    holds nothing, sees that and tries again on the new one."""
    try:
        import fcntl
    except ImportError:                   # no flock (Windows): atomic renames still keep files whole
        yield
        return
    lock = target.parent / f".{target.name}.lock"
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise InputError(Problem(f"cannot write: {exc.strerror}", str(target))) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InputError(Problem(f"is being written by another gpu-advisor (it holds {lock}); "
                                     "run one at a time", str(target))) from None
        try:
            now = os.stat(lock)
            mine = os.fstat(fd)
            if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield
    finally:
        try:
            os.unlink(lock)
        except OSError:
            pass
        os.close(fd)


class WriteFailed(InputError):
    """An output that could not be written (a full disk, a read-only folder): one line naming the file,
    and the exit code of an output failure, not of invalid input."""

    exit_code = 120             # what Python itself exits with when it cannot write its output (cli.EXIT_OUTPUT)


def _cannot_write(exc: OSError, path) -> InputError:
    """A failed write as one line naming the file (a full disk said "No space left on device" and no more)."""
    return WriteFailed(Problem(f"cannot write: {exc.strerror or exc}", str(path)))


class _Target:
    """An output checked before anything is written: refused when it is an input (refuse_output) or a
    directory; `special` (a device, a pipe) is written to as it is; a symbolic link is written through
    (the link stays, its target gets the text); `st` is the file it replaces, if any."""

    def __init__(self, path: str | Path, replaces: str | Path | None = None):
        path = Path(path)
        refuse_output(path, replaces)
        try:
            st = os.stat(path)             # follows links: what the path finally names
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise _cannot_write(exc, path) from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise InputError(Problem("is a directory", str(path)))
        self.shown = path
        self.special = st is not None and not stat.S_ISREG(st.st_mode)
        self.path = Path(os.path.realpath(path)) if not self.special and path.is_symlink() else path
        self.st = st

    @contextlib.contextmanager
    def open_special(self, newline: str | None):
        """A device or a pipe, opened without waiting: a named pipe no one reads is refused at once (it
        blocked the command for ever), /dev/null, a terminal or a pipe read by another program work."""
        try:
            fd = os.open(self.path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise InputError(Problem(f"is {_not_a_file(self.st)} that no program is reading; refusing to wait for one",
                                         str(self.shown))) from None
            raise _cannot_write(exc, self.shown) from None
        os.set_blocking(fd, True)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as f:
                yield f
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            raise _cannot_write(exc, self.shown) from None

    def temporary(self) -> tuple[int, str]:
        folder = self.path.parent if str(self.path.parent) else Path(".")
        try:
            return tempfile.mkstemp(prefix=f".{self.path.name}.", dir=folder)
        except OSError as exc:
            raise _cannot_write(exc, self.shown) from None

    def place(self, tmp: str) -> None:
        """Give the temporary file the output's permissions and rename it into place."""
        if self.st is not None:
            mode = stat.S_IMODE(self.st.st_mode)          # an existing file keeps its permissions
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask                         # mkstemp makes 0600; a memo is for colleagues to read
        try:
            os.chmod(tmp, mode)
            os.replace(tmp, self.path)
        except OSError as exc:
            raise _cannot_write(exc, self.shown) from None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


@contextlib.contextmanager
def writing(path: str | Path, replaces: str | Path | None = None, newline: str | None = None):
    """A text file that becomes `path` when the block ends without an exception: written as a
    temporary file in the same folder under an exclusive lock (see `_locked`) and renamed into
    place, so readers see the old file or the whole new one. On an exception the old file stays and
    the temporary one is removed; a failed write (a full disk) names the file. A symbolic link is
    written through; a device or a pipe (/dev/null, /dev/stdout) is written to as it is, a named pipe
    no one reads is refused. Outputs that are inputs are refused first (`refuse_output`)."""
    target = _Target(path, replaces)
    if target.special:
        with target.open_special(newline) as f:
            yield f
        return
    with _locked(target.path):
        fd, tmp = target.temporary()
        try:
            try:
                with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as f:
                    yield f
            except OSError as exc:
                if exc.filename is not None:          # the caller's own failure on another file
                    raise
                raise _cannot_write(exc, target.shown) from None
            target.place(tmp)
        except BaseException:
            _unlink(tmp)
            raise


def write_atomic(path: str | Path, text: str, replaces: str | Path | None = None) -> None:
    """Write the whole file or nothing, as `writing` does."""
    with writing(path, replaces) as f:
        f.write(text)


def write_all(outputs: list[tuple[str | Path, str]], replaces: str | Path | None = None) -> None:
    """Several files as one write (a memo and its charts): every output checked and locked, every
    temporary file written, and only then each renamed into place; when any check, lock or write fails
    (another writer, a full disk) no file is replaced (a rename in the folder the temporary file was
    just written in, under its lock, is the one step left). `replaces` may be the first output's input."""
    targets = [_Target(p, replaces if i == 0 else None) for i, (p, _) in enumerate(outputs)]
    special = [(t, text) for t, (_, text) in zip(targets, outputs) if t.special]
    regular = [(t, text) for t, (_, text) in zip(targets, outputs) if not t.special]
    temps: list[str] = []
    with contextlib.ExitStack() as locks:
        for t, _ in sorted(regular, key=lambda x: str(x[0].path)):
            locks.enter_context(_locked(t.path))
        try:
            for t, text in regular:
                fd, tmp = t.temporary()
                temps.append(tmp)
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as f:
                        f.write(text)
                except OSError as exc:
                    raise _cannot_write(exc, t.shown) from None
            for (t, _), tmp in zip(regular, temps):
                t.place(tmp)
        except BaseException:
            for tmp in temps:
                _unlink(tmp)
            raise
    for t, text in special:                 # /dev/null or a pipe: nothing there to keep whole
        with t.open_special(None) as f:
            f.write(text)
