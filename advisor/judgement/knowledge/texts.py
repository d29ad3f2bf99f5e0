"""Rule texts (`because`, a warning's or note's text, an exclusion's reason): rendered with the bound
facts in the sandbox, through a plain-text fast path that needs no Jinja for the texts nearly every
rule has, and read for the fields they use (what lint checks against the rule's tests).
"""
from __future__ import annotations

import hashlib
import re


class _RuleTexts:
    """A Jinja loader whose templates are rule texts named by their digest."""

    def __init__(self):
        self.texts: dict[str, str] = {}

    def add(self, text: str) -> str:
        name = hashlib.sha256(text.encode()).hexdigest()
        self.texts[name] = text
        return name

    def get_source(self, environment, name):
        return self.texts[name], None, lambda: True


def template_env():
    """The sandbox every rule text renders in (the memo's: plain data only, bounded): the bound facts and
    three formatting filters. Rule files come from users (--rules), so nothing compiled from a rule text
    is cached on disk; only texts the plain-text path cannot render (to report an error) reach Jinja."""
    from jinja2 import BaseLoader
    from advisor.base import sandbox
    loader = type("RuleTextLoader", (_RuleTexts, BaseLoader), {})()
    return sandbox.environment(loader, filters=FILTERS, layout=False)


FILTERS = {"gb": lambda x: f"{x:,.1f} GB", "usd": lambda x: f"${x:,.2f}", "num": lambda x, nd=1: f"{x:,.{nd}f}"}
_FIELD = re.compile(r"\{\{\s*(workload|candidate|derived)\.([a-z][a-z0-9_]*)\s*"
                    r"(?:\|\s*(gb|usd|num)\s*(?:\(\s*([0-9])\s*\))?\s*)?\}\}")


class _PlainText:
    """A rule text made only of literal text and `{{ scope.fact }}` / `{{ scope.fact | filter }}`
    fields, which is what nearly every rule text is. It renders exactly as the sandboxed Jinja
    template would (a test compares the two on every shipped text) without importing Jinja, which
    costs more than the rest of a decision. Anything else, and any field that would not render
    plainly (absent, or named like a dict method), goes to Jinja itself."""

    def __init__(self, text: str, parts: list):
        self.text, self.parts = text, parts

    @staticmethod
    def parse(text: str) -> _PlainText | None:
        if "\r" in text:               # Jinja rewrites line ends; leave that to it
            return None
        parts, pos = [], 0
        for m in _FIELD.finditer(text):
            parts.append(text[pos:m.start()])
            parts.append((m[1], m[2], m[3], int(m[4]) if m[4] else None))
            pos = m.end()
        tail = text[pos:]
        parts.append(tail[:-1] if tail.endswith("\n") else tail)     # as Jinja, one final newline dropped
        literal = "".join(p for p in parts if isinstance(p, str))
        if any(mark in literal for mark in ("{{", "{%", "{#", "}}", "%}", "#}")):
            return None
        if any(isinstance(p, str) and p.endswith("{") for p in parts[:-1]):
            return None                  # '{{{ x }}}': Jinja reads '{{' and then a '{' of its own
        if any(isinstance(p, tuple) and hasattr(dict, p[1]) for p in parts):
            return None
        return _PlainText(text, parts)

    def render(self, **ctx) -> str:
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            scope, name, flt, arg = p
            values = ctx.get(scope)
            if not isinstance(values, dict) or name not in values:
                return _jinja_template(self.text).render(**ctx)     # Jinja reports the undefined name
            v = values[name]
            if flt is None:
                out.append(str(v))
                continue
            try:
                out.append(FILTERS[flt](v) if arg is None else FILTERS[flt](v, arg))
            except (TypeError, ValueError):
                return _jinja_template(self.text).render(**ctx)     # Jinja reports the failure
        return "".join(out)


_ENV = []
_COMPILED: dict[str, object] = {}


def _jinja():
    if not _ENV:            # Jinja is imported only when a rule text is checked or rendered
        _ENV.append(template_env())
    return _ENV[0]


def compiled_template(text: str):
    """A rule text ready to render: plain text with fields, or else compiled once per process in the sandbox."""
    t = _COMPILED.get(text)
    if t is None:
        t = _COMPILED[text] = _PlainText.parse(text) or _jinja_template(text)
    return t


def _jinja_template(text: str):
    env = _jinja()
    return env.get_template(env.loader.add(text))


class _TemplateSyntax(Exception):
    pass


_REFS: dict[str, tuple[set, set]] = {}


def _template_refs(text: str) -> tuple[set, set]:
    """The (scope, field) pairs a rule text reads, e.g. ('candidate', 'count'), and the top-level
    names it reads; _TemplateSyntax for a text Jinja cannot parse. Plain texts are read without Jinja."""
    if text not in _REFS:
        plain = _PlainText.parse(text)
        if plain is None:
            _REFS[text] = _jinja_refs(text)
        else:
            fields = [part for part in plain.parts if isinstance(part, tuple)]
            _REFS[text] = {(scope, name) for scope, name, _, _ in fields}, {scope for scope, _, _, _ in fields}
    return _REFS[text]


def _jinja_refs(text: str) -> tuple[set, set]:
    from jinja2 import meta, nodes
    from jinja2.exceptions import TemplateSyntaxError
    try:
        ast = _jinja().parse(text)
    except TemplateSyntaxError as exc:
        raise _TemplateSyntax(exc.message) from None
    refs = set()
    for n in ast.find_all(nodes.Getattr):
        if isinstance(n.node, nodes.Name):
            refs.add((n.node.name, n.attr))
    return refs, meta.find_undeclared_variables(ast)
