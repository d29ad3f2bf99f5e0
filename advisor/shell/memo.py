"""Recommendation memos: the decision record rendered by Jinja templates, in a format.

The strings the templates receive come from advisor/shell/memoview.py (`view`: all arithmetic and
formatting; the wording of citations, money and values in advisor/shell/wording.py); templates under
templates/ only place them: a one-screen summary first, then the evidence, the sources, and the audit
last (docs/memo.md). This module finds the template, builds its sandboxed environment and renders.
Every template, shipped or the user's, renders in advisor/base/sandbox.py (plain data only; only
shipped ones cached); every value is one line of visible text, escaped as it is printed in Markdown,
autoescaped in HTML. A broken or hostile template is an InputError (exit 2).
"""
from __future__ import annotations

from pathlib import Path

from jinja2 import TemplateError
from jinja2.exceptions import SecurityError

from advisor import HOME
from advisor.inputs.catalog import Catalog
from advisor.base.errors import InputError, Problem
from advisor.base.files import note_read
from advisor.base.sandbox import MAX_TEXT, TEMPLATE_SECONDS    # the time limit is read from here at each rendering
from advisor.shell.memoview import view
from advisor.shell.wording import markdown_code as _markdown_code, markdown_finalize as _markdown_finalize

TEMPLATES = HOME / "templates"
FORMATS = {"text": "memo.txt.j2", "md": "memo.md.j2", "html": "memo.html.j2"}


def _wrap(text: str, width: int = 78, indent: str = "  ", hang: str | None = None) -> str:
    """Wrap to the terminal memo's width (80 columns); `hang` indents the continuation lines."""
    import textwrap
    return "\n".join(textwrap.wrap(str(text), width=width, initial_indent=indent,
                                   subsequent_indent=hang if hang is not None else indent + "  ",
                                   break_on_hyphens=False)) or indent


def _env(shipped: bool, html: bool, colour: bool, folder: Path, md: bool = False):
    from advisor.base import sandbox
    from advisor.base.cache import jinja_bytecode_cache
    on = {"bold": "\033[1m", "dim": "\033[2m", "green": "\033[32m", "yellow": "\033[33m", "red": "\033[31m"}
    filters = {name: ((lambda code: (lambda s: f"{code}{s}\033[0m"))(code) if colour else (lambda s: s)) for name, code in on.items()}
    filters["wrap"] = _wrap
    filters["code"] = _markdown_code
    # compiled templates are code loaded back with marshal: only the shipped ones are cached; a user's
    # template is compiled afresh every time (its environment has no cache to reach or to fill)
    cache = jinja_bytecode_cache("bounded2") if shipped else None
    return sandbox.environment(sandbox.confined_loader(folder), autoescape=html, filters=filters, bytecode_cache=cache,
                               finalize=_markdown_finalize if md and not html else None)


def render(rec: dict, catalog: Catalog, fmt: str = "text", template: str | Path | None = None, colour: bool = False) -> str:
    """The memo in a format, from the shipped template or the user's (both sandboxed)."""
    from advisor.base import sandbox
    path = Path(template) if template else TEMPLATES / FORMATS[fmt]
    name = str(template) if template else f"templates/{FORMATS[fmt]}"
    note_read(path, "template")
    if not path.is_file():
        raise InputError(Problem("no such template", name))
    try:
        if path.stat().st_size > MAX_TEXT:
            raise InputError(Problem(f"a template of more than {MAX_TEXT:,} bytes is not one this tool reads", name))
        path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(f"cannot read template: {exc}", name)) from None
    env = _env(shipped=not template, html=(fmt == "html" or path.suffix in (".html", ".htm") or path.name.endswith(".html.j2")),
               colour=colour, folder=path.resolve().parent, md=(fmt == "md" or path.name.endswith((".md", ".md.j2"))))
    context = view(rec, catalog)
    try:
        return sandbox.render(env.get_template(path.name), context, TEMPLATE_SECONDS)
    except SecurityError as exc:
        raise InputError(Problem(f"template refused by the sandbox: {exc}", name)) from None
    except (MemoryError, RecursionError, OverflowError) as exc:
        raise InputError(Problem(f"template refused: {type(exc).__name__} ({str(exc)[:80] or 'too large'})", name)) from None
    except TemplateError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(Problem(f"template error: {exc.message if getattr(exc, 'message', None) else exc}", name, line)) from None
    except Exception as exc:
        if not template:              # a shipped template failing is a bug: let it show
            raise
        raise InputError(Problem(f"template failed: {type(exc).__name__}: {str(exc)[:120]}", name)) from None


from advisor.base.files import write_atomic  # noqa: E402,F401  (re-exported for callers of memo)
