"""The dialogue's session with the world: the prompt-toolkit terminal (and piped lines), the resume
file that Ctrl-C / Ctrl-D / quit leave, and the memo, decision record and transcript written side by
side at the end. The dialogue itself (advisor/shell/dialogue.py) only answers one line at a time;
a dry run (a replay) writes nothing."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from advisor import __version__
from advisor.base import yamlio
from advisor.base.errors import InputError, Problem
from advisor.base.files import refuse_output, write_atomic
from advisor.shell.questions import COMMANDS
from advisor.shell.transcripts import transcript_yaml

RESUME_FILE = ".gpu-advisor-resume.yaml"
# what the terminal session says first (docs/readme.py shows it in the README's session too)
INTRO = ("gpu-advisor: a few questions about your workload, then a recommendation and a memo.",
         "Type ? for help, why for the rules an answer feeds, back to revise, quit to leave. Enter accepts [defaults].")


def terminal_width() -> int:
    """The terminal's width for help texts (COLUMNS first, as shutil reads it), at least 40."""
    import shutil
    return max(40, shutil.get_terminal_size().columns)


# --- the terminal ---------------------------------------------------------------------------------------

def run_interactive(dlg, write=None) -> int:
    """Drive the dialogue with prompt-toolkit; Ctrl-C / Ctrl-D save the answers. Returns an exit code."""
    from prompt_toolkit import PromptSession, print_formatted_text
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.history import InMemoryHistory

    say = write or (lambda s: print_formatted_text(s))
    session = PromptSession(history=InMemoryHistory())
    for line in INTRO:
        say(line)
    while dlg.stage not in ("done", "quit"):
        p = dlg.current()
        if dlg.stage == "confirm" and p.id == "confirm" and not getattr(dlg, "_summarised", False):
            for line in dlg.summary():
                say(line)
            dlg._summarised = True
        if dlg.stage != "confirm":
            dlg._summarised = False
        try:
            text = session.prompt(p.text, completer=WordCompleter(p.completions + list(COMMANDS), ignore_case=True,
                                                                  sentence=True) if p.completions else None)
        except (KeyboardInterrupt, EOFError) as exc:
            path = dlg.save_resume()
            say(f"\nInterrupted: your answers are saved to {path}; continue with: gpu-advisor ask --resume {path}")
            return 130 if isinstance(exc, KeyboardInterrupt) else 1
        for line in dlg.submit(text):
            say(line)
    return 0


def run_lines(dlg, lines, write) -> int:
    """Drive the dialogue from piped lines (the test harness); running out of lines acts as Ctrl-D."""
    it = iter(lines)
    while dlg.stage not in ("done", "quit"):
        p = dlg.current()
        if dlg.stage == "confirm":
            for line in dlg.summary():
                write(line)
        write(p.text)
        try:
            text = next(it).rstrip("\n")
        except StopIteration:
            path = dlg.save_resume()
            write(f"Input ended: your answers are saved to {path}; continue with: gpu-advisor ask --resume {path}")
            return 1
        for line in dlg.submit(text):
            write(line)
    return 0


# --- the resume file ------------------------------------------------------------------------------------

def ready_out_dir(out_dir) -> Path:
    """`ask --out-dir DIR`: the folder, created when it does not exist (with its parents); InputError
    before the first question when it cannot be (a file of that name, no permission)."""
    p = Path(out_dir)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(Problem(f"cannot use it as the output folder: {exc.strerror or exc}", str(out_dir), None, "--out-dir")) from None
    return p


def save_resume(dlg, path: Path) -> Path:
    """Write the answers so far to `path` (nothing in a dry run); returns the path written. When `path`
    cannot be written (its folder removed, a full disk, no permission), the answers go to the system's
    temporary folder instead, whose path is returned: no exit of the dialogue loses what was typed."""
    if dlg.dry_run:              # a replay or a dry run writes nothing
        return path
    state = {"resume": 1, "advisor": __version__, "answers": dlg.answers, "preset": sorted(dlg.preset),
             "asked": dlg.asked, "typed": dlg.typed, "steps": dlg.steps}
    # the resume file this session continues is read, and meant to be saved over
    # answers taken from a workload file (`ask --from`) hold its loader's line-numbered lists: plain data
    text = yaml.safe_dump(yamlio.plain(state), sort_keys=False, allow_unicode=True)
    try:
        write_atomic(path, text, replaces=dlg.resumed_from)
        return path
    except (OSError, InputError):
        import tempfile
        fd, name = tempfile.mkstemp(prefix="gpu-advisor-resume-", suffix=".yaml")
        with open(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return Path(name)


def load_resume(path: str | Path) -> dict:
    """The state a resume file saved (answers, preset, asked, steps); InputError for anything else."""
    state = yamlio.load(path)
    if not isinstance(state, dict) or state.get("resume") != 1 or not isinstance(state.get("answers"), dict):
        raise InputError(f"{path}: not a gpu-advisor resume file")
    return yamlio.plain(state)


def remove_resume(*paths) -> None:
    """The session completed: a resume file it was started from (or that an interruption left in the
    output folder) is no longer needed."""
    for p in set(paths) - {None}:
        try:
            Path(p).unlink()
        except FileNotFoundError:
            pass


# --- the outputs ----------------------------------------------------------------------------------------

def output_paths(memo_path: Path) -> tuple[Path, Path, Path]:
    """The memo, and beside it the decision record (-decision.json) and the transcript (-transcript.yaml)."""
    base = memo_path.with_suffix("") if memo_path.suffix else memo_path
    return (memo_path, base.parent / (base.name.removesuffix("-memo") + "-decision.json"),
            base.parent / (base.name.removesuffix("-memo") + "-transcript.yaml"))


def _all_outputs(paths) -> list[Path]:
    """The memo, its decision record and transcript, and the chart files a Markdown memo gets beside it."""
    from advisor.shell.memo import chart_paths
    return [*paths, *(chart_paths(paths[0]).values() if str(paths[0]).endswith(".md") else ())]


def refusal(paths) -> str:
    """Why one of the outputs may not be written (an input, a FIFO, ...), or "" when all may: all of them
    (_all_outputs) are checked before any is written."""
    try:
        for p in _all_outputs(paths):
            refuse_output(p)
    except InputError as exc:
        return str(exc.problems[0])
    return ""


def existing_outputs(paths) -> list[Path]:
    """The outputs (_all_outputs) already there."""
    return [p for p in _all_outputs(paths) if Path(p).exists()]


def write_outputs(dlg, paths: tuple[Path, Path, Path]) -> list[Path]:
    """The memo in the dialogue's chosen format, the decision record and the session's transcript."""
    from advisor.shell import memo           # Jinja and the templates load only when a memo is written
    memo_path, decision_path, transcript_path = paths
    rec = dlg.decision.record
    # a Markdown memo gets its charts beside it as SVG files (memo.write)
    dlg.chart_files = memo.write(rec, dlg.catalog, dlg.memo_format, memo_path)[1:]
    # the saved record is the compact one (what `explain --why-not` reads, each thing said once), in
    # JSON without indentation: some 50 kB instead of 350 kB; `recommend --format json` gives the whole
    from advisor.judgement.record import compact
    write_atomic(decision_path, json.dumps(compact(rec), separators=(",", ":"), ensure_ascii=False, default=str) + "\n")
    write_atomic(transcript_path, transcript_yaml(dlg))
    return [memo_path, decision_path, transcript_path]
