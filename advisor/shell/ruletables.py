"""`gpu-advisor facts` and `rules list` as tables laid out by rich (advisor/shell/tables.py), where
rulestools.facts_text and list_text padded f-string columns by hand: on a terminal the long meaning
and title columns wrap within its width; to a pipe each fact or rule stays one line."""
from __future__ import annotations


def facts_table() -> str:
    from advisor.judgement.facts import FACTS
    from advisor.shell import tables
    t = tables.table(("fact", "left"), ("type", "left"), ("unit", "left"), ("meaning", "left"))
    for name, f in FACTS.items():
        t.add_row(name, f.type, f.unit, f.meaning)
    t.add_row("derived.NAME", "any", "", "a fact a rule derives (then: derive)")
    return tables.render(t)


def rules_table(kb, group: str | None) -> str:
    from advisor.shell import tables
    t = tables.table(("rule", "left"), ("group", "left"), ("sources", "left"), ("where", "left"), ("title", "left"))
    for r in kb.rules:
        if group and r.group != group:
            continue
        replaced = f" (replaces shipped {r.replaces}, {r.overrides})" if r.replaces else ""
        t.add_row(r.id, r.group, ", ".join(r.source), r.where, r.title + replaced)
    return tables.render(t)
