"""The charts a budget owner reads (issue 42, item 6): their geometry from the decision record, and the
HTML memo and the sweep page laid out in headless Chromium, measured from the laid-out DOM
(getBoundingClientRect): no two labels overlap, every point of the trade-off chart is labelled beside
itself with a number the key names once, the cost bars are sorted with the chosen plan marked, and
every row of the sweep chart has a bar."""
import html as htmllib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.shell.cli import main
from advisor.shell.memochart import chart, cost_chart, plotted
from advisor.shell.memotradeoff import tradeoff_chart

from conftest import EXAMPLES


def _record(capsys, name: str) -> dict:
    assert main(["recommend", str(EXAMPLES / f"{name}.yaml"), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _html(capsys, name: str) -> str:
    assert main(["recommend", str(EXAMPLES / f"{name}.yaml"), "--format", "html"]) == 0
    return capsys.readouterr().out


# --- geometry, from the record -----------------------------------------------------------------------

def test_cost_bars_cheapest_first_with_the_winner_marked_and_why_a_cheaper_plan_lost(capsys, catalog):
    from advisor.shell.memoview import view
    rec = _record(capsys, "chat-assistant")
    v = view(rec, catalog)
    rows = v["cost_chart"]["rows"]
    costs = [float(r["label"].split(":")[0].lstrip("$")) for r in rows]
    assert costs == sorted(costs) and len(rows) == 12
    # 4 x RTX 5090 at $0.17 is cheaper than the chosen 2 x H100 at $0.19: it comes first, with its reason
    assert [r["gpu"] for r in rows[:2]] == ["4 x rtx-5090", "2 x h100-sxm"]
    assert [r["winner"] for r in rows].count(True) == 1 and rows[1]["label"] == "$0.19: chosen"
    why = " ".join(line["text"] for line in rows[0]["why"])
    assert why.startswith("Not chosen though cheaper: it costs 10% less, but the rules count it 45% dearer (")
    # a dearer plan needs no reason on the chart: its bar says it
    assert all(not r["why"] for r in rows[1:])
    assert v["cost_chart"]["title"] == "Cost per million output tokens of each plan that fits, cheapest first"


def test_charts_plot_only_plans_that_fit_and_no_rule_excluded(capsys, catalog):
    rec = _record(capsys, "llama-70b-fp16-serving")
    out = {c["gpu"] for c in rec["candidates"] if not c["fits"] or c["excluded"]}
    # a 70B model in FP16: A10s and GB200 racks would hold it, but rules exclude them; neither may shrink the winner's bar
    assert {"a10", "gb200-nvl72"} <= {c["gpu"] for c in rec["candidates"] if c["fits"] and c["excluded"]}
    shown = {c["gpu"] for c in plotted(rec)}
    assert shown and not shown & out
    names = {r["gpu"].split(" x ")[1] for r in chart(rec, catalog)["rows"]}
    names |= {r["gpu"].split(" x ")[1] for r in cost_chart(rec, catalog)["rows"]}
    assert names <= shown and "h100-sxm" in names


def test_memory_chart_is_per_card_against_its_capacity_on_an_axis(capsys, catalog):
    rec = _record(capsys, "chat-assistant")
    c = chart(rec, catalog)
    row = next(r for r in c["rows"] if r["winner"])
    # 2 x H100: 49.3 GB on each 80 GB card (the ledger's 98.6 GB over 2 cards), not 98.6 of 160 GB
    assert row["label"] == "49.3 GB of 80 GB per card, 2 cards" and row["gpu"] == "2 x h100-sxm"
    one = next(r for r in c["rows"] if r["gpu"] == "1 x h200-sxm")
    assert one["label"] == "98.6 GB of 141 GB per card, 1 card"
    assert [t["label"] for t in c["ticks"]] == ["0", "50", "100", "150", "200"]
    # the axis is shared: an 80 GB outline is 80/200 of the 400 px axis
    assert float(row["cap_w"]) == pytest.approx(160.0)


def test_tradeoff_chart_numbers_every_point_draws_the_frontier_and_says_which_way_is_better(capsys):
    rec = _record(capsys, "chat-assistant")
    t = tradeoff_chart(rec)
    assert [p["n"] for p in t["points"]] == [str(i) for i in range(1, 13)]
    assert [k["text"].split(".")[0] for k in t["key"]] == [str(i) for i in range(1, 13)]
    assert len({p["colour"] for p in t["points"]}) == 12              # no colour repeats
    assert t["key"][1]["text"] == "2. 2 x h100-sxm: $0.19, 58 tokens/s (chosen)"
    # the frontier: 4 x RTX 5090 ($0.17, 46 tokens/s), 2 x H100 ($0.19, 58) and 4 x A100 80GB ($0.34, a hair
    # faster per user than the H100s since gpt-oss's MXFP4 experts decode as mixed-input kernels on both);
    # every other plan is dearer and slower
    by_xy = {(p["cx"], p["cy"]): p["n"] for p in t["points"]}
    front = [by_xy[tuple(xy.split(","))] for xy in t["frontier"]["points"].split()]
    assert front == ["1", "2", "7"]
    assert t["better"]["text"] == "better: cheaper and faster (up and left)"
    assert "lower is better" in t["xlabel"][0]["text"] and t["ylabel"] == "tokens/s per user, higher is better"
    rec = _record(capsys, "7b-pretraining-deadline")
    t = tradeoff_chart(rec)
    assert t["better"]["text"] == "better: cheaper and sooner (down and left)"
    # 64 x H100 in 65.7 h since plans keep the headroom free (issue 45 item 5): the cheapest, no longer the
    # soonest (80 x H100 in 54 h had been both), so the frontier holds more than plan 1
    assert t["frontier"]["text"] == "Pareto frontier: no other plan is both cheaper and sooner"
    assert len(t["frontier"]["points"].split()) > 1


# --- laid out in headless Chromium ---------------------------------------------------------------------

def _chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    return browser


def _chromium_run(page: Path, tmp_path: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


# Measured on the laid-out page: the boxes of every SVG label (getBoundingClientRect), per chart
LAYOUT = """<script>
window.addEventListener('load', () => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
  const charts = [];
  for (const svg of document.querySelectorAll('svg')) {
    const q = s => Array.from(svg.querySelectorAll(s));
    charts.push({cls: svg.getAttribute('class') || '',
      texts: q('text').map(t => [t.textContent, t.getAttribute('class') || '', box(t)]),
      costBars: q('rect.cost-bar').map(r => [box(r), r.classList.contains('chosen')]),
      cardsBars: q('rect.cards-bar').map(box),
      circles: q('circle').map(box),
      // a leader line's two ends where the page shows them (the SVG's own transform to the page)
      leaders: q('line.leader').map(l => ['x1', 'y1', 'x2', 'y2'].map(k => +l.getAttribute(k))).map(([a, b, c, d]) => {
        const m = svg.getScreenCTM(), p = new DOMPoint(a, b).matrixTransform(m), e = new DOMPoint(c, d).matrixTransform(m);
        return [p.x, p.y, e.x, e.y]; }),
      scale: svg.getBoundingClientRect().width / (svg.viewBox.baseVal.width || svg.getBoundingClientRect().width)});
  }
  document.body.setAttribute('data-layout', JSON.stringify(charts));
});
</script>"""


def _layout(page_html: str, tmp_path: Path, name: str) -> list[dict]:
    page = tmp_path / f"{name}.html"
    page.write_text(page_html.replace("</body>", LAYOUT + "</body>"))
    dom = _chromium_run(page, tmp_path, "--dump-dom", "--virtual-time-budget=5000").stdout
    found = re.search(r'data-layout="([^"]*)"', dom)
    assert found, f"the layout was not measured:\n{dom[:500]}"
    return json.loads(htmllib.unescape(found.group(1)))


def _overlaps(texts: list) -> list[str]:
    out = []
    for i, (a, _, p) in enumerate(texts):
        for b, _, q in texts[i + 1:]:
            if p[0] < q[0] + q[2] - 0.5 and q[0] < p[0] + p[2] - 0.5 and p[1] < q[1] + q[3] - 0.5 and q[1] < p[1] + p[3] - 0.5:
                out.append(f"{a} / {b}")
    return out


def _gap(p: list, q: list) -> float:
    """The distance between two boxes (0 when they touch or overlap)."""
    dx = max(q[0] - (p[0] + p[2]), p[0] - (q[0] + q[2]), 0)
    dy = max(q[1] - (p[1] + p[3]), p[1] - (q[1] + q[3]), 0)
    return (dx * dx + dy * dy) ** 0.5


def _check_tradeoff(c: dict) -> list[str]:
    """Every point has a number beside it (touching its circle, or at the end of a leader line from
    it), each number once, and the key names each number's plan once."""
    problems = []
    labels = [(t, b) for t, cls, b in c["texts"] if cls == "point-label"]
    keys = [t for t, cls, _ in c["texts"] if cls == "key-label" and re.match(r"\d+\. ", t)]
    numbers = [t for t, _ in labels]
    if numbers != [str(i) for i in range(1, len(c["circles"]) + 1)]:
        problems.append(f"point numbers {numbers} for {len(c['circles'])} points")
    if [k.split(".")[0] for k in keys] != numbers:
        problems.append(f"key {keys} does not name each point once")
    s = c["scale"]
    for (n, lb), circle in zip(labels, c["circles"]):
        if _gap(lb, circle) <= 6 * s:
            continue
        centre = (circle[0] + circle[2] / 2, circle[1] + circle[3] / 2)
        led = any(abs(x1 - centre[0]) < 1 and abs(y1 - centre[1]) < 1 and _gap(lb, [x2, y2, 0, 0]) <= 6 * s
                  for x1, y1, x2, y2 in c["leaders"])
        if not led:
            problems.append(f"point {n} is not labelled beside itself")
    return problems


@pytest.mark.parametrize("name", ["chat-assistant", "llama-70b-128-users", "7b-pretraining-deadline", "llama-70b-fp16-serving"])
def test_memo_charts_laid_out_no_overlap_every_point_labelled_cost_bars_sorted(capsys, tmp_path, name):
    _chromium()
    charts = _layout(_html(capsys, name), tmp_path, name)
    kinds = {c["cls"]: c for c in charts}
    assert {"chart cost-chart", "chart tradeoff-chart", "chart memory-chart"} <= set(kinds)
    for c in charts:
        assert len(c["texts"]) >= 5 and _overlaps(c["texts"]) == [], c["cls"]
    bars = kinds["chart cost-chart"]["costBars"]
    widths = [b[0][2] for b in bars]
    assert len(bars) >= 5 and widths == sorted(widths)          # cheapest first, as laid out
    assert [chosen for _, chosen in bars].count(True) == 1
    assert _check_tradeoff(kinds["chart tradeoff-chart"]) == []


def test_the_layout_checks_find_an_overlap_and_an_unlabelled_point(tmp_path):
    """The checks above can fail: two labels on top of each other, a number far from its point, a key
    that skips a number, bars out of order."""
    _chromium()
    page = ('<html><body><svg class="chart tradeoff-chart" width="400" height="200" viewBox="0 0 400 200">'
            '<circle cx="20" cy="20" r="5"/><circle cx="100" cy="100" r="5"/>'
            '<text class="point-label" x="27" y="24">1</text><text class="point-label" x="300" y="180">2</text>'
            '<text class="key-label" x="200" y="20">1. a</text><text class="key-label" x="203" y="22">3. b</text>'
            '<rect class="cost-bar" x="0" y="0" width="50" height="5"/><rect class="cost-bar chosen" x="0" y="10" width="20" height="5"/>'
            '</svg></body></html>')
    [c] = _layout(page, tmp_path, "broken")
    assert _overlaps(c["texts"]) == ["1. a / 3. b"]
    problems = _check_tradeoff(c)
    assert "point 2 is not labelled beside itself" in problems and "point 1 is not labelled beside itself" not in problems
    assert any(p.startswith("key ") for p in problems)
    widths = [b[0][2] for b in c["costBars"]]
    assert widths != sorted(widths)


def test_sweep_page_laid_out_every_row_a_bar_no_overlap(tmp_path, capsys):
    _chromium()
    summary = tmp_path / "sweep.html"
    assert main(["sweep", str(EXAMPLES / "grid.yaml"), "--out", str(tmp_path / "t.csv"), "--summary", str(summary),
                 "--jobs", "1", "--quiet"]) == 0
    [c] = _layout(summary.read_text(), tmp_path, "sweep")
    assert len(c["cardsBars"]) == 24 and all(b[2] > 0 for b in c["cardsBars"])
    assert _overlaps(c["texts"]) == []
    costs = [t for t, cls, _ in c["texts"] if "cost-value" in cls]
    assert len(costs) == 24 and costs.count("no price known") == 12 and all(t.startswith("$") for t in costs if t != "no price known")



def test_a_closest_plan_is_charted_and_called_so(capsys, catalog):
    """No GPU meets the service level on a workstation: the closest plan (excluded by the level it
    misses) is what the memo recommends, so the charts show it, as the closest plan, not 'chosen'."""
    rec = _record(capsys, "workstation-gemma-27b")
    assert rec["recommendation"].get("closest")
    rows = cost_chart(rec, catalog)["rows"]
    assert [(r["gpu"], r["label"]) for r in rows] == [("1 x rtx-pro-6000", "$3.15: closest plan")]
    assert [r["label"] for r in chart(rec, catalog)["rows"]] == ["71.8 GB of 96 GB per card, 1 card"]
