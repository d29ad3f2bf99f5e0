"""`gpu-advisor explain DECISION.json [--why-not GPU]`: read a saved decision record and say which
rule drove it, how each candidate scored, what excluded each, and what kept a GPU out."""
from __future__ import annotations

import json
from pathlib import Path

from advisor.inputs.parallel import from_record, notation
from advisor.base.text import clean_all
from advisor.base.errors import InputError, Problem


MAX_BYTES = 64 * 1024 * 1024      # a decision record is some 100 kB; /dev/zero is refused, not read forever
RECORD_FIELDS = {"recommendation": (dict, type(None)), "decisive_rule": (dict, type(None)), "candidates": list,
                 "versions": dict, "trace": list, "estimate": dict, "inputs": dict}
# what a record names that explain loads or walks, at most (issue 42: the rules folder named 800 times was
# loaded 800 times, 53 s and 1.5 GB, for 83,200 lines of duplicate ids): far above any record the advisor writes
# (one entry per --rules folder, one candidate per catalog GPU, a few hundred trace steps)
MAX_LISTED = {("versions", "rule_dirs"): 64, ("versions", "price_files"): 8, ("versions", "rule_files"): 10_000,
              ("candidates",): 10_000, ("alternatives",): 10_000, ("trace",): 1_000_000}


def read_record(path: str) -> dict:
    from advisor.base.files import read_input
    raw = read_input(path, MAX_BYTES, "decision record")
    try:
        rec = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise InputError(Problem("not a decision record: JSON nested too deeply", path)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"not a decision record (JSON): {str(exc)[:120]}", path)) from None
    if not isinstance(rec, dict) or "candidates" not in rec or "versions" not in rec:
        raise InputError(Problem("not a decision record: no 'candidates' or 'versions'", path))
    for k, types in RECORD_FIELDS.items():
        if not isinstance(rec.get(k), types):
            raise InputError(Problem(f"not a complete decision record: '{k}' is missing or of the wrong kind", path))
    for keys, most in MAX_LISTED.items():
        listed = rec.get(keys[0]) if len(keys) == 1 else (rec.get(keys[0]) or {}).get(keys[1])
        if isinstance(listed, list) and len(listed) > most:
            raise InputError(Problem(f"not a decision record the advisor wrote: '{'.'.join(keys)}' lists {len(listed):,} "
                                     f"entries (at most {most:,})", path))
    return _printable(rec)


def _printable(obj):
    """The record with every string (keys too) made one line of visible text: a hand-edited record is
    printed as text and never acts on the terminal."""
    return clean_all(obj, keys=True)


def _under(path, roots) -> bool:
    """Whether `path` is one of `roots` or inside one, links resolved (a link under the project that
    points at / is not under it)."""
    try:
        real = Path(path).resolve()
        return any(real == Path(r).resolve() or real.is_relative_to(Path(r).resolve()) for r in roots)
    except (OSError, ValueError, RuntimeError):      # a name too long, a loop of links: not under anything
        return False


def _same(a, b) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError, RuntimeError):
        return False


def _recorded_rules(v: dict, rules: list[str] | None, notes: list[str], unloaded: list[str]):
    """recorded_inputs' rule folders: (the rules to load, same_files) from the record's versions `v` and
    the --rules given, a note for each recorded folder added to `notes` (loaded) or `unloaded`; apart
    because the folders are checked by another test (refused, gone, changed) than the price file."""
    from advisor import HOME
    from advisor.judgement import knowledge
    same_files = False
    if not isinstance(v.get("rule_dirs"), list):
        return rules, same_files
    kept, same_files = [], bool(v["rule_dirs"])
    from_env = {Path(p).resolve() for p in knowledge.rule_dirs(shipped=False)}     # GPU_ADVISOR_RULES adds these itself
    for d in v["rule_dirs"]:
        if not (isinstance(d, dict) and isinstance(d.get("path"), str)):
            unloaded.append("Refused: a rule_dirs entry of the record that is not {path: FOLDER}; nothing loaded for it")
            same_files = False
            continue
        path = d["path"]
        if Path(path).resolve() in from_env:
            continue
        from_env.add(Path(path).resolve())        # a folder named twice is loaded once
        if rules:
            if not any(_same(path, r) for r in rules):
                unloaded.append(f"Note: the decision used the rules in {path}, which are not loaded: they are not "
                             "among the --rules given")
                same_files = False
                continue
        elif not _under(path, [HOME]):
            unloaded.append(f"Refused: the record names the rule folder {path}, outside the project: not loaded "
                         f"(pass --rules {path} to use it)")
            same_files = False
            continue
        if not Path(path).exists():
            unloaded.append(f"Note: the decision used the rules in {path}, which are gone")
            same_files = False
            continue
        given = d.get("given") if isinstance(d.get("given"), str) else None
        # as typed when that still names the same folder (the digest of the rules counts their names)
        use = given if given and Path(given).exists() and _same(given, path) else path
        try:
            same = knowledge.folder_digest(Path(use)) == d.get("sha256")
        except (OSError, InputError):
            same = False
        same_files = same_files and same
        notes.append(f"Rules: the shipped ones and {path}, as the decision recorded" + ("" if same else " (changed since)"))
        if not rules:
            kept.append(use)
    if not rules:
        rules = kept or None
    return rules, same_files


def _recorded_prices(v: dict, prices: str | None, notes: list[str], unloaded: list[str]) -> str | None:
    """recorded_inputs' price file: the one to load, from the record's versions `v` and the --prices
    given, a note for the recorded file added to `notes` (loaded) or `unloaded`; apart from the rule
    folders because a file is compared by its own digest."""
    import hashlib

    from advisor import HOME
    if not isinstance(v.get("price_files"), list):
        return prices
    for p in v["price_files"][:1]:
        if not (isinstance(p, dict) and isinstance(p.get("path"), str)):
            unloaded.append("Refused: a price_files entry of the record that is not {path: FILE}; nothing loaded for it")
            continue
        path = p["path"]
        if prices:
            if not _same(prices, path):
                continue                  # the user's own prices: the catalog digest tells what differs
        elif not _under(path, [HOME]):
            unloaded.append(f"Refused: the record names the price file {path}, outside the project: not loaded "
                         f"(pass --prices {path} to use it)")
            continue
        if not Path(path).is_file():
            unloaded.append(f"Note: the decision used the prices in {path}, which are gone")
            continue
        given = p.get("given") if isinstance(p.get("given"), str) else None
        if not prices:
            prices = given if given and Path(given).is_file() and _same(given, path) else path
        try:
            from advisor.base import yamlio
            from advisor.base.files import read_input
            same = hashlib.sha256(read_input(path, yamlio.MAX_BYTES, "price file")).hexdigest() == p.get("sha256")
        except InputError:
            same = False
        notes.append(f"Prices: the catalog's and {path}, as the decision recorded" + ("" if same else " (changed since)"))
    return prices


def recorded_inputs(rec: dict, rules: list[str] | None, prices: str | None):
    """The rule folders and price file `explain` loads: (rules, prices, notes, same_files, unloaded), `unloaded`
    the notes of recorded ones not loaded here (refused, not among those given, or gone).
    A record can be edited by hand, so the folders and file it names are loaded only where the user
    allows them again: without --rules (--prices) the recorded ones under the project (advisor.HOME)
    are re-used, so that explain does not report changes that did not happen; any other is not
    loaded, and a note says so. With --rules (--prices) the user's are used, and the notes say which
    recorded ones they are. `same_files`: every recorded rule folder is loaded, by the path recorded,
    with the files it had."""
    v = rec.get("versions") or {}
    notes, unloaded = [], []
    rules, same_files = _recorded_rules(v, rules, notes, unloaded)
    prices = _recorded_prices(v, prices, notes, unloaded)
    return rules, prices, notes, same_files, unloaded


def _offline_refusal(rec: dict, cat) -> str | None:
    """Deciding the recorded inputs again reads no file and fetches nothing the record names: a
    model given by name must be a catalog id (a config.json path or an hf: id is refused, unread)."""
    model = (rec.get("inputs") or {}).get("model")
    if not isinstance(model, str):
        return None
    try:
        cat.model(model)
    except InputError:
        return (f"  Refused: the recorded workload names the model '{model}', which is not in the catalog: explain reads "
                "no config.json and fetches nothing from the Hugging Face Hub, so the decision is not decided again")
    return None


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a decision record holds")


def explain_record(rec: dict, gid: str | None, setup, unloaded: list[str] | None = None) -> str:
    """The explanation of a saved record (and of why GPU `gid` was not chosen), with the rules and
    catalog in force now (`setup`, judgement.advise); `unloaded`: the notes of recorded rule folders or
    price files not loaded here (recorded_inputs), when no comparison with today's would be true."""
    out = []
    r = rec.get("recommendation")
    if r:
        out.append(f"Recommended: {r['count']} x {r['gpu']} ({r['nodes']} node(s), {notation(from_record(r))})")
    else:
        out.append("No recommendation: every candidate was excluded.")
    d = rec.get("decisive_rule")
    if d:
        where = f"{d['file']}:{d['line']}" if d.get("line") else d["file"]
        out.append(f"Decisive rule: {d['id']} ({', '.join(d['source'])}; {where})\n  {d['because']}")
    # the answer first: why not the GPU asked about, before the table of every candidate (issue 42)
    if gid:
        out = _why_not(rec, gid, setup) + plan_table_lines(rec, gid) + [""] + out
    out += _candidates(rec)
    replacing = {}
    for t in rec["trace"]:
        if isinstance(t, dict) and t.get("replaces"):
            replacing.setdefault(t["rule"], f"  {t['rule']} ({t['file']}:{t['line']}) replaces the shipped rule "
                                            f"{t['replaces']} ({t.get('overrides')})")
    if replacing:
        out.append("Your rules that replace shipped ones:")
        out += replacing.values()
    out += _drift(rec, setup, unloaded)
    return "\n".join(out) + "\n"


def _candidates(rec: dict) -> list[str]:
    """Every candidate with its score, premium and effective cost, the terms defined first as the
    ranking computes them (judgement.ranking: premium = score / 100; effective cost = cost / (1 +
    premium), or cost x (1 + |premium|) when the premium is negative; the lowest ranks first)."""
    from advisor.judgement.ranking import PREMIUM_PER_WEIGHT, factor
    from advisor.numbers.objective import UNIT_LABELS
    r = rec.get("recommendation") or {}
    unit = r.get("unit")
    said = UNIT_LABELS.get(unit, "per unit of work") if isinstance(unit, str) else "per unit of work"
    head = ("Candidates, best first. Score: the sum of the weights of the rules that fired for it (prefer +, avoid -). "
            f"Premium: the score as a share of the cost ({PREMIUM_PER_WEIGHT * 100:g}% per point): what the rules say the "
            "plan is worth paying more for (+) or must be cheaper by (-). Effective cost: the cost "
            f"{said} divided by (1 + premium), or multiplied by (1 + |premium|) when the premium is negative; the "
            "lowest effective cost ranks first"
            + (f" (this workload's objective is {r['objective']}, which sets the order)" if r.get("objective") not in (None, "cost") else "")
            + ".")
    import textwrap
    out = textwrap.wrap(head, 100, subsequent_indent="  ")
    for c in rec["candidates"]:
        if c["excluded"]:
            reasons = "; ".join(f"{e['rule']}: {e['reason']}" for e in c["excluded_by"])
            out.append(f"  {c['gpu']:<16} excluded by {reasons}")
            continue
        contrib = ", ".join(f"{x['rule']} {x['weight']:+g}" for x in c["contributions"]) or "no rule"
        money = ""
        if c.get("effective_cost") is not None:
            p = c.get("premium") or 0
            cost = c["effective_cost"] * factor(p)       # the cost the ranking started from (a saved record keeps no other)
            # the arithmetic as the ranking does it: the cost, the premium's factor, the effective cost
            shown = (f"${cost:,.3g} {'/' if p >= 0 else 'x'} {factor(p) if p >= 0 else 1 / factor(p):.2f} = "
                     if isinstance(cost, (int, float)) and not isinstance(cost, bool) else "")
            money = f", premium {p:+.0%}, effective cost {shown or ''}${c['effective_cost']:,.4g}"
        elif "effective_cost" in c:
            money = ", no price, so ranked after every priced plan"
        out.append(f"  {c['gpu']:<16} rank {c['rank']}, score {c['score']:g}{money} ({contrib})")
    return out


def _why_not(rec: dict, gid: str, setup) -> list[str]:
    c = next((x for x in rec["candidates"] if x["gpu"] == gid), None)
    if c is None:
        return [f"Why not {gid}: it was not among the candidates of this decision."]
    est = next((x for x in rec["estimate"]["candidates"] if x["gpu"] == gid), {})
    lines = [f"Why not {gid}:"]
    if not est.get("fits"):
        lines.append(f"  it does not fit: {est.get('reason')}")
    from advisor.judgement.record import rule_of
    for e in c["excluded_by"]:
        e = rule_of(rec, e)                   # a compact record says a rule's source, file and line once
        trace = [t for t in rec["trace"] if t["rule"] == e["rule"] and t.get("gpu") in (gid, None)]
        lines.append(f"  excluded by {e['rule']} ({', '.join(e['source'])}; {e['file']}:{e['line']}): {e['reason']}")
        for t in trace[:1]:
            lines.append("    because " + ", ".join(f"{k} = {v}" for k, v in t["bindings"].items()))
    if not c["excluded"]:
        win = rec["recommendation"]
        lines.append(f"  ranked {c['rank']} with score {c['score']:g}; the recommendation scored "
                     f"{next(x['score'] for x in rec['candidates'] if x['gpu'] == win['gpu']):g}")
        for x in c["contributions"]:
            lines.append(f"    {x['rule']}: {x['weight']:+g}")
        # what the ranking itself said against it (its cost against the winner's, after the premiums)
        reason = next((a.get("reason") for a in rec.get("alternatives") or [] if a["gpu"] == gid), None)
        if reason:
            lines.append(f"  it lost because {reason}")
        lines.append("  figures: " + _figures(est, setup.catalog.gpus.get(gid)))
        lines += _unfired(rec, c, setup)
    return lines


def _figures(est: dict, gpu) -> str:
    """The plan's cards, what each needs of its memory (the card's capacity from the catalog), its price:
    "1 card, needs 98.6 GB of its 141 GB, $2.45/h"; "2 cards, each needs 49.3 GB of its 80 GB"."""
    n, need, cap = est.get("count"), est.get("per_card_gb") or 0, getattr(gpu, "memory_gb", None)
    of = f" of its {cap:,.0f} GB" if isinstance(cap, (int, float)) and not isinstance(cap, bool) else ""
    cards = f"1 card, needs {need:,.1f} GB{of}" if n == 1 else f"{n} cards, each needs {need:,.1f} GB{of}"
    cost = f"${est['usd_per_hour']:,.2f}/h" if est.get("usd_per_hour") is not None else "price unknown"
    return f"{cards}, {cost}"


def _unfired(rec: dict, c: dict, setup) -> list[str]:
    kb, cat = setup.kb, setup.catalog
    """The rules that raised the recommendation's score but did not fire for candidate `c` (its entry
    in the record), each with the tests that failed on its facts. The facts are rebuilt by deciding the recorded inputs again,
    which gives the same facts only with the same rules and catalog: otherwise it says so."""
    from advisor.judgement import knowledge
    from advisor.judgement.advise import advise
    from advisor.judgement.engine import normalise_fact, runner
    win, gid = rec["recommendation"]["gpu"], c["gpu"]
    if win == gid:
        return []
    winner = next(x for x in rec["candidates"] if x["gpu"] == win)
    mine = {x["rule"] for x in c["contributions"]}
    helped = [x["rule"] for x in winner["contributions"] if x["weight"] > 0 and x["rule"] not in mine]
    if not helped:
        return []
    if kb.digest != rec["versions"].get("rules_sha256") or cat.digest != rec["versions"].get("catalog_sha256"):
        return [f"  rules that raised {win} and not {gid}: {', '.join(helped)} (the rules or catalog changed since, "
                "so their tests are not re-checked)"]
    refused = _offline_refusal(rec, cat)
    if refused:
        return [refused]
    try:
        d = advise(rec["inputs"], setup, "decision inputs")
    except InputError as exc:
        return [f"  The recorded inputs no longer validate: {exc.problems[0]}"]
    fact = normalise_fact(next(f for f in d.facts if f["id"] == gid))      # as the engine saw it
    conds = runner(kb).conds
    lines = [f"  rules that raised {win} and did not fire for {gid}:"]
    for rid in dict.fromkeys(helped):
        rule = kb.rule(rid)
        why = knowledge.failing(conds[rid], fact) or ["its selector names other GPUs"]
        lines.append(f"    {rid} ({rule.where}): " + "; ".join(why))
    return lines


def _drift(rec: dict, setup, unloaded: list[str] | None = None) -> list[str]:
    if unloaded:
        # the digests differ because the decision's own rules or prices are not loaded, not because anything
        # changed (review 14: "the rules changed" and a list of changes right after `recommend --rules`)
        return ["Not compared with today's rules and catalog: the decision used files that are not loaded here."] + unloaded
    kb, cat = setup.kb, setup.catalog
    v = rec["versions"]
    out = []
    if kb.digest != v.get("rules_sha256"):
        out.append("Warning: the rules changed since this decision (rules_sha256 differs).")
    if cat.digest != v.get("catalog_sha256"):
        out.append("Warning: the catalog changed since this decision (catalog_sha256 differs).")
    if not out:
        return ["The current rules and catalog are those that produced this decision."]
    out += _replay(rec, setup)
    return out


def _replay(rec: dict, setup) -> list[str]:
    """Decide the recorded inputs again with today's rules and catalog and say what changed."""
    from advisor.judgement.advise import advise
    refused = _offline_refusal(rec, setup.catalog)
    if refused:
        return ["What would change today:", refused]
    try:
        now = advise(rec["inputs"], setup, "decision inputs").record
    except InputError as exc:
        return [f"  The recorded inputs no longer validate: {exc.problems[0]}"]
    old, new = rec.get("recommendation") or {}, now.get("recommendation") or {}
    lines = []
    for k in ("gpu", "count", "nodes", "tp", "pp", "dp", "usd_per_hour"):
        if old.get(k) != new.get(k):
            lines.append(f"  {k}: {old.get(k)} -> {new.get(k)}")
    od, nd = (rec.get("decisive_rule") or {}).get("id"), (now.get("decisive_rule") or {}).get("id")
    if od != nd:
        lines.append(f"  decisive rule: {od} -> {nd}")
    then = {t["rule"] for t in rec.get("trace", [])}
    later = {t["rule"] for t in now.get("trace", [])}
    if later - then:
        lines.append(f"  rules that would now fire: {', '.join(sorted(later - then))}")
    if then - later:
        lines.append(f"  rules that would no longer fire: {', '.join(sorted(then - later))}")
    return ["What would change today:"] + (lines or ["  nothing in the recommendation"])


# --- the plan table: the layouts the planner weighed for a GPU (numbers.plantable) ------------------

def plan_table_lines(rec: dict, gid: str) -> list[str]:
    """The layouts tried for `gid` (the winner and the next ranks: record.table_gpus), the chosen one
    first, each other with why the planner kept the chosen one; nothing for another GPU."""
    from advisor.judgement.record import table_gpus
    table = (rec.get("plan_tables") or {}).get(gid)
    if not table or gid not in table_gpus(rec):
        return []
    rows = table["rows"]
    lines = [f"  layouts weighed for {gid} ({len(rows)} of {table['tried']:,} tried, the chosen first):"]
    for r in rows:
        figures = [f"{r['count']} cards"]
        if r.get("usd_per_hour") is not None:
            figures.append(f"${r['usd_per_hour']:,.2f}/h")
        if r.get("unit_cost") is not None:
            figures.append(f"${r['unit_cost']:,.2f} {table['unit']}" if r["unit_cost"] >= 10 else f"${r['unit_cost']:.3g} {table['unit']}")
        for hours in ("training_hours", "job_hours"):          # a training run's, or a batch job's
            if r.get(hours) is not None:
                figures.append(f"{r[hours]:,.1f} h")
        if r.get("tpot_ms") is not None:
            figures.append(f"{r['tpot_ms']:,.1f} ms per output token")
        head = "chosen" if "lost" not in r else "tried"
        lines.append(f"    {head}: {layout_words(r)}: {', '.join(figures)}" + (f"\n      lost: {r['lost']}" if "lost" in r else ""))
    return lines


def layout_words(row: dict) -> str:
    """A plan-table row's layout in the notation the memo uses (TP x PP x DP, EP, attention DP, pools)."""
    words = notation(from_record({"layout": row["layout"]}))
    if row.get("zero_stage"):
        words += f", ZeRO {row['zero_stage']}"
    if row.get("activation_checkpointing"):
        words += ", activations recomputed"
    return words

