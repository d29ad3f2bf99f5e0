"""README.md true by construction (issue 23): every command excerpt, every example answer and the timing
claims between marker comments are regenerated from the shipped examples and bench/last.json.

    .venv/bin/python docs/readme.py            # rewrite README.md in place
    .venv/bin/python docs/readme.py --check    # exit 1, showing the drift, when README.md is not what the commands print

A marked part is `<!-- readme:NAME -->` ... `<!-- /readme:NAME -->`, NAME one of PARTS below. The
commands run as the README shows them (the shell's `gpu-advisor`, from the repository root or, for those
that write files, a scratch folder holding `examples/`); an excerpt keeps whole lines of their output and
marks what it leaves out with `...`. Only the memo's "Generated <date>" line differs from day to day: the
check masks it. Nothing here times anything: the timings come from the file bench/run.py writes.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BENCH = ROOT / "bench" / "last.json"
MARK = re.compile(r"<!-- readme:(?P<name>[\w-]+) -->(?P<body>.*?)<!-- /readme:(?P=name) -->", re.S)
DATE_LINE = re.compile(r"(Generated )\d{4}-\d{2}-\d{2}")
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
           "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]


def _env() -> dict:
    # the shell the README's reader has: the venv's gpu-advisor on PATH, no colour, no pinned date
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("SOURCE_DATE_EPOCH", "COLUMNS")}
    return {**env, "PATH": bin_dir + os.pathsep + env.get("PATH", ""), "NO_COLOR": "1", "TERM": "dumb"}


def run(cmd: str, cwd: Path = ROOT) -> list[str]:
    """The lines a shell command prints (stdout, then stderr), as the README shows them; a failure is an error."""
    r = subprocess.run(cmd, shell=True, cwd=cwd, env=_env(), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"docs/readme.py: `{cmd}` exited {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")
    text = r.stdout + r.stderr
    # a progress bar redraws itself with carriage returns: the terminal keeps its last state
    return [line.split("\r")[-1] for line in text.rstrip("\n").split("\n")]


def on_pty(cmd, cwd: Path, env: dict, timeout: float = 300) -> tuple[int, str, str]:
    """(exit code, what a terminal shows, stderr) of a command whose stdout is a pseudo-terminal: `cmd` a
    shell line (str) or an argv list. tests/test_newcomer.py reads its commands through this too."""
    import pty
    main, child = pty.openpty()
    p = subprocess.Popen(cmd, shell=isinstance(cmd, str), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=child,
                         stderr=subprocess.PIPE)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:            # the command closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    err = p.stderr.read().decode()
    p.stderr.close()
    return p.wait(timeout=timeout), b"".join(chunks).decode().replace("\r\n", "\n"), err


def run_on_terminal(cmd: str, cwd: Path) -> list[str]:
    """The lines a command shows with its stdout on a terminal of 80 columns (a pseudo-terminal), as a
    reader who types it sees them; a failure is an error."""
    code, shown, err = on_pty(cmd, cwd, {**_env(), "COLUMNS": "80"})
    if code != 0:
        raise SystemExit(f"docs/readme.py: `{cmd}` exited {code}: {err.strip()[:300]}")
    return shown.rstrip("\n").split("\n")


@contextmanager
def scratch():
    """A scratch folder with the shipped examples in it, for the commands that write files."""
    d = Path(tempfile.mkdtemp(prefix="gpu-advisor-readme-"))
    try:
        (d / "examples").symlink_to(ROOT / "examples")
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def block(*parts: str) -> str:
    # a terminal shows no trailing blanks (an empty answer after its prompt)
    return "\n```\n" + "\n".join(p.rstrip() for p in parts) + "\n```\n"


def between(lines: list[str], start: str | tuple | None, stop: str | None) -> list[str]:
    """The lines from the first that starts with `start` (the first line when None) up to, not
    including, the next that starts with `stop` (the end when None)."""
    i = next(k for k, x in enumerate(lines) if x.startswith(start)) if start else 0
    j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith(stop)), len(lines)) if stop else len(lines)
    return lines[i:j]


def command(cmd: str, lines: list[str]) -> list[str]:
    return [f"$ {cmd}", *lines]


# --- the parts --------------------------------------------------------------------------------------------

def memo_summary() -> str:
    """What the main command shows on a terminal: the memo's summary and where the whole memo went."""
    cmd = "gpu-advisor recommend examples/chat-assistant.yaml"
    with scratch() as d:
        out = run_on_terminal(cmd, d)
    return block(*command(cmd, out))


def gpus() -> str:
    cmd = "gpu-advisor gpus 141GB+"
    return block(*command(cmd, run(cmd)))


def one_line() -> str:
    cmd = "gpu-advisor recommend --model meta-llama/Llama-3.1-70B-Instruct --users 64 --gpu H100:8 --format summary"
    out = between(run(cmd), None, "Decisive rule")
    return block(*command(cmd, out), "...")


def template() -> str:
    make = r"printf 'Buy: {{ summary.sentence }}\nDecided by {{ decisive.id }} ({{ decisive.source }})\n' > short.j2"
    cmd = "gpu-advisor recommend examples/chat-assistant.yaml --template short.j2"
    with scratch() as d:
        run(make, d)
        out = run(cmd, d)
    return block(f"$ {make}", *command(cmd, out))


def estimate() -> str:
    cmd = "gpu-advisor estimate examples/gpt-oss-120b-one-user.yaml --gpu H100 --gpu H200 --gpu A100"
    return block(*command(cmd, run(cmd)))


def memo_cost(example: str) -> str:
    """The summary's cost lines of a shipped example's memo (what to use, per hour and month, per unit,
    the offer, buy or rent, the API), up to its reasons."""
    cmd = f"gpu-advisor recommend examples/{example}.yaml"
    # (a closest-plan answer opens "No GPU meets the service level; the closest plan: Use ...")
    out = between(run(cmd), ("Use ", "No GPU meets the service level"), "Why:")
    return block(*command(cmd, ["...", *out]), "...")


def dialogue() -> str:
    """A session of `gpu-advisor ask` through the dialogue's own line driver, each answer shown after its
    question as a terminal echoes it (the answers of transcripts/gpt-oss-120b-many-users.yaml, typed as
    people type them)."""
    sys.path.insert(0, str(ROOT))
    from advisor.inputs import catalog
    from advisor.judgement import knowledge
    from advisor.judgement.advise import Setup
    from advisor.shell import dialogue as dlg_mod, session

    script = ["serve", "", "", "", "8k", "", "", "lots", "64"] + [""] * 9 + ["", "", ""]
    shown: list[str] = []

    def typed():
        for answer in script:
            shown[-1] += answer
            yield answer

    cwd = os.getcwd()
    with scratch() as d:
        os.chdir(d)
        try:
            dlg = dlg_mod.Dialogue(Setup(catalog.default(), knowledge.load()), out_dir=".", width=100)
            shown.extend(session.INTRO)
            code = session.run_lines(dlg, typed(), shown.append)
        finally:
            os.chdir(cwd)
    if code != 0:
        raise SystemExit(f"docs/readme.py: the scripted `ask` session ended with {code}: {shown[-1]}")
    first = shown[: next(k for k, x in enumerate(shown) if x.endswith("[1] 64")) + 1]
    confirm = between(shown, "Recommend with these answers?", "Note [")
    last = between(shown, "Memo format?", None)
    return block("$ gpu-advisor ask", *first, "...", *confirm, "...", *last)


def sweep() -> str:
    cmd = "gpu-advisor sweep examples/grid.yaml --out table.csv --summary sweep.html"
    with scratch() as d:
        out = run(cmd, d)
    return block(*command(cmd, out))


def bench() -> str:
    """The timing claims, from the figures bench/run.py last wrote (never timed here)."""
    b = json.loads(BENCH.read_text())
    m, c, dec = b["machine"], b["cold_start_ms"], b["decision_ms"]
    load = (f", load average {m['load_average_1min_at_start']:g} at the start and {m['load_average_1min_at_end']:g} at the end"
            if "load_average_1min_at_start" in m else "")
    return (f"`python bench/run.py` wrote, on a {m['cores']}-core {m['platform']} machine with Python {m['python']} "
            f"({b['date']}, medians of {b['runs']} runs{load}; `bench/last.json`): a recommendation as a whole command in "
            f"{c['json']['cache_warm']:.0f} ms with the cache warm and {c['json']['cache_off']:.0f} ms without it "
            f"({c['md']['cache_warm']:.0f} and {c['md']['cache_off']:.0f} ms for the Markdown memo), "
            f"{dec['estimate+decide']:.1f} ms per decision in one process ({dec['with record']:.1f} ms with the JSON "
            f"record; the target is 15), {b['rules_ms']['5000']['load+decide']:.0f} ms to load and apply 5,000 rules, "
            f"and a sweep deciding {b['sweep']['decisions_per_s']:.0f} combinations a second; a busy machine gives more.")


def prices() -> str:
    """What `gpu-advisor prices list` holds: the SkyPilot rows (they name the catalog commit) and the rest."""
    rows = json.loads("\n".join(run("gpu-advisor prices list --format json")))
    sky = [r for r in rows if r.get("commit")]
    return (f"({len(sky)} dated rows from {len({r['provider'] for r in sky})} providers for {len({r['gpu'] for r in sky})} GPUs) "
            f"plus {len(rows) - len(sky)} hand-kept quotes ({len({r['gpu'] for r in rows})} GPUs in all)")


def transcripts() -> str:
    n = len(list((ROOT / "transcripts").glob("*.yaml")))
    return NUMBERS[n] if n < len(NUMBERS) else f"{n}"


def models() -> str:
    import yaml
    doc = yaml.safe_load((ROOT / "catalog" / "models.yaml").read_text())
    return str(len(doc["models"] if isinstance(doc, dict) else doc))


PARTS = {
    "dialogue": dialogue, "memo-summary": memo_summary, "template": template, "estimate": estimate,
    "workstation": lambda: memo_cost("workstation-gemma-27b"), "fleet": lambda: memo_cost("fleet-h100"),
    "on-prem": lambda: memo_cost("on-prem-70b-serving"), "sweep": sweep, "bench": bench,
    "transcripts": transcripts, "models": models, "prices": prices, "gpus": gpus, "one-line": one_line,
}


def render(text: str) -> str:
    """README.md with every marked part regenerated; an unknown or missing part is an error."""
    names = [m["name"] for m in MARK.finditer(text)]
    unknown = sorted(set(names) - set(PARTS))
    if unknown:
        raise SystemExit(f"docs/readme.py: README.md marks unknown parts: {', '.join(unknown)} (known: {', '.join(PARTS)})")
    missing = sorted(set(PARTS) - set(names))
    if missing:
        raise SystemExit(f"docs/readme.py: README.md lacks the marked parts {', '.join(missing)}")
    made = {name: PARTS[name]() for name in dict.fromkeys(names)}
    return MARK.sub(lambda m: f"<!-- readme:{m['name']} -->{made[m['name']]}<!-- /readme:{m['name']} -->", text)


def drift(current: str, wanted: str) -> list[str]:
    """The unified diff between the README and what the commands print, the memo's date masked."""
    a, b = (DATE_LINE.sub(r"\1YYYY-MM-DD", t).splitlines() for t in (current, wanted))
    return list(difflib.unified_diff(a, b, "README.md", "README.md as the commands print it", lineterm=""))


def main(argv: list[str]) -> int:
    current = README.read_text()
    wanted = render(current)
    if "--check" in argv:
        diff = drift(current, wanted)
        if diff:
            print("\n".join(diff))
            print("README.md drifted from what the commands print: run `.venv/bin/python docs/readme.py`", file=sys.stderr)
            return 1
        print("README.md matches what the commands print")
        return 0
    if wanted != current:
        README.write_text(wanted)
        print("README.md rewritten")
    else:
        print("README.md already matches")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
