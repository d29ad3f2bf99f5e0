"""What makes starts and decisions fast must not change a single answer: plain rule texts render
(and are checked) exactly as with Jinja, the compiled catalog and knowledge base read back from the
cache are the ones that were checked, the engine is driven without durable's Python Host, loaders
leave the garbage collector as they found it, and the command's fast exit keeps every byte of output
and the exit code."""
import json
import subprocess
import sys

import pytest

from advisor.judgement import decision, knowledge
from advisor.inputs import workload
from advisor.base import yamlio
from advisor.numbers import estimate as estimator
from advisor.base.errors import InputError
from advisor.judgement.knowledge.texts import _jinja_template, _PlainText, compiled_template

from conftest import EXAMPLES, ROOT


def _texts(rule):
    yield rule.because
    for kind, eff in rule.effects.items():
        if kind in ("warn", "note"):
            yield eff.get("text", "")
        if kind == "exclude":
            yield eff.get("reason", "")


def test_plain_rule_texts_render_exactly_as_jinja(catalog):
    kb = knowledge.load()
    plain = {t for r in kb.rules for t in _texts(r) if t and _PlainText.parse(t)}
    fielded = {t for r in kb.rules for t in _texts(r) if t and "{{" in t}
    assert fielded and fielded <= plain       # every shipped text with fields takes the fast path
    checked = 0
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if path.name == "grid.yaml":
            continue
        d = decision.decide(estimator.estimate(workload.load(path, catalog), catalog), kb, catalog)
        for f in d.firings:
            ctx = decision._contexts(f.fact)
            for text in _texts(f.rule):
                if text in plain:
                    try:
                        want = _jinja_template(text).render(**ctx)
                    except Exception as exc:          # noqa: BLE001 - the fast path must fail alike
                        with pytest.raises(type(exc)):
                            _PlainText.parse(text).render(**ctx)
                        continue
                    assert _PlainText.parse(text).render(**ctx) == want, text
                    checked += 1
    assert checked > 300


@pytest.mark.parametrize("text, value, want", [
    ("{{ candidate.memory_gb | num(0) }} GB on {{ candidate.gpu }}\n", {"memory_gb": 141.0, "gpu": "h200-sxm"}, "141 GB on h200-sxm"),
    ("{{candidate.usd_per_hour|usd}}/h", {"usd_per_hour": 1234.5}, "$1,234.50/h"),
    ("{{ candidate.headroom_gb | gb }}", {"headroom_gb": 14.8}, "14.8 GB"),
    ("{{ candidate.fits }} {{ candidate.count }} {{ candidate.tp }}", {"fits": True, "count": 3, "tp": 2.5}, "True 3 2.5"),
    ("on {{ candidate.gpu }}", {"gpu": "l40s\n"}, "on l40s\n"),         # only the text's own final newline goes
    ("{{ candidate.gpu }}\n\n", {"gpu": "l40s"}, "l40s\n"),
])
def test_plain_fields_and_filters(text, value, want):
    t = compiled_template(text)
    assert isinstance(t, _PlainText)
    ctx = {"workload": {}, "candidate": value, "derived": {}}
    assert t.render(**ctx) == want == _jinja_template(text).render(**ctx)


@pytest.mark.parametrize("text", [
    "{% if candidate.fits %}fits{% endif %}",     # a statement
    "{{ candidate.count + 1 }}",                   # an expression
    "{{ candidate.items }}",                       # a name a dict has as a method: Jinja decides
    "{{ candidate.gpu | upper }}",                 # a filter the fast path does not know
    "{# note #}{{ candidate.gpu }}",
    "{{ candidate.gpu }}\r\nnext line",             # Jinja rewrites line ends
])
def test_anything_else_goes_to_the_sandbox(text):
    assert _PlainText.parse(text) is None


def test_a_missing_field_fails_as_in_jinja():
    rule = knowledge.load().rules[0]
    with pytest.raises(InputError, match="template failed when the rule fired: 'dict object' has no attribute 'tp'"):
        decision._render(rule, "TP {{ candidate.tp }}", {"c_gpu": "h100-sxm"}, "because")


def test_compiled_knowledge_base_is_read_back_unchanged(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ADVISOR_CACHE", str(tmp_path / "cache"))
    first = knowledge.load()
    assert len(list((tmp_path / "cache" / "kb").iterdir())) == 1
    second = knowledge.load()                         # from the cache: no YAML parsed, nothing re-checked
    assert second is not first
    fields = ("id", "title", "source", "group", "priority", "when", "effects", "because", "examples", "file", "line",
              "scope", "stratum", "facts_used", "derives", "overrides")
    assert [[getattr(r, k) for k in fields] for r in second.rules] == [[getattr(r, k) for k in fields] for r in first.rules]
    assert (second.digest, second.files, second.derived) == (first.digest, first.files, first.derived)
    for p in (tmp_path / "cache" / "kb").iterdir():
        p.write_text('{"rules": [{"id": 1}]}')           # a damaged entry is ignored, not trusted
    assert [r.id for r in knowledge.load().rules] == [r.id for r in first.rules]


def test_an_edited_rule_file_is_not_served_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ADVISOR_CACHE", str(tmp_path / "cache"))
    rules = tmp_path / "rules"
    rules.mkdir()
    f = rules / "mine.yaml"
    body = ("- id: my-rule\n  title: mine\n  source: [team wiki]\n  when: {{candidate.memory_gb: {{gte: {v}}}}}\n"
            "  then: {{prefer: {{weight: 5}}}}\n")
    f.write_text(body.format(v=80))
    assert knowledge.load([rules], ).rule("my-rule").when.value == 80
    f.write_text(body.format(v=96))
    assert knowledge.load([rules]).rule("my-rule").when.value == 96
    f.write_text(body.format(v="lots"))
    with pytest.raises(InputError, match="type mismatch"):     # a broken file is never cached, so never served
        knowledge.load([rules])
    with pytest.raises(InputError, match="type mismatch"):
        knowledge.load([rules])


def test_yaml_cache_keeps_keys_that_are_not_text(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_ADVISOR_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "k.yaml"
    f.write_text("1: one\nfalse: yes\n2.5: [a, {b: null}]\nnested: {x: [1, 2]}\n")
    first, second = yamlio.load(f), yamlio.load(f)
    assert first == second == {1: "one", False: True, 2.5: ["a", {"b": None}], "nested": {"x": [1, 2]}}
    assert second.line_of(2.5) == 3 and second[2.5][1].line_of("b") == 3


def test_engine_runs_without_durables_python_host():
    """Rulesets are compiled only when a fact reaches them and fired through the C API on the calling
    thread: durable's Python Host (and its dispatcher threads) is never even imported."""
    code = (
        "import sys, threading, json\n"
        "from advisor.inputs import catalog, workload\n"
        "from advisor.judgement import decision, knowledge\n"
        "from advisor.numbers import estimate as estimator\n"
        "from advisor.judgement.engine import runner\n"
        "cat = catalog.default(); kb = knowledge.load()\n"
        f"w = workload.load({str(EXAMPLES / 'chat-assistant.yaml')!r}, cat)\n"
        "d = decision.decide(estimator.estimate(w, cat), kb, cat)\n"
        "r = runner(kb)\n"
        "print(json.dumps({'host': 'durable.engine' in sys.modules, 'threads': threading.active_count(),\n"
        "  'compiled': len(r.handles), 'shards': len(r.members), 'fallbacks': r.fallbacks, 'gpu': d.winner}))\n")
    out = json.loads(subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    assert out["host"] is False and out["threads"] == 1 and out["fallbacks"] == 0
    assert 0 < out["compiled"] < out["shards"]
    assert out["gpu"] == "h100-sxm"


def test_compiled_catalog_is_read_back_unchanged(tmp_path, monkeypatch):
    from advisor.inputs import catalog as catalog_mod
    monkeypatch.setenv("GPU_ADVISOR_CACHE", str(tmp_path / "cache"))
    first = catalog_mod.load()
    second = catalog_mod.load()                      # from the cache: no YAML parsed, nothing re-validated
    assert second is not first
    assert (second.gpus, second.models, second.prices) == (first.gpus, first.models, first.prices)
    assert (second.efficiency, second.sources, second.knowledge, second.digest) == \
        (first.efficiency, first.sources, first.knowledge, first.digest)
    h200 = second.gpu("h200")
    assert h200.memory_gb == 141 and h200.fig("memory_gb").sources == first.gpu("h200").fig("memory_gb").sources
    assert [f.extra for f in h200.figures.values()] == [f.extra for f in first.gpu("h200").figures.values()]
    for p in (tmp_path / "cache" / "catalog").iterdir():
        p.write_text('{"gpus": [["x"]]}')              # a damaged entry is ignored, not trusted
    assert catalog_mod.load().gpus == first.gpus


def test_an_edited_catalog_is_not_served_from_the_cache(tmp_path, monkeypatch):
    import shutil

    from advisor.inputs import catalog as catalog_mod
    monkeypatch.setenv("GPU_ADVISOR_CACHE", str(tmp_path / "cache"))
    d = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", d)
    assert catalog_mod.load(d).gpu("h200").memory_gb == 141
    f = d / "gpus.yaml"
    f.write_text(f.read_text().replace("memory_gb: {v: 141,", "memory_gb: {v: 142,", 1))
    assert catalog_mod.load(d).gpu("h200").memory_gb == 142


def _command(*args):
    return subprocess.run([sys.executable, "-m", "advisor", *args], cwd=ROOT, capture_output=True, text=True)


def test_the_command_ends_fast_but_with_all_its_output_and_the_right_code(tmp_path):
    """One-shot commands skip the interpreter's teardown; their output must still be whole and the
    exit code the command's own."""
    ok = _command("recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["recommendation"]["gpu"] == "h100-sxm"
    memo = _command("recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md")
    assert memo.returncode == 0 and memo.stdout.startswith("# GPU recommendation") and memo.stdout.endswith("\n")
    bad = _command("recommend", str(tmp_path / "missing.yaml"))
    assert bad.returncode == 2 and bad.stderr.strip().endswith("missing.yaml: no such file") and "Traceback" not in bad.stderr
    out = tmp_path / "memo.md"
    wrote = _command("recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md", "--out", str(out))
    # the same memo, with the links to its charts, written beside it as SVG files
    linked = [ln for ln in out.read_text().splitlines(keepends=True) if ln.startswith("![")]
    assert wrote.returncode == 0 and [ln.split("](")[1] for ln in linked] == ["memo.cost.svg)\n", "memo.tradeoff.svg)\n",
                                                                              "memo.memory.svg)\n"]
    assert [ln for ln in out.read_text().splitlines() if ln.strip() and not ln.startswith("![")] \
        == [ln for ln in memo.stdout.splitlines() if ln.strip()]
    assert all((tmp_path / f"memo.{c}.svg").read_text().startswith("<?xml") for c in ("cost", "tradeoff", "memory"))


def test_a_reader_that_leaves_early_is_not_an_error():
    p = subprocess.Popen([sys.executable, "-m", "advisor", "recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "json"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                                   # the reader is gone before the record is written
    assert p.wait(timeout=60) == 0
    assert b"Traceback" not in p.stderr.read()


def test_loaders_leave_the_collector_as_they_found_it(tmp_path):
    import gc
    assert gc.isenabled()
    knowledge.load()
    assert gc.isenabled() and gc.get_freeze_count() > 0        # what was loaded is out of the collector's way
    bad = tmp_path / "rules"
    bad.mkdir()
    (bad / "x.yaml").write_text("- id: Not Kebab\n")
    with pytest.raises(InputError):
        knowledge.load([bad])
    assert gc.isenabled()                                       # also after a refused load
    gc.disable()
    try:
        knowledge.load()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_plain_rule_texts_are_checked_without_jinja_but_alike():
    from advisor.judgement.knowledge.texts import _jinja_refs, _template_refs
    texts = {t for r in knowledge.load().rules for t in _texts(r) if t}
    assert texts
    for text in texts:
        assert _template_refs(text) == _jinja_refs(text), text


@pytest.mark.parametrize("watched", [False, True])
def test_fast_exit_steps_aside_for_coverage_and_profilers(watched):
    """The teardown is skipped (atexit handlers do not run) unless a tool that writes at exit is there."""
    code = ("import atexit, sys, types\n"
            + ("sys.modules['coverage'] = types.ModuleType('coverage')\n" if watched else "")
            + "atexit.register(lambda: print('teardown ran'))\n"
            f"sys.argv = ['gpu-advisor', 'recommend', {str(EXAMPLES / 'chat-assistant.yaml')!r}, '--format', 'summary']\n"
            "from advisor.shell.cli import entry\nentry()\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("Recommendation: 2 x NVIDIA H100 SXM 80GB")
    assert ("teardown ran" in out.stdout) == watched


@pytest.mark.parametrize("text", ["Set {{{ workload.mode }}} in the config", "{{ candidate.memory_gb | num(٣) }}"])
def test_what_jinja_would_refuse_is_not_taken_as_plain(text, tmp_path):
    assert _PlainText.parse(text) is None
    rules = tmp_path / "r"
    rules.mkdir()
    (rules / "x.yaml").write_text(f"- id: x\n  title: t\n  source: [ours]\n  when: {{candidate.memory_gb: {{gte: 1}}}}\n"
                                  f"  then: {{note: {{text: {json.dumps(text)}}}}}\n")
    with pytest.raises(InputError, match="template syntax error|template failed|a rule text holds only text and fields"):
        knowledge.load([rules])


@pytest.mark.parametrize("args", [["facts"], ["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "summary"]])
def test_output_that_cannot_be_written_is_an_error_not_success(tmp_path, args):
    """Output too long for the buffer fails inside the command, a short one when it is flushed at the end."""
    import resource
    import signal

    def no_room():                          # stdout a file that cannot grow: like a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    with open(tmp_path / "out", "w") as out:
        p = subprocess.run([sys.executable, "-m", "advisor", *args], cwd=ROOT, stdout=out, stderr=subprocess.PIPE,
                           text=True, preexec_fn=no_room)
    assert p.returncode == 120
    assert p.stderr == "gpu-advisor: error: cannot write the output: File too large\n"


def _help_width(columns: int | None, tty_columns: int | None) -> int:
    """The widest line of `recommend --help` with COLUMNS set (or not) and on a terminal (or a pipe)."""
    import os
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    cmd = [sys.executable, "-m", "advisor", "recommend", "--help"]
    if tty_columns is None:
        return max(map(len, subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True).stdout.splitlines()))
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, tty_columns, 0, 0))
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    p.wait()
    os.close(master)
    return max(map(len, data.decode().replace("\r\n", "\n").splitlines()))


def test_help_follows_the_terminal_width_as_argparse_does():
    assert _help_width(None, None) <= 78                  # a pipe: 80 columns
    assert 80 < _help_width(160, None) <= 158             # COLUMNS wins
    assert 80 < _help_width(None, 160) <= 158             # else the terminal's width
    assert _help_width(None, 50) < _help_width(None, 160)  # (argparse does not break an option's own text)


def test_cached_catalog_keeps_keys_that_are_not_text(tmp_path, monkeypatch):
    import shutil

    from advisor.base import cache
    from advisor.inputs import catalog as catalog_mod
    monkeypatch.setenv("GPU_ADVISOR_CACHE", str(tmp_path / "cache"))
    data = {1: [True, {None: 2.5}], "a": (1, 2), cache.MARK: "a key like the mark"}
    cache.write_json("probe", "x", cache.pack(data))
    assert cache.read_json("probe", "x", packed=True) == {1: [True, {None: 2.5}], "a": [1, 2], cache.MARK: "a key like the mark"}
    d = tmp_path / "catalog"
    shutil.copytree(ROOT / "catalog", d)
    with open(d / "efficiency.yaml", "a") as f:
        f.write("\n# a key that is a number\n325: {v: 1}\n")
    first, second = catalog_mod.load(d), catalog_mod.load(d)
    assert second.efficiency[325] == first.efficiency[325] == {"v": 1}


def test_with_caching_off_the_advisor_never_reads_its_own_source(monkeypatch):
    """An install without .py sources works with GPU_ADVISOR_CACHE=0: cache keys are only made for a cache."""
    from advisor.base import cache
    from advisor.inputs import catalog as catalog_mod
    monkeypatch.setenv("GPU_ADVISOR_CACHE", "0")

    def no_source(*modules):
        raise AssertionError("read its own source with caching off")
    monkeypatch.setattr(cache, "source_of", no_source)
    assert len(knowledge.load().rules) > 40
    assert catalog_mod.load().gpu("h200").memory_gb == 141
    assert yamlio.load(EXAMPLES / "chat-assistant.yaml")["model"]


def test_loads_leave_no_garbage_frozen(tmp_path):
    code = ("import gc, os\n"
            f"os.environ['GPU_ADVISOR_CACHE'] = {str(tmp_path / 'cache')!r}\n"
            "from advisor.inputs import catalog\n"
            "from advisor.judgement import engine, knowledge\n"
            "gc.collect()\n"      # what importing left (3.13: re.RegexFlag leftovers of the interpreter's own) is not the loads'
            "for cached in (False, True):\n"
            "    for _ in range(3):\n"
            "        kb = knowledge.load(); cat = catalog.load(knowledge.HOME / 'catalog'); engine._new_runner(kb)\n"
            "    if not cached:\n"
            "        import shutil; shutil.rmtree(os.environ['GPU_ADVISOR_CACHE'], ignore_errors=True)\n"
            "gc.unfreeze()\n"
            "print(gc.collect())\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"
