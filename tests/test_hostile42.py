"""Issue 42's hostile inputs (item 8): each one a clean one-line refusal (exit 2) or a correct answer,
no file replaced unless the whole write succeeds, the sandbox bounded whatever a template does."""
import json
import os

import pytest

from advisor.inputs import apiprices, links
from advisor.shell.cli import main

from conftest import EXAMPLES, refuse


def _fleet_file(tmp_path, interconnect: str):
    text = (EXAMPLES / "fleet-h100.yaml").read_text().replace("interconnect: NVLink + InfiniBand NDR", f"interconnect: {json.dumps(interconnect)}")
    f = tmp_path / "fleet.yaml"
    f.write_text(text)
    return f


def _recommended(capsys, path) -> dict:
    assert main(["recommend", str(path), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["recommendation"]


# --- a fleet's interconnect: a closed vocabulary, no negation read as the link it denies -------------------

@pytest.mark.parametrize("said, word", [("no NVLink", "'no'"), ("PCIe switch (NVLink disabled)", "'disabled'"),
                                        ("without NVLink", "'without'"), ("NVLink: off", "'off'"), ("non-NVLink", "'non-nvlink'")])
def test_a_denied_link_is_refused_not_read_as_nvlink(capsys, tmp_path, said, word):
    # before: a substring match read each as NVLink and planned TP 8 over a link the nodes lack
    err = refuse(capsys, ["recommend", str(_fleet_file(tmp_path, said))], f"fleet.yaml:19: fleet[0].interconnect: {json.dumps(said)[1:-1]!r}"
                 if "'" not in said else "fleet[0].interconnect")
    assert f"{word} is not a word of the interconnect vocabulary" in err and "accepted: scale-up links: NVLink" in err
    assert len(err.strip().splitlines()) == 1


def test_the_link_the_nodes_have_plans_over_it(capsys, tmp_path):
    nvlink = _recommended(capsys, _fleet_file(tmp_path, "NVLink + InfiniBand NDR"))
    assert (nvlink["gpu"], nvlink["tp"]) == ("h100-sxm", 8)
    # the same 16 H100 over PCIe only: no TP 8 over NVLink on the fleet's cards (the plan moves elsewhere)
    pcie = _recommended(capsys, _fleet_file(tmp_path, "PCIe switch"))
    assert not (pcie["gpu"] == "h100-sxm" and pcie["tp"] == 8)
    assert pcie == _recommended(capsys, _fleet_file(tmp_path, "PCIe Gen5 x16, 400G RoCE"))


@pytest.mark.parametrize("said, kind, rack", [
    ("NVLink + InfiniBand NDR", "scale-up", False), ("8x H100 SXM, NVSwitch, 400G RoCE", "scale-up", False),
    ("NVL72", "scale-up", True), ("GB200 NVL 72 rack", "scale-up", True), ("xGMI", "scale-up", False),
    ("Infinity Fabric", "scale-up", False), ("PCIe Gen5", "pcie", False), ("none", "pcie", False),
    ("NVLink bridge", "pcie", False), ("InfiniBand", "unknown", False), ("", "unknown", False)])
def test_the_vocabulary_reads_what_people_write(said, kind, rack):
    assert links.read(said) == links.Link(kind, rack)


# --- prices import-api writes only what its loader reads -------------------------------------------------

LLAMA = "together_ai/meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo"


def _table(tmp_path, entry: str, name="t.json"):
    f = tmp_path / name
    f.write_text('{"%s": {"mode": "chat", "litellm_provider": "together_ai", %s}}' % (LLAMA, entry))
    return f


def _load(catalog, path):
    return apiprices.load_api_prices(path, catalog.models)


def test_a_tiny_price_is_written_as_a_number_the_loader_reads(capsys, tmp_path, catalog):
    # 1e-12 USD a token is 1e-06 per million: written '1e-06', which YAML 1.1 reads as text (refused)
    f = _table(tmp_path, '"input_cost_per_token": 1e-12, "output_cost_per_token": 8.8e-7')
    assert main(["prices", "import-api", str(f), "--out", str(tmp_path / "o.yaml")]) == 0
    row, = _load(catalog, tmp_path / "o.yaml")
    assert (row.model, row.usd_per_million_input, row.usd_per_million_output) == ("llama-3.1-70b", 1e-06, 0.88)


@pytest.mark.parametrize("price", ["Infinity", "1e999", "9" * 5000])
def test_a_price_that_is_no_number_is_left_out_and_named(capsys, tmp_path, catalog, price):
    f = _table(tmp_path, f'"input_cost_per_token": {price}, "output_cost_per_token": 8.8e-7')
    assert main(["prices", "import-api", str(f), "--out", str(tmp_path / "o.yaml")]) == 0
    err = capsys.readouterr().err
    assert f"left out for a price that is no number (no row written), 1: {LLAMA} (input_cost_per_token" in err
    assert _load(catalog, tmp_path / "o.yaml") == []                    # before: 'inf' written, the loader refused it


def test_control_characters_in_names_are_dropped(capsys, tmp_path, catalog):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({LLAMA: {"mode": "chat", "litellm_provider": "together\u0007_ai\u009b\u202e",
                                     "input_cost_per_token": 8.8e-7, "output_cost_per_token": 8.8e-7}}))
    assert main(["prices", "import-api", str(f), "--out", str(tmp_path / "o.yaml"), "--source", "cut\x1b[2J"]) == 0
    row, = _load(catalog, tmp_path / "o.yaml")
    assert (row.provider, row.source) == ("together_ai", "cut")


@pytest.mark.parametrize("text, expected", [
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "t.json: not a LiteLLM price table: nested too deep to read"),
    ('{"a": {"mode": "chat", "x": ' + "9" * 5000 + "}}", None),
])
def test_deep_json_and_long_numbers_are_one_line(capsys, tmp_path, text, expected):
    f = tmp_path / "t.json"
    f.write_text(text)
    if expected:
        refuse(capsys, ["prices", "import-api", str(f), "--out", str(tmp_path / "o.yaml")], expected)
        assert not (tmp_path / "o.yaml").exists()
    else:                                  # a number no price uses, in an entry that is no catalog model's
        assert main(["prices", "import-api", str(f), "--out", str(tmp_path / "o.yaml")]) == 0


def test_a_file_its_loader_refuses_is_never_written(capsys, tmp_path, monkeypatch):
    f = _table(tmp_path, '"input_cost_per_token": 1e-7, "output_cost_per_token": 8.8e-7')
    monkeypatch.setattr(apiprices, "_scalar", lambda v: "'0.1 USD'" if isinstance(v, float) else json.dumps(v))
    refuse(capsys, ["prices", "import-api", str(f), "--out", str(tmp_path / "o.yaml")],
           "the import made an API price file its own loader refuses, so nothing was written: the imported file:6: usd_per_million_input: must be a number >= 0")
    assert sorted(os.listdir(tmp_path)) == ["t.json"]


# --- tracebacks ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["text", "md", "html"])
def test_an_owned_gpu_excluded_before_its_plan_is_named(capsys, tmp_path, fmt):
    # Gaudi 3 cannot run TensorRT-LLM: excluded with no card count, which the memo formatted as a number
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: llama-3.1-70b\nconcurrency: 64\nengine: trtllm\nfleet:\n  - {gpu: gaudi-3, count: 8, nodes: 1}\n")
    out = tmp_path / f"memo.{fmt}"
    assert main(["recommend", str(w), "--format", fmt, "--out", str(out)]) == 0, capsys.readouterr().err
    import html
    said = " ".join(html.unescape(out.read_text()).split())             # wrapped (text), escaped (html)
    assert "The team's 8 x gaudi-3 stay out of this plan: gaudi-3 is out: TensorRT-LLM does not run on Intel Gaudi 3" in said


def test_an_api_row_of_zero_is_no_offer(capsys, tmp_path, monkeypatch):
    import shutil
    from conftest import ROOT
    from advisor.inputs import catalog as catalog_mod
    d = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", d)
    text = (d / "api-prices.yaml").read_text()
    (d / "api-prices.yaml").write_text(text.replace("api_prices:\n", "api_prices:\n  - {model: gpt-oss-120b, provider: free, "
                                                    "provider_model: free/gpt-oss-120b, usd_per_million_input: 0, usd_per_million_output: 0, "
                                                    "date: 2026-12-01, source: s}\n", 1))
    monkeypatch.setenv("GPU_ADVISOR_CATALOG", str(d))
    catalog_mod._CACHE.clear()
    try:
        assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json"]) == 0   # before: ZeroDivisionError
        api = json.loads(capsys.readouterr().out)["api_comparison"]
    finally:
        catalog_mod._CACHE.clear()
    assert api["offers"][0]["provider"] == "wandb" and api["api_usd_per_million_tokens"] == pytest.approx(0.10)
    assert "free" not in {o["provider"] for o in api["offers"]}


# --- the sandbox: one budget of steps and of what is built, whatever the template does ----------------------

def run_limited(argv, cwd, memory_bytes=2 * 2**30, seconds=120):
    """The CLI in a child process under an address-space limit and a timeout: a bomb the sandbox missed
    ends in a MemoryError or the timeout here, never on the test machine."""
    import subprocess
    import sys
    code = ("import resource, sys\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({memory_bytes}, {memory_bytes}))\n"
            "from advisor.shell.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    p = subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd, capture_output=True, text=True, timeout=seconds)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("template, expected", [
    # a width taken from an argument: 2.5 billion characters (2.5 GB) before
    ("{{ '{:{}}'.format('a', '2500000000') | length }}", "a format width of 10,000 or more"),
    ("{{ '{:{w}}'.format('a', w='99999') | length }}", "a format width of 10,000 or more"),
    ("{{ '{:.{}f}'.format(1, '50000') | length }}", "a format width of 10,000 or more"),
    # a filter chain over a repeated list: each `upper` inside map is counted (3.5 GB before)
    ("{{ (['s' * 1000] * 1000000) | map('upper') | list | length }}", "more than 20,000,000 characters and items built"),
    ("{{ (['x'] * 1000000) | map('center', 9999) | list | length }}", "more than 20,000,000 characters and items built"),
    ("{{ ('{0}' * 200000).format('s' * 1000000) | length }}", "more than 20,000,000 characters and items built"),
    ("{{ ('%(a)s' * 100000) % {'a': 's' * 1000000} }}", "a text longer than 1,000,000"),
    ("{{ ('%s' * 100000) | format(*(['s' * 1000000] * 100000)) | length }}", "a text longer than 1,000,000"),
    ("{{ ('x' * 1000000) | wordwrap(1, wrapstring='y' * 1000000) | length }}", "a text longer than 1,000,000"),
    ("{{ ([['x'] * 1000000] * 1000) | sum(start=[]) | length }}", "a text longer than 1,000,000"),
    ("{{ ((9999 ** 64) ** 64) ** 64 }}", "a power of more than 65,536 bits"),
    ("{% set ns = namespace(x=1) %}{% for i in range(900) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x | tojson(indent=10000) | length }}",
     "a JSON indent above 16"),
    # loops over a list the template built (no range() budget): each item a step
    ("{% set ns = namespace(l=['x'] * 1000000) %}{% for a in ns.l %}{% for b in ns.l %}{% endfor %}{% endfor %}",
     "more than 2,000,000 calls and loop steps"),
    # a macro's or a block's output is joined only under the output limit
    ("{% macro m() %}{% for i in range(1000) %}{{ 's' * 1000000 }}{% endfor %}{% endmacro %}{{ m() | length }}",
     "more than 20,000,000 characters and items built"),
    ("{% set x %}{% for i in range(100) %}" + "s" * 200_000 + "{% endfor %}{% endset %}{{ x | length }}",
     "the output would be longer than 10,000,000 characters"),
    # a printed value is charged: a million-item list printed 1,000 times into a block took minutes
    ("{% set z %}{% for i in range(1000) %}{{ [[1] * 1000] * 1000 }}{% endfor %}{% endset %}{{ z | length }}",
     "more than 20,000,000 characters and items built"),
])
def test_template_work_and_memory_are_bounded(tmp_path, template, expected):
    t = tmp_path / "bomb.j2"
    t.write_text(template)
    code, out, err = run_limited(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(t)], tmp_path)
    assert code == 2, err
    assert err.strip().startswith(f"gpu-advisor: error: {t}: template refused by the sandbox: {expected}"), err
    assert len(err.strip().splitlines()) == 1


def test_a_rule_text_has_the_same_budget(tmp_path):
    # rule texts render with Template.render (no memo alarm, no output count): the budget is the template's own
    import subprocess
    import sys
    code = ("import resource\n"
            "resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))\n"
            "from jinja2 import DictLoader\n"
            "from advisor.base import sandbox\n"
            "env = sandbox.environment(DictLoader({}), layout=False)\n"
            "bomb = \"{% set ns = namespace(l=['x'] * 1000000) %}{% for a in ns.l %}{% for b in ns.l %}{% endfor %}{% endfor %}\"\n"
            "try:\n"
            "    env.from_string(bomb).render()\n"
            "except sandbox.SecurityError as exc:\n"
            "    print(exc)\n"
            "print(env.from_string(\"{{ (['a'] * 1000) | map('upper') | join }}\").render() == 'A' * 1000)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    # the next rendering has a fresh budget
    assert p.stdout.splitlines() == ["more than 2,000,000 calls and loop steps in one rendering", "True"], p.stderr


# --- outputs: a memo and its charts are one write; a pipe no one reads is refused; a failed write names the file

def _memo_folder(tmp_path):
    """A folder holding last week's memo, its three charts and a user's own memo.cost.svg."""
    out = tmp_path / "memo.md"
    for name in ("memo.md", "memo.tradeoff.svg", "memo.memory.svg"):
        (tmp_path / name).write_text(f"last week's {name}\n")
    (tmp_path / "memo.cost.svg").write_text("the user's own chart\n")
    return out, {p.name: p.read_text() for p in tmp_path.iterdir()}


def test_a_memo_write_refused_replaces_none_of_its_charts(capsys, tmp_path):
    from advisor.base import files
    out, before = _memo_folder(tmp_path)
    with files.writing(out) as f:              # another gpu-advisor in the middle of writing memo.md
        f.write("last week's memo.md\n")
        refuse(capsys, ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md", "--out", str(out)],
               f"{out}: is being written by another gpu-advisor")
        # before: the three SVGs (the user's memo.cost.svg among them) were replaced before the memo was refused
        assert {p.name: p.read_text() for p in tmp_path.iterdir() if not p.name.startswith(".")} == before


def test_a_memo_that_cannot_be_written_replaces_none_of_its_charts(tmp_path):
    import subprocess
    import sys
    out, before = _memo_folder(tmp_path)
    # a file size limit between the charts' (under 10 kB) and the memo's (~60 kB): the memo's write fails
    # as on a full disk, after the charts' temporary files were written
    code = ("import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))\n"
            "from advisor.shell.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    p = subprocess.run([sys.executable, "-c", code, "recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md", "--out", str(out)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stderr) == (120, f"gpu-advisor: error: {out}: cannot write: File too large\n")
    assert {q.name: q.read_text() for q in tmp_path.iterdir()} == before        # no chart replaced, no temporary left


def test_a_failed_write_names_the_file(capsys):
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json", "--out", "/dev/full"]) == 120
    assert capsys.readouterr().err == "gpu-advisor: error: /dev/full: cannot write: No space left on device\n"


def test_out_naming_a_fifo_no_one_reads_is_refused_at_once(capsys, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # before: open() waited for a reader for ever (run in a child with a timeout so a regression fails, not hangs)
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "advisor", "recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json",
                        "--out", str(fifo)], capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stderr) == (2, f"gpu-advisor: error: {fifo}: is a named pipe (FIFO) that no program is reading; refusing to wait for one\n")


def test_out_naming_a_fifo_someone_reads_is_written(capsys, tmp_path):
    import threading
    import time
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []

    def read():                                # `cat pipe`
        with open(fifo, "rb") as f:
            got.append(f.read())
    t = threading.Thread(target=read, daemon=True)
    t.start()
    for _ in range(1000):                      # until the reader is there; this writer stays open until the end,
        try:                                   # so that the reader reads to the command's end
            probe = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            time.sleep(0.01)
    try:
        assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json", "--out", str(fifo)]) == 0
    finally:
        os.close(probe)
    t.join(60)
    assert json.loads(got[0])["recommendation"]["gpu"] == "h100-sxm"


# --- signals: SIGTERM to a sweep ---------------------------------------------------------------------------------

@pytest.mark.parametrize("group", [False, True], ids=["the sweep", "its process group"])
def test_sigterm_to_a_sweep_keeps_the_rows_and_leaves_no_lock(tmp_path, group):
    import signal
    import subprocess
    import sys
    import time
    g = tmp_path / "g.yaml"
    g.write_text(f"base: {EXAMPLES / 'chat-assistant.yaml'}\nvary:\n  concurrency: [{', '.join(map(str, range(1, 2001)))}]\n")
    out = tmp_path / "o.csv"
    p = subprocess.Popen([sys.executable, "-m", "advisor", "sweep", str(g), "--out", str(out), "--jobs", "2", "--quiet"],
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    for _ in range(600):                         # until some rows are in the temporary file
        time.sleep(0.05)
        temps = [f for f in tmp_path.iterdir() if f.name.startswith(".o.csv.") and not f.name.endswith(".lock")]
        if temps and len(temps[0].read_text().splitlines()) > 3:
            break
    if group:
        os.killpg(p.pid, signal.SIGTERM)         # what systemd or `timeout` does
    else:
        p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    # before: killed outright (143 from the shell), a worker's BrokenPipeError traceback, .o.csv.lock and the
    # temporary file left beside no o.csv
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    kept = len(out.read_text().splitlines()) - 1
    assert (p.returncode, err) == (143, f"gpu-advisor: interrupted: {kept} of 2000 rows decided and kept in {out}\n")
    assert kept > 0 and sorted(f.name for f in tmp_path.iterdir()) == ["g.yaml", "o.csv"]


# --- a resume file naming questions this version does not ask ------------------------------------------------

def test_back_after_resuming_with_unknown_questions(capsys, tmp_path, monkeypatch):
    import io
    import sys
    r = tmp_path / "resume.yaml"
    r.write_text("resume: 1\nanswers: {mode: inference}\nasked: [mode, nosuch, mode, 7]\nsteps: []\n")
    monkeypatch.setenv("GPU_ADVISOR_PIPE", "1")
    monkeypatch.setattr(sys, "stdin", io.StringIO("back\nback\n"))
    main(["ask", "--resume", str(r), "--out-dir", str(tmp_path)])        # before: StopIteration from `back`
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "StopIteration" not in err, err
    # the one known question, once: back to it, then nothing before it
    assert "  Back to: What will the GPUs do?" in out and out.count("Back to:") == 1
    assert "  This is the first question." in out


# --- explain: what a record makes it load is bounded -------------------------------------------------------------

def _record(capsys, tmp_path):
    out = tmp_path / "rec.json"
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json", "--out", str(out)]) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def test_a_record_naming_a_rule_folder_800_times_is_refused(capsys, tmp_path):
    from conftest import ROOT
    rec = _record(capsys, tmp_path)
    rec["versions"]["rule_dirs"] = [{"path": str(ROOT / "rules"), "sha256": "x"}] * 800
    f = tmp_path / "tampered.json"
    f.write_text(json.dumps(rec))
    # before: the folder loaded 800 times (53 s, 1.5 GB) to print 83,200 lines of duplicate rule ids
    err = refuse(capsys, ["explain", str(f)], f"{f}: not a decision record the advisor wrote: 'versions.rule_dirs' lists 800 entries (at most 64)")
    assert len(err.splitlines()) == 1


def test_a_rule_folder_named_twice_is_read_once(capsys, tmp_path):
    rec = _record(capsys, tmp_path)
    rec["versions"]["rule_dirs"] = [{"path": str(tmp_path / "mine"), "sha256": "x"}] * 30
    f = tmp_path / "twice.json"
    f.write_text(json.dumps(rec))
    assert main(["explain", str(f)]) == 0
    out = capsys.readouterr().out
    assert out.count(f"the record names the rule folder {tmp_path / 'mine'}, outside the project") == 1
