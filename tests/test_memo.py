"""Memos: snapshots in every format, Markdown tables, self-contained HTML with its SVG chart (also
rendered in headless Chromium), user templates in the sandbox, atomic --out."""
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from advisor.cli import main

from conftest import EXAMPLES

SNAPSHOTS = Path(__file__).parent / "snapshots"
WORKLOADS = ["chat-assistant", "gpt-oss-120b-one-user", "kimi-k3-serving", "llama-13b-full-finetune", "mistral-7b-lora"]
FORMATS = {"md": "md", "html": "html", "text": "txt"}


@pytest.fixture(autouse=True)
def fixed_date(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796083200")   # 2026-12-01: memos are reproducible


def memo(capsys, name, fmt, *extra):
    assert main(["recommend", str(EXAMPLES / f"{name}.yaml"), "--format", fmt, *extra]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", WORKLOADS)
def test_snapshot(capsys, name, fmt):
    out = memo(capsys, name, fmt)
    snap = SNAPSHOTS / f"{name}.{FORMATS[fmt]}"
    if os.environ.get("UPDATE_SNAPSHOTS"):
        snap.parent.mkdir(exist_ok=True)
        snap.write_text(out)
    assert snap.exists(), f"no snapshot {snap.name}: create it with UPDATE_SNAPSHOTS=1"
    assert out == snap.read_text(), f"{snap.name} changed: rerun with UPDATE_SNAPSHOTS=1 if intended"


def test_memo_is_deterministic(capsys):
    assert memo(capsys, "chat-assistant", "md") == memo(capsys, "chat-assistant", "md")


@pytest.mark.parametrize("name", WORKLOADS)
def test_markdown_parses_with_tables_intact(capsys, name):
    text = memo(capsys, name, "md")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables = [t for t in tokens if t.type == "table_open"]
    assert len(tables) >= 5        # facts, ledger, figures, alternatives, workload, audit
    rows = sum(1 for t in tokens if t.type == "tr_open")
    table_lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    delimiter = re.compile(r"^\|[\s:|-]*-[\s:|-]*\|$")
    assert rows == len([ln for ln in table_lines if not delimiter.match(ln)])   # every table line became a row
    heads = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]
    assert heads == ["Recommendation", "Why", "The numbers", "Alternatives considered", "Risks and prerequisites",
                     "Assumptions and sources", "Audit: rules that fired, in order"]


class _Checker(HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr", "rect"}

    def __init__(self):
        super().__init__()
        self.stack, self.tags, self.errors, self.external = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.external.append(v)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}> with open {self.stack[-3:]}")
        else:
            self.stack.pop()


@pytest.mark.parametrize("name", WORKLOADS)
def test_html_parses_is_self_contained_and_has_the_chart(capsys, name):
    text = memo(capsys, name, "html")
    c = _Checker()
    c.feed(text)
    assert not c.errors and not c.stack
    assert "svg" in c.tags and c.tags.count("rect") > 3
    assert not c.external          # no external assets
    assert "Memory need (ledger proportions) against the cards' capacity" in text


def test_html_renders_in_headless_chromium(capsys, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        pytest.skip("Chromium is not installed (.ci/run installs Debian's chromium)")
    page = tmp_path / "memo.html"
    page.write_text(memo(capsys, "chat-assistant", "html"))
    shot = tmp_path / "memo.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000   # a real page, not a blank one


def test_text_memo_fits_80_columns_and_answers_the_budget_owner(capsys):
    text = memo(capsys, "chat-assistant", "text")
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "\033[" not in text                                     # no colour when not a terminal
    assert "Use 1 x NVIDIA H200 SXM 141GB" in text                  # what to buy, how many
    assert "$5.00 per hour" in text and "2026-09" in text            # what it costs, and the price's date
    assert "Runner-up: a100-40gb-sxm" in text and "ALTERNATIVES CONSIDERED" in text   # why not the next priced option
    assert "Power: about 0.9 kW per node" in text and "Cooling:" in text     # what must be true in the data centre
    assert "rules sha256:" in text


def test_unknown_price_says_so(capsys):
    text = memo(capsys, "mistral-7b-lora", "text")
    assert "price unknown" in text


def test_no_recommendation_memo_names_the_rules(capsys, tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: gpt-oss-120b\nconstraints: {import_restricted: true, gpus: [H100]}\n")
    assert main(["recommend", str(w), "--format", "md"]) == 0
    text = capsys.readouterr().out
    assert "No GPU can be recommended" in text and "import-restricted-excludes-us-accelerators" in text


def test_out_writes_atomically(capsys, tmp_path):
    out = tmp_path / "memo.md"
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md", "--out", str(out)]) == 0
    assert out.read_text().startswith("# GPU recommendation: chat-assistant")
    assert [p.name for p in tmp_path.iterdir()] == ["memo.md"]      # no temporary file left behind
    # a failing render leaves the previous memo whole
    bad = tmp_path / "bad.j2"
    bad.write_text("{{ nope }}")
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(bad), "--out", str(out)]) == 2
    assert out.read_text().startswith("# GPU recommendation: chat-assistant")


def test_user_template(capsys, tmp_path):
    t = tmp_path / "short.md.j2"
    t.write_text("Buy: {{ headline }}\nDecided by {{ decisive.id }} ({{ decisive.source }})\n")
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(t)]) == 0
    assert capsys.readouterr().out == ("Buy: Use 1 x NVIDIA H200 SXM 141GB (1 node, TP 1 x PP 1 x DP 1): $5.00 per hour "
                                       "(Hugging Face Inference Endpoints (AWS), 2026-09, 1 x 1-GPU instance), "
                                       "$0.29 per million output tokens.\nDecided by ranking-cost-per-unit-of-work (T07, C16)\n")


@pytest.mark.parametrize("source, expected", [
    ("{{ ''.__class__.__mro__ }}", "template refused by the sandbox"),
    ("{{ headline.__class__.__init__.__globals__ }}", "template refused by the sandbox"),
    ("{% for x in %}", "t.j2:1: template error"),
    ("line one\n{{ not_a_field }}", "template error: 'not_a_field' is undefined"),
])
def test_broken_or_hostile_template_exits_2(capsys, tmp_path, source, expected):
    t = tmp_path / "t.j2"
    t.write_text(source)
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--template", str(t)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_html_template_escapes(capsys, tmp_path):
    t = tmp_path / "x.html.j2"
    t.write_text("<p>{{ workload[0][1] }}</p>")
    w = tmp_path / "w.yaml"
    w.write_text("name: '<script>alert(1)</script>'\nmode: inference\nmodel: gpt-oss-20b\n")
    assert main(["recommend", str(w), "--template", str(t), "--format", "html"]) == 0
    out = capsys.readouterr().out
    assert "<script>" not in out and "&lt;script&gt;" in out


def test_idle_rented_gpus_are_named(capsys, tmp_path):
    # the planner fills what it rents; a layout given in the workload is evaluated as given, idle GPUs named
    w = tmp_path / "w.yaml"
    w.write_text((EXAMPLES / "llama-13b-full-finetune.yaml").read_text() + "layout: {tp: 1, pp: 3, dp: 1}\n")
    assert main(["recommend", str(w), "--format", "text", "--gpu", "h100"]) == 0
    text = capsys.readouterr().out
    assert "1 x 8-GPU\n  instance, 5 GPU(s) rented but idle)" in text or "5 GPU(s) rented but idle" in text.replace("\n  ", " ")
    assert "layers in 3 pipeline stages in one node" in text


def test_training_memo_shows_the_flops_it_used(capsys):
    text = memo(capsys, "mistral-7b-lora", "md")
    assert "| Training FLOPs per token | 38.0 GFLOP | 4 x 7.30B active x 1.3 (activation checkpointing, C06) (LoRA:" in text
    assert "Active weights / bandwidth" not in text             # inference-only figures stay out


def test_on_prem_memo_warns_that_prices_are_rentals(capsys, tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text("mode: inference\nmodel: llama-3.1-70b\nprecision: fp8\nconstraints: {deployment: on-prem}\n")
    assert main(["recommend", str(w), "--format", "md"]) == 0
    assert "The catalog holds cloud rental prices only (K17)" in capsys.readouterr().out
