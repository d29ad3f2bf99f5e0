"""The one Jinja sandbox every template renders in: memo templates (shipped or the user's), rule texts
and the sweep summary.

Jinja's sandbox refuses underscored attributes, but a template still reaches any public attribute of
any object it is given, and one object that keeps the environment (a callable global, a loader, a
macro) leads to its bytecode cache, whose buckets unpickle bytes the template wrote (issue 18). So
here, by construction, a template sees plain data only:
- attributes are read on plain data alone (text, numbers, lists, tuples, mappings), and on those
  only a listed set of methods; Jinja's `loop` gives its documented fields, a `namespace` and an
  imported template the values stored in them; nothing on functions, classes, modules, macros,
  `self` or the environment's own objects;
- the globals are two plain functions (`range`, `namespace`); Jinja's `dict`, `cycler`, `joiner`
  and `lipsum` are gone;
- the limits below stop a template from taking the machine.
The environment keeps a bytecode cache only when its caller passes one (the shipped templates).
"""
from __future__ import annotations

import contextvars
import functools
import os
import re
from pathlib import Path

from jinja2 import StrictUndefined, Undefined, nodes
from jinja2.compiler import CodeGenerator
from jinja2.exceptions import SecurityError
from jinja2.environment import Template, TemplateModule
from jinja2.runtime import LoopContext, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import Namespace

from advisor.base.files import note_read

# --- the limits -----------------------------------------------------------------------------------------
# `{{ 9 ** (9 ** 9) }}` (also folded at compile time), `'x' * 300000000`, `num(999999999)`, nested
# `range(100000)` loops, a join, replace or indent that would build more than MAX_TEXT (measured before it
# is built, _check_built): every limit is far above what a memo needs.

MAX_TEXT = 1_000_000          # characters of one string a template builds, and of the whole memo x 10
MAX_ARG = 10_000              # an integer passed to a filter or method (a width, a digit count)
MAX_POWER = 64                # the largest exponent
MAX_POWER_BITS = 65_536       # bits of a power's result (9999 ** 64 ** 64 ...)
MAX_JSON_INDENT = 16          # tojson's indent (repeated per nesting level on every line)
MAX_ITERATIONS = 1_000_000    # items all range() calls of one rendering may yield
TEMPLATE_SECONDS = 10.0       # wall time of one rendering (the main thread only)
_WIDE_FORMAT = re.compile(r"\d{5,}|\*")    # a width or precision of 10,000 or more, or one given by '*'
# The general bound (issue 42: a width taken from an argument, `'{:{}}'.format('a', '2500000000')`, and
# `[s] * 1000000 | map('upper') | list`, 3.5 GB, passed every check of one operation): one budget per
# rendering, whatever the template does. Every call (filter, method, macro, operator) and every loop
# step is a step; every text and list built is charged its characters or items, counted as it is made
# (a filter inside `map` included). The checks of one operation above keep any one step under
# MAX_TEXT (the whole output under MAX_TEXT x 10), so nothing is built far past the budget first.
MAX_STEPS = 2_000_000         # calls, loop steps and printed values of one rendering (a shipped memo: under 4,000)
MAX_BUILT = 20_000_000        # characters and items all steps of one rendering may build (a memo: under 200,000)

# --- what a template may read ---------------------------------------------------------------------------
# Methods that only turn plain data into plain data. Not `encode` (bytes are what the cache exploit fed
# to pickle), not `format_map`, nothing that mutates (the environment is immutable too).
_STR_METHODS = frozenset("""capitalize casefold center count endswith find format index isalnum isalpha isdecimal
    isdigit islower isnumeric isspace istitle isupper join ljust lower lstrip partition removeprefix removesuffix
    replace rfind rindex rjust rpartition rsplit rstrip split splitlines startswith strip swapcase title upper
    zfill""".split())
_METHODS = {dict: frozenset({"get", "items", "keys", "values"}), list: frozenset({"count", "index"}),
            tuple: frozenset({"count", "index"})}
_LOOP_FIELDS = frozenset({"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0",
                          "previtem", "nextitem", "cycle", "changed"})
_PLAIN = (str, int, float, bool, type(None), list, tuple, dict)


def _is_plain(x) -> bool:
    return isinstance(x, _PLAIN) or isinstance(x, (Namespace, LoopContext))


def readable(obj, attr: str, value) -> bool:
    """Whether a template may read `obj.attr` (its value being `value`): see the module's docstring."""
    if not isinstance(attr, str) or attr.startswith("_"):
        return False
    if isinstance(obj, LoopContext):
        return attr in _LOOP_FIELDS
    if isinstance(obj, Namespace):       # `{% set ns.x = ... %}` stores data; reading it back gives data
        return _is_plain(value)
    if isinstance(obj, TemplateModule):  # `{% import 'x.j2' as x %}`: its macros (called, never inspected) and values
        return isinstance(value, Macro) or _is_plain(value)
    if isinstance(obj, str):
        return attr in _STR_METHODS
    if isinstance(obj, tuple) and attr in getattr(type(obj), "_fields", ()):
        return _is_plain(value)          # a named tuple's field (groupby's grouper and list)
    for base, names in _METHODS.items():
        if isinstance(obj, base):
            return attr in names
    return False


def _check_holder(obj, name) -> None:
    """Only plain data (and `loop`, a `namespace`, an imported template) has anything a template may
    read: on anything else even a missing attribute is refused, by name."""
    if not (_is_plain(obj) or isinstance(obj, (TemplateModule, Undefined))):
        kind = "function" if callable(obj) else type(obj).__name__
        _refuse(f"reading {str(name)[:40]!r} of a {kind} is not allowed (templates read plain data only)")


def _refuse(why: str):
    raise SecurityError(why)


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# --- the budget of one rendering ------------------------------------------------------------------------

class _Budget:
    __slots__ = ("steps", "built")

    def __init__(self):
        self.steps, self.built = MAX_STEPS, MAX_BUILT


#: the rendering under way (set by _BudgetTemplate for the outermost template; an included or imported
#: one shares it); a context variable, so no template can reach or reset it
_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("advisor_template_budget", default=None)


def _built_size(value) -> int:
    """What a step built: a text's characters, a collection's items (their own contents were charged
    when they were built)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return len(value)
    return 0


def _charge(value=None, steps: int = 1, built: int | None = None) -> None:
    """Count one step (or `steps`) and what it built against the rendering's budget; refuse past it."""
    budget = _BUDGET.get()
    if budget is None:
        return
    budget.steps -= steps
    if budget.steps < 0:
        _refuse(f"more than {MAX_STEPS:,} calls and loop steps in one rendering")
    budget.built -= _built_size(value) if built is None else built
    if budget.built < 0:
        _refuse(f"more than {MAX_BUILT:,} characters and items built in one rendering")


def _counted(items):
    """A loop's items, each one step (`for` over a list the template built: a million-item list looped
    inside itself had no bound but the memo's wall-time alarm, which rule texts do not have)."""
    for item in items:
        _charge()
        yield item


def _bounded_concat(parts) -> str:
    """Jinja's concat (a block's, a macro's or the whole template's output): counted as it is joined,
    refused past MAX_TEXT x 10 characters before the join builds it."""
    out, n = [], 0
    for part in parts:
        n += len(part)
        if n > MAX_TEXT * 10:
            _refuse(f"the output would be longer than {MAX_TEXT * 10:,} characters")
        out.append(part)
    _charge(steps=0, built=n)
    return "".join(out)


def _finalizing(user=None):
    """Jinja's `finalize` (what `{{ value }}` prints), after the caller's own: a list or mapping printed
    becomes its text here and each printed text is charged, so printing a million-item list in a loop
    (its text built each time, kept in a block's buffer) meets the budget. Text (Markup and the memo's
    Markdown text too) passes as it is; numbers and None are printed by Jinja as before."""
    def finalize(value):
        if user is not None:
            value = user(value)
        if not isinstance(value, (str, int, float, bool, type(None))):
            value = str(value)
        _charge(value)
        return value
    return finalize


def _str_len(x) -> int:
    return len(x) if isinstance(x, str) else len(str(x)) if _is_num(x) or x is None else len(repr(x)[:MAX_TEXT + 1])


def _check_percent(fmt: str, args) -> None:
    """`%` formatting builds at most the format plus, per conversion, the longest argument (a mapping
    lets one key be used 300,000 times): refused before it is built when that passes MAX_TEXT."""
    if not isinstance(fmt, str):
        return
    values = list(args.values()) if isinstance(args, dict) else list(args) if isinstance(args, tuple) else [args]
    longest = max((_str_len(v) for v in values), default=0)
    if len(fmt) + fmt.count("%") * longest > MAX_TEXT:
        _refuse(f"a text longer than {MAX_TEXT:,}")


def _check_spec(spec: str) -> None:
    """A `str.format` field's final spec (nested fields filled in: `'{:{}}'.format('a', '2500000000')`)."""
    if any(int(d) >= MAX_ARG for d in re.findall(r"\d+", spec)):
        _refuse(f"a format width of {MAX_ARG:,} or more")


class _BoundedFormatter(SandboxedFormatter):
    """str.format in the sandbox: each field's width checked once the spec is known, each field's text
    charged as it is made ('{0}{0}{0}...' of a long argument)."""

    def format_field(self, value, format_spec):
        _check_spec(format_spec)
        out = super().format_field(value, format_spec)
        _charge(out)
        return out


class _BoundedEscapeFormatter(_BoundedFormatter, SandboxedEscapeFormatter):
    pass


def _check_binop(op: str, a, b) -> None:
    if op == "**" and _is_num(a) and _is_num(b) and abs(b) > MAX_POWER and abs(a) > 1:
        _refuse(f"a power above {MAX_POWER}")
    if op == "**" and isinstance(a, int) and _is_num(b) and a.bit_length() * abs(b) > MAX_POWER_BITS:
        _refuse(f"a power of more than {MAX_POWER_BITS:,} bits")
    if op == "*":
        seq, n = (a, b) if isinstance(a, (str, list, tuple)) else (b, a)
        if isinstance(seq, (str, list, tuple)) and _is_num(n) and len(seq) * max(n, 0) > MAX_TEXT:
            _refuse(f"a repetition longer than {MAX_TEXT:,}")
        if _is_num(a) and _is_num(b) and isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > 4096:
            _refuse("a product of more than 4,096 bits")
    if op == "+" and isinstance(a, (str, list, tuple)) and isinstance(b, (str, list, tuple)) and len(a) + len(b) > MAX_TEXT:
        _refuse(f"a text longer than {MAX_TEXT:,}")
    if op == "%" and isinstance(a, str) and _WIDE_FORMAT.search(a):
        _refuse("a format width of 10,000 or more")
    if op == "%" and isinstance(a, str):
        _check_percent(a, b)


def _joined_len(items) -> int:
    """Characters of the items as join writes them (str of each), counted up to just past the limit: what
    join would build anyway, so measuring it costs no more than the items themselves."""
    n = 0
    for x in items:
        n += len(x) if isinstance(x, str) else len(str(x))
        if n > MAX_TEXT:
            break
    return n


def _check_built(name: str, value, args, kwargs) -> None:
    """A text filter or method whose result would pass the text limit is refused before it is built
    (review 14: `range(10000)|list|join(',' * 10000)` made 100 million characters, 100 times the limit):
    join (the items and the separators between them), replace (each match grown by the new text's extra
    length) and indent (the width on every line)."""
    def over(n: int) -> None:
        if n > MAX_TEXT:
            _refuse(f"a text longer than {MAX_TEXT:,}")
    if name in ("do_join", "join"):
        items, sep = (value, (list(args) + [kwargs.get("d", "")])[0]) if name == "do_join" else (args[0] if args else (), value)
        if isinstance(items, (list, tuple, range, dict, str)) and isinstance(sep, str):
            over(len(sep) * max(len(items) - 1, 0) + _joined_len(items))
    elif name in ("do_replace", "replace") and isinstance(value, str):
        old, new = (list(args) + [kwargs.get("old"), kwargs.get("new")])[:2]
        if isinstance(old, str) and isinstance(new, str) and len(new) > len(old):
            over(len(value) + (value.count(old) if old else len(value) + 1) * (len(new) - len(old)))
    elif name == "do_indent" and isinstance(value, str):
        width = (list(args) + [kwargs.get("width", 4)])[0]
        w = width if _is_num(width) else len(width) if isinstance(width, str) else 0
        over(len(value) + (value.count("\n") + 1) * int(w))
    elif name == "do_wordwrap" and isinstance(value, str):
        # the wrap string goes in at every break: a million breaks of a million characters
        given = list(args) + [None] * 3
        width = given[0] if given[0] is not None else kwargs.get("width", 79)
        wrap = given[2] if given[2] is not None else kwargs.get("wrapstring")
        if _is_num(width) and width >= 1:
            over(len(value) + (len(value) // int(width) + 1) * max(len(wrap) if isinstance(wrap, str) else 1, 1))
    elif name == "do_sum" and isinstance(kwargs.get("start", args[1] if len(args) > 1 else 0), (list, tuple, str)):
        # summing lists copies each partial sum: the total is what the result holds
        items = value if isinstance(value, (list, tuple)) else ()
        over(sum(_built_size(x) for x in items))
    elif name == "do_format" and isinstance(value, str):
        _check_percent(value, kwargs or tuple(args))
    elif name == "do_tojson":
        indent = (list(args) + [kwargs.get("indent")])[0]
        if _is_num(indent) and indent > MAX_JSON_INDENT:
            _refuse(f"a JSON indent above {MAX_JSON_INDENT} (each level of nesting repeats it on every line)")


def _check_args(args, kwargs) -> None:
    for x in list(args) + list(kwargs.values()):
        if _is_num(x) and abs(x) > MAX_ARG:
            _refuse(f"an argument above {MAX_ARG:,} ({x:g})")
        if isinstance(x, str) and len(x) > MAX_TEXT:
            _refuse(f"an argument longer than {MAX_TEXT:,}")


def _bounded_text(text):
    """The result of a `~` concatenation, refused when too long (doubling it in a loop or a macro)."""
    if len(text) > MAX_TEXT:
        _refuse(f"a text longer than {MAX_TEXT:,}")
    return text


class _BoundedCode(CodeGenerator):
    def visit_Concat(self, node, frame):
        self.write("environment.bounded_text(")
        super().visit_Concat(node, frame)
        self.write(")")


class _BudgetTemplate(Template):
    """A template whose rendering (the outermost one: an included or imported template shares it) has
    one budget of steps and of what it builds (see MAX_STEPS)."""

    def render(self, *args, **kwargs):
        token = _BUDGET.set(_BUDGET.get() or _Budget())
        try:
            return super().render(*args, **kwargs)
        finally:
            _BUDGET.reset(token)

    def generate(self, *args, **kwargs):
        token = _BUDGET.set(_BUDGET.get() or _Budget())
        try:
            yield from super().generate(*args, **kwargs)
        finally:
            _BUDGET.reset(token)


class Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox reading plain data only, with limits on what a template may build."""

    code_generator_class = _BoundedCode
    template_class = _BudgetTemplate
    intercepted_binops = frozenset(["**", "*", "+", "%", "//"])
    bounded_text = staticmethod(_bounded_text)
    counted = staticmethod(_counted)
    concat = staticmethod(_bounded_concat)

    def _parse(self, source, name, filename):
        tree = super()._parse(source, name, filename)
        # every `for` loop iterates `environment.counted(ITERABLE)`: each item a step of the budget
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Call(nodes.EnvironmentAttribute("counted", lineno=loop.lineno), [loop.iter], [], None, None,
                                   lineno=loop.lineno)
        return tree

    def is_safe_attribute(self, obj, attr, value) -> bool:
        return readable(obj, attr, value) and super().is_safe_attribute(obj, attr, value)

    def getattr(self, obj, attribute):
        _check_holder(obj, attribute)
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        _check_holder(obj, argument)
        return super().getitem(obj, argument)

    def unsafe_undefined(self, obj, attribute):
        # Jinja returns an undefined value that fails only when printed; `map(attribute=...)` and `list`
        # would carry it on silently. Refusing at once names the attribute.
        _refuse(f"reading {attribute!r} of a {type(obj).__name__} is not allowed (templates read plain data only)")

    def wrap_str_format(self, value):
        if getattr(value, "__name__", "") != "format":
            return None                 # format_map: refused as any unlisted method is (Jinja would hand it out first)
        f_self = getattr(value, "__self__", None)
        if not isinstance(f_self, str):
            return None
        if _WIDE_FORMAT.search(f_self):
            _refuse("a format width of 10,000 or more")
        from markupsafe import Markup
        formatter = _BoundedEscapeFormatter(self, escape=f_self.escape) if isinstance(f_self, Markup) else _BoundedFormatter(self)

        @functools.wraps(value)
        def format_(*args, **kwargs):
            return type(f_self)(formatter.vformat(f_self, args, kwargs))
        return format_

    def call_binop(self, context, operator, left, right):
        _check_binop(operator, left, right)
        out = super().call_binop(context, operator, left, right)
        _charge(out)
        return out

    def call(__self, __context, __obj, *args, **kwargs):      # noqa: N805 (Jinja's own signature)
        _check_args(args, kwargs)
        name = getattr(__obj, "__name__", "")
        if name in ("join", "replace") and isinstance(getattr(__obj, "__self__", None), str):
            _check_built(name, __obj.__self__, args, kwargs)
        out = super().call(__context, __obj, *args, **kwargs)
        _charge(out)
        return out


def _bounded_filter(f):
    skip = 2 if getattr(f, "jinja_pass_arg", None) is not None else 1    # the environment/context, the value

    @functools.wraps(f)
    def run(*args, **kwargs):
        _check_args(args[skip:], kwargs)
        if len(args) >= skip:
            if f.__name__ in ("do_join", "do_sum") and not isinstance(args[skip - 1], (list, tuple, range, dict, str)):
                # a generator (`map`, `select`) is measured as the list Jinja's join or sum makes of it anyway
                args = (*args[:skip - 1], list(args[skip - 1]), *args[skip:])
            _check_built(f.__name__, args[skip - 1], args[skip:], kwargs)
        if f.__name__ in ("do_format",) and len(args) >= skip and isinstance(args[skip - 1], str) \
                and _WIDE_FORMAT.search(args[skip - 1]):
            _refuse("a format width of 10,000 or more")
        out = f(*args, **kwargs)
        _charge(out)                # a filter inside `map` too: each item a step, each text its characters
        return out
    return run


def _budget_range():
    """range() for one rendering: Python's, with one budget of items for all calls. A closure, so the
    budget is no attribute a template could reset."""
    left = MAX_ITERATIONS

    def range_(*args):
        nonlocal left
        r = range(*args)
        if len(r) > left:
            _refuse(f"loops of more than {MAX_ITERATIONS:,} steps in all")
        left -= len(r)
        return r
    return range_


def _namespace(**values):
    """Jinja's `namespace(...)` (the one way to carry a value out of a loop) without handing out its class."""
    return Namespace(**values)


def environment(loader, *, autoescape: bool = False, finalize=None, filters: dict | None = None,
                bytecode_cache=None, layout: bool = True) -> Sandbox:
    """A fresh sandbox: Jinja's filters and `filters` (all bounded), `range` and `namespace` as the only
    globals. `bytecode_cache` only for templates the advisor ships; `layout` trims block lines (memos)."""
    env = Sandbox(autoescape=autoescape, undefined=StrictUndefined, loader=loader, finalize=_finalizing(finalize),
                  bytecode_cache=bytecode_cache, keep_trailing_newline=layout, trim_blocks=layout, lstrip_blocks=layout)
    env.filters.update(filters or {})
    for k, f in list(env.filters.items()):
        env.filters[k] = _bounded_filter(f)
    env.globals.clear()
    env.globals.update(range=_budget_range(), namespace=_namespace)
    return env


def confined_loader(folder: Path):
    """Templates from `folder` only: `{% include %}`, `{% import %}` and `{% extends %}` cannot leave
    it, through '..' (Jinja refuses that) or through a link that points outside."""
    from jinja2 import FileSystemLoader, TemplateNotFound
    root = os.path.realpath(folder)

    class Confined(FileSystemLoader):
        def get_source(self, environment, template):
            source, filename, uptodate = super().get_source(environment, template)
            note_read(filename, "template")          # an included template is an input too
            real = os.path.realpath(filename)
            if os.path.commonpath([root, real]) != root:
                raise TemplateNotFound(f"{template} (outside the template's folder)")
            return source, filename, uptodate

    return Confined(str(folder))


class TooSlow(SecurityError):
    pass


def render(template, context: dict, seconds: float = TEMPLATE_SECONDS) -> str:
    """Render with the output and wall-time limits (the alarm only where signals can be used)."""
    import signal
    import threading
    use_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if use_alarm:
        def stop(signum, frame):
            raise TooSlow(f"rendering took longer than {seconds:g} s")
        old = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        out, size = [], 0
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > MAX_TEXT * 10:
                raise SecurityError(f"the memo would be longer than {MAX_TEXT * 10:,} characters")
            out.append(chunk)
        return "".join(out)
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
