"""A user's memo template (`--template`) cannot leave the sandbox (issue 18): no global or filter leads
back to the Jinja environment, its loader or its bytecode cache; attributes are read on plain data only;
a user's template is never compiled into the on-disk cache. Every escape is refused with exit 2 and one
line, or renders harmlessly; no file changes and the marker command never runs."""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor import HOME
from advisor.shell.cli import main

from conftest import EXAMPLES

WORKLOAD = str(EXAMPLES / "chat-assistant.yaml")
PROJECT = [HOME / d for d in ("advisor", "templates", "rules", "catalog", "examples")]


def _digest(*roots: Path) -> dict[str, str]:
    out = {}
    for root in roots:
        for p in sorted(Path(root).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def cache(tmp_path, monkeypatch, capsys):
    """A private cache folder of this test's own, filled by one shipped memo (so there is something to clear)."""
    d = tmp_path / "cache"
    monkeypatch.setenv("GPU_ADVISOR_CACHE", str(d))
    assert main(["recommend", WORKLOAD, "--format", "md"]) == 0
    capsys.readouterr()
    assert list((d / "jinja").iterdir()), "the shipped memo's bytecode is cached"
    return d


def _pickle_payload(marker: Path) -> str:
    """The template text that unpickled its own bytes through the bytecode cache on main at 809075a."""
    from jinja2.bccache import bc_magic
    payload = bc_magic + f"cos\nsystem\n(S'echo pwned > {marker}'\ntR.".encode()
    literal = "".join(f"\\x{b:02x}" for b in payload)
    return ("{% set b = range.env.bytecode_cache.get_bucket(range.env, 'x', None, 'y') %}"
            "{{ b.bytecode_from_string('" + literal + "'.encode('latin-1')) }}")


ESCAPES = [
    "{{ range.env }}",
    "{{ range.env.loader.list_templates() }}",
    "{{ range.env.bytecode_cache.clear() }}",
    "{{ range.env.compile_templates(VICTIM, zip='stored') }}",
    "{{ range.environment }}",
    "{{ range.__closure__[0].cell_contents }}",
    "{{ range.__globals__ }}",
    "{{ namespace.__globals__ }}",
    "{% set ns = namespace(f=range) %}{{ ns.f.env }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ headline.__class__ }}",
    "{{ headline.__init__.__globals__ }}",
    "{{ headline.encode('latin-1') }}",
    "{{ headline.format_map(summary) }}",
    "{{ '{0.__class__}'.format(headline) }}",
    "{{ '{0.env}'.format(range) }}",
    "{{ headline|attr('__class__') }}",
    "{{ range|attr('env') }}",
    "{{ [headline]|map(attribute='__class__')|list }}",
    "{{ [range]|map(attribute='env')|list }}",
    "{{ alternatives|sort(attribute='__class__') }}",
    "{{ self._TemplateReference__context }}",
    "{{ self.__dict__ }}",
    "{% block b %}x{% endblock %}{{ self.b.__globals__ }}",
    "{% macro m() %}{% endmacro %}{{ m._environment }}",
    "{% macro m() %}{% endmacro %}{{ m.name }}",
    "{% for x in [1] %}{{ loop._iterator }}{% endfor %}",
    "{% for x in [1] %}{{ loop.__class__ }}{% endfor %}",
    "{% for x in [1] %}{{ loop.cycle.__self__ }}{% endfor %}",
    "{% set r = range %}{{ r.env }}",
    "{{ cycler('a').reset }}",
    "{{ joiner() }}",
    "{{ lipsum() }}",
    "{{ dict(a=1) }}",
    "{{ config }}",
    "{{ request }}",
    "{{ environment }}",
    "{{ summary.items.__self__ }}",
]


@pytest.mark.parametrize("source", ESCAPES)
def test_an_escape_is_refused_with_one_line_and_changes_nothing(capsys, tmp_path, cache, source):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    marker = tmp_path / "pwned"
    t = tmp_path / "evil.j2"
    t.write_text(source.replace("VICTIM", repr(str(victim))))
    before = _digest(cache, tmp_path, *PROJECT)
    assert main(["recommend", WORKLOAD, "--template", str(t)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpu-advisor: error: {t}: template ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert _digest(cache, tmp_path, *PROJECT) == before and not marker.exists()


def test_the_pickle_exploit_of_issue_18_runs_nothing(tmp_path):
    """As the issue ran it: a separate process, the default-on cache, `--template evil.j2`."""
    cache, marker = tmp_path / "cache", tmp_path / "pwned"
    env = {**os.environ, "GPU_ADVISOR_CACHE": str(cache)}
    run = [sys.executable, "-m", "advisor", "recommend", WORKLOAD]
    assert subprocess.run(run + ["--format", "md"], env=env, capture_output=True).returncode == 0
    t = tmp_path / "evil.j2"
    t.write_text(_pickle_payload(marker))
    before = _digest(cache, *PROJECT)
    out = subprocess.run(run + ["--template", str(t)], env=env, capture_output=True, text=True)
    assert out.returncode == 2 and not marker.exists()
    assert out.stderr == (f"gpu-advisor: error: {t}: template refused by the sandbox: reading 'env' of a function is not "
                          "allowed (templates read plain data only)\n")
    assert _digest(cache, *PROJECT) == before


HARMLESS = [
    ("{{ range }}", "<function"),                    # a plain function; printing it shows nothing reachable
    ("{{ self }}", "<TemplateReference"),
    ("{% for x in range(3) %}{{ loop.index }}{{ loop.cycle('a', 'b') }}{% if loop.last %}.{% endif %}{% endfor %}",
     "1a2b3a."),
    ("{% set ns = namespace(n=0) %}{% for x in range(4) %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}", "6"),
    ("{{ summary.cost | length }} {{ summary.keys() | list | length > 3 }} {{ headline.upper()[:3] }}", "3 True USE"),      # per hour carries the month (issue 23)
    ("{{ '{:>6}'.format(title[:4]) }}|{{ '%s!' % mode }}", "  chat|inference!"),
    ("{% for g in alternatives | groupby('excluded') %}{{ g.grouper }}:{{ g.list | length }} {% endfor %}", "False:"),
    ("{{ alternatives | map(attribute='gpu') | first }}", "h200-sxm"),
]


@pytest.mark.parametrize("source, shown", HARMLESS)
def test_plain_templates_still_work(capsys, tmp_path, source, shown):
    t = tmp_path / "ok.j2"
    t.write_text(source)
    assert main(["recommend", WORKLOAD, "--template", str(t)]) == 0
    assert shown in capsys.readouterr().out


def test_an_imported_template_gives_its_macros(capsys, tmp_path):
    (tmp_path / "parts.j2").write_text("{% macro cards(n) %}{{ n }} cards{% endmacro %}")
    t = tmp_path / "memo.j2"
    t.write_text("{% import 'parts.j2' as p %}{{ p.cards(4) }}")
    assert main(["recommend", WORKLOAD, "--template", str(t)]) == 0
    assert capsys.readouterr().out == "4 cards"
    t.write_text("{% import 'parts.j2' as p %}{{ p.cards._environment }}")
    assert main(["recommend", WORKLOAD, "--template", str(t)]) == 2


def test_a_user_template_is_never_cached(capsys, tmp_path, cache):
    t = tmp_path / "short.j2"
    t.write_text("{{ headline }}")
    before = _digest(cache)
    assert main(["recommend", WORKLOAD, "--template", str(t)]) == 0
    assert capsys.readouterr().out.startswith("Use 2 x NVIDIA H100 SXM 80GB")
    assert _digest(cache) == before


def test_the_environments_offer_two_plain_functions_as_globals():
    """The memo's, the rule texts' and the sweep's environments are all the one sandbox."""
    import types
    from advisor.judgement import knowledge
    from advisor.shell import memo
    from advisor.base import sandbox
    envs = [memo._env(shipped=False, html=False, colour=False, folder=HOME / "templates"), knowledge.template_env()]
    for env in envs:
        assert isinstance(env, sandbox.Sandbox) and env.bytecode_cache is None
        assert sorted(env.globals) == ["namespace", "range"]
        assert all(isinstance(g, types.FunctionType) for g in env.globals.values())


def test_a_rule_text_cannot_escape_either():
    from jinja2.exceptions import SecurityError, UndefinedError
    from advisor.judgement.knowledge.texts import _jinja_template
    for text in ("{{ workload.__class__ }}", "{{ range.env }}", "{{ workload.items.__self__ }}", "{{ cycler }}"):
        with pytest.raises((SecurityError, UndefinedError)):
            _jinja_template(text).render(workload={"mode": "inference"}, candidate={}, derived={})
    assert _jinja_template("{{ workload.mode }}: {{ workload.x | gb }}").render(
        workload={"mode": "inference", "x": 12.34}) == "inference: 12.3 GB"
