"""The deploy folder on disk: refused when it holds anything and --force is not given; with --force,
only the files an earlier `deploy` wrote there (listed in its manifest) are replaced, never a file the
user wrote. Templates render in the one sandbox (advisor/base/sandbox.py)."""
from __future__ import annotations

import os
from pathlib import Path

from jinja2 import TemplateError

from advisor import HOME
from advisor.base import sandbox
from advisor.base.errors import InputError, Problem
from advisor.base.files import write_all

TEMPLATES = HOME / "templates" / "deploy"
#: the files an earlier `deploy` wrote into the folder, one name a line (what --force may replace)
MANIFEST = ".gpu-advisor-deploy"


def render(template: str, context: dict) -> str:
    env = sandbox.environment(sandbox.confined_loader(TEMPLATES))
    try:
        text = sandbox.render(env.get_template(template), context)
        return text if text.endswith("\n") else text + "\n"
    except TemplateError as exc:        # a shipped template that does not fit its values: a bug, said in one line
        raise InputError(Problem(f"cannot render {template}: {exc}", "templates/deploy")) from None


def check_folder(out: Path, names: list[str], force: bool) -> None:
    """Refuse before anything is written: a folder that holds files without --force, or any file among
    `names` that `deploy` did not write there."""
    if out.exists() and not out.is_dir():
        raise InputError(Problem("exists and is not a folder", str(out)))
    present = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if present and not force:
        raise InputError(Problem(f"the folder exists and is not empty ({len(present)} entr{'y' if len(present) == 1 else 'ies'}): "
                                 "give --force to write into it (only files deploy wrote there are replaced)", str(out)))
    ours = set(_manifest(out))
    theirs = [n for n in names if (out / n).exists() and n not in ours]
    if theirs:
        raise InputError(Problem(f"{', '.join(theirs)}: not written by deploy, so not replaced; move {'it' if len(theirs) == 1 else 'them'} "
                                 "or choose another folder", str(out)))


def _manifest(out: Path) -> list[str]:
    try:
        return [line.strip() for line in (out / MANIFEST).read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError):
        return []


def write_folder(out: Path, files: dict[str, str], force: bool) -> list[Path]:
    """Write `files` (name -> text) into `out`; scripts made executable. Returns the paths written."""
    names = list(files)
    check_folder(out, names, force)
    out.mkdir(parents=True, exist_ok=True)
    manifest = "\n".join(sorted(set(names) | set(_manifest(out)))) + "\n"
    # one write: every file or none (a full disk half-way leaves the folder as it was)
    write_all([(out / n, t) for n, t in files.items()] + [(out / MANIFEST, manifest)])
    for name in names:
        if name.endswith(".sh"):
            os.chmod(out / name, 0o755)
    return [out / n for n in names]
