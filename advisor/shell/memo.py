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
    cache = jinja_bytecode_cache("bounded4") if shipped else None    # bounded4: loops and printed values counted (sandbox budget)
    return sandbox.environment(sandbox.confined_loader(folder), autoescape=html, filters=filters, bytecode_cache=cache,
                               finalize=_markdown_finalize if md and not html else None)


def render(rec: dict, catalog: Catalog, fmt: str = "text", template: str | Path | None = None, colour: bool = False,
           charts: dict[str, str] | None = None, prepared: tuple[dict, dict] | None = None) -> str:
    """The memo in a format, from the shipped template or the user's (both sandboxed). `charts` maps a
    chart's name (CHARTS) to the link of its SVG file beside a Markdown memo; `prepared` is the view and
    its SVGs when the caller has them already (`write`)."""
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
    context, context["svg"] = prepared if prepared else (view(rec, catalog), None)
    context["svg"] = context["svg"] or svgs(context, cached=not template)
    # the Markdown memo links the chart files written beside it (`write`); on stdout there are none
    context["chart_files"] = [{"name": k, "link": _image_link(context[CHARTS[k][1]]["alt"], link)}
                              for k, link in (charts or {}).items() if context["svg"].get(k)]
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


#: the charts drawn as SVG: name -> (shipped template, geometry in the memo's context, file suffix). The
#: HTML memo places each in its page; beside a Markdown memo each is a file of its own: the same text.
CHARTS = {"cost": ("chart-cost.svg.j2", "cost_chart", ".cost.svg"),
          "tradeoff": ("chart-tradeoff.svg.j2", "tradeoff_chart", ".tradeoff.svg"),
          "memory": ("chart-memory.svg.j2", "chart", ".memory.svg")}


def svgs(context: dict, cached: bool = True) -> dict[str, str]:
    """Each chart of a memo's context as SVG text (Markup: the HTML memo places it as it is), "" for a
    chart with nothing to draw; rendered from the shipped templates in the sandbox, XML-escaped.
    `cached`: compiled through the bytecode cache; beside a user's template the cache is not touched
    (no output of a run with a user's template is compiled code loaded back later)."""
    from markupsafe import Markup

    from advisor.base import sandbox
    env = _env(shipped=cached, html=True, colour=False, folder=TEMPLATES)
    out = {}
    for name, (tpl, key, _) in CHARTS.items():
        geometry = context.get(key) or {}
        drawn = geometry.get("rows") or geometry.get("points")
        out[name] = Markup(sandbox.render(env.get_template(tpl), {"chart": geometry}, TEMPLATE_SECONDS).strip()) \
            if drawn else ""
    return out


def chart_paths(memo_path: str | Path) -> dict[str, Path]:
    """Where a Markdown memo's charts go: beside it, named after it (memo.md -> memo.cost.svg, ...)."""
    p = Path(memo_path)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    return {name: p.with_name(stem + suffix) for name, (_, _, suffix) in CHARTS.items()}


def writes_charts(memo_path: str | Path) -> bool:
    """Whether a memo written to this path gets chart files beside it: a file's path does; a device or
    a pipe (/dev/stdout, /dev/null) has no folder to put them in."""
    import os
    import stat
    try:
        return stat.S_ISREG(os.stat(memo_path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def write(rec: dict, catalog: Catalog, fmt: str, out: str | Path, template: str | Path | None = None,
          replaces: str | Path | None = None) -> list[Path]:
    """Write the memo to `out` (atomically) and, for Markdown, its charts as SVG files beside it, which
    it links; every output is checked (an input of the command is refused) before any is written.
    Returns the paths written, the memo first."""
    from advisor.base.files import refuse_output, write_all    # (write_atomic: imported below, for callers of memo too)
    paths = {}
    if fmt == "md" and writes_charts(out):
        paths = chart_paths(out)
        for p in [out, *paths.values()]:
            refuse_output(p, replaces if p == out else None)
    context = view(rec, catalog)
    context_svgs = svgs(context, cached=not template)
    drawn = {k: p for k, p in paths.items() if context_svgs.get(k)}
    text = render(rec, catalog, fmt, template, charts={k: p.name for k, p in drawn.items()},
                  prepared=(context, context_svgs))
    # the memo and its charts are one write: when any fails (a lock held, a full disk) none is replaced
    write_all([(out, text), *((p, '<?xml version="1.0" encoding="UTF-8"?>\n' + str(context_svgs[k]) + "\n") for k, p in drawn.items())],
              replaces)
    return [Path(out), *drawn.values()]


def _image_link(alt: str, file: str):
    """A Markdown image reference to a chart file beside the memo, its alt text the chart's figures."""
    from urllib.parse import quote

    from advisor.shell.wording import MarkdownText, markdown
    return MarkdownText(f"![{markdown(alt)}]({quote(file)})")


from advisor.base.files import write_atomic  # noqa: E402,F401  (re-exported for callers of memo)
