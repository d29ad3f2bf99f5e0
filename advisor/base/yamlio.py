"""Safe YAML loading that remembers line numbers, refuses Python tags and defuses alias bombs.

Numbers are read as YAML 1.2 reads them, not as PyYAML's YAML 1.1: `010` is ten (not octal 8) and
`1:30` is the text "1:30" (not 90 in base 60), which a number field then refuses with its file:line.

Documents are composed with the C parser when PyYAML has it (fast) and built here from the node
tree, so every mapping knows the line of each key and no constructor beyond plain data ever runs.
"""
from __future__ import annotations

import re
from pathlib import Path

from advisor.base import cache, files
from advisor.base.errors import InputError, Problem

CACHE_VERSION = b"yamlio-3"

#: Nodes a document may expand to, aliases counted at every use: stops "billion laughs".
MAX_NODES = 200_000
#: Nesting a document may have (mappings and lists inside each other): far beyond any real file.
MAX_DEPTH = 64
#: Bytes a file may have (the largest shipped file is ~40 kB): /dev/zero is refused, not read forever.
MAX_BYTES = 16 * 1024 * 1024

_SAFE_TAGS = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq",
}


_LEADING_ZERO = re.compile(r"^[-+]?0[0-9_]+$")


class YMap(dict):
    """A mapping that remembers its own line and the line of each key (1-based)."""

    line: int = 0

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.key_lines: dict = {}

    def line_of(self, key) -> int:
        return self.key_lines.get(key, self.line)


class YList(list):
    """A sequence that remembers its own line and each item's line."""

    line: int = 0

    def __init__(self, *a):
        super().__init__(*a)
        self.item_lines: list[int] = []

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if index < len(self.item_lines) else self.line


def kind(value) -> str:
    """What a YAML value is, in the words of an error message (not the loader's class names)."""
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "number"
    return "empty document" if value is None else "text" if isinstance(value, str) else type(value).__name__


def line_of(container, key, default: int | None = None) -> int | None:
    """The line of `key` in a YMap/YList, or `default` for plain containers."""
    if isinstance(container, (YMap, YList)):
        return container.line_of(key)
    return default


class _Builder:
    def __init__(self, name: str):
        import yaml
        self.yaml = yaml
        self.name = name
        self.budget = MAX_NODES
        self.scalars = yaml.constructor.SafeConstructor()

    def fail(self, node, message: str):
        raise InputError(Problem(message, self.name, node.start_mark.line + 1))

    def build(self, node, depth=0):
        if node.tag not in _SAFE_TAGS:
            self.fail(node, f"tag '{node.tag}' is not allowed (only plain data is read)")
        self.budget -= 1
        if self.budget < 0:
            self.fail(node, f"document expands to more than {MAX_NODES} nodes (YAML alias bomb?)")
        if depth > MAX_DEPTH:
            self.fail(node, f"nested more than {MAX_DEPTH} levels deep")
        depth += 1
        yaml = self.yaml
        if isinstance(node, yaml.MappingNode):
            out = YMap()
            out.line = node.start_mark.line + 1
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    self.fail(key_node, "YAML merge keys ('<<') are not supported")
                key = self.build(key_node, depth)
                if isinstance(key, (dict, list)):
                    self.fail(key_node, "a mapping key must be a plain value")
                if key in out:
                    self.fail(key_node, f"duplicate key '{key}'")
                out[key] = self.build(value_node, depth)
                out.key_lines[key] = key_node.start_mark.line + 1
            return out
        if isinstance(node, yaml.SequenceNode):
            out = YList()
            out.line = node.start_mark.line + 1
            for item in node.value:
                out.append(self.build(item, depth))
                out.item_lines.append(item.start_mark.line + 1)
            return out
        if node.tag == "tag:yaml.org,2002:str":
            return node.value                  # what SafeConstructor makes of a plain string, without its overhead
        if node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float") and ":" in node.value:
            return node.value                  # YAML 1.1's base 60 (1:30 = 90) is text in YAML 1.2: no one writes 90 so
        if node.tag == "tag:yaml.org,2002:int" and _LEADING_ZERO.match(node.value):
            return int(node.value.replace("_", ""), 10)   # YAML 1.2: 010 is ten, not YAML 1.1's octal 8
        try:
            value = self.scalars.construct_object(node)
        except (ValueError, OverflowError, yaml.constructor.ConstructorError) as exc:
            if node.tag == "tag:yaml.org,2002:int" and len(node.value) > 100:
                self.fail(node, f"a number of {len(node.value)} digits is not a value this tool reads")
            self.fail(node, f"cannot read {node.value[:40]!r} as {node.tag.rsplit(':', 1)[-1]}: {str(exc).splitlines()[0][:80]}")
        if isinstance(value, int) and not isinstance(value, bool) and len(node.value) > 100:
            self.fail(node, f"a number of {len(node.value)} digits is not a value this tool reads")
        if node.tag == "tag:yaml.org,2002:timestamp":
            value = value.isoformat()
        return value


def loads(text: str, name: str = "<string>"):
    """Parse one YAML document into YMap/YList/scalars; raise InputError with file:line."""
    import yaml
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # the C parser when PyYAML has libyaml
    try:
        node = yaml.compose(text, Loader=loader)
    except RecursionError:
        raise InputError(Problem(f"nested more than {MAX_DEPTH} levels deep", name)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise InputError(Problem(f"YAML syntax error: {exc.problem or exc.context}", name, line)) from None
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1 if isinstance(exc.position, int) else None
        raise InputError(Problem(f"character {exc.character!r} is not allowed in YAML (a control character?)", name, line)) from None
    except yaml.YAMLError as exc:
        raise InputError(Problem(f"YAML error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", name)) from None
    if node is None:
        return None
    return _Builder(name).build(node)


def load(path: str | Path):
    """Read and parse a YAML file; every failure is an InputError naming the file (a FIFO, device or
    directory is refused before it is opened, see files.read_input)."""
    name = str(path)
    raw = files.read_input(path, MAX_BYTES, "YAML file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(Problem("not UTF-8 text", name, line)) from None
    if cache.cache_dir() is None:
        return loads(text, name)
    key = cache.key(CACHE_VERSION, cache.source_of("base.yamlio"), raw)      # what was parsed, and by which parser
    cached = _cache_get(key)
    if cached is not None:
        return cached
    data = loads(text, name)
    _cache_put(key, data)
    return data


# --- a content-addressed cache of parsed documents (JSON, with line numbers) -------------------------
# Parsing YAML is most of a cold start; a document whose bytes were parsed before is read back from
# JSON instead. The key is the content's sha256, so an edited file is simply a new entry.


def _encode(obj):
    """Scalars as themselves; a mapping as {"m": [key, value, line, ...], "l": line}; a sequence as
    {"s": [items], "il": [item lines], "l": line}. Only containers are JSON objects."""
    if isinstance(obj, YMap):
        flat = []
        for k, v in obj.items():
            flat += (k, _encode(v), obj.key_lines.get(k, obj.line))
        return {"m": flat, "l": obj.line}
    if isinstance(obj, YList):
        return {"s": [_encode(v) for v in obj], "il": obj.item_lines, "l": obj.line}
    if isinstance(obj, (dict, list)):
        raise TypeError("unexpected plain container")
    return obj


def _decode(obj):
    if type(obj) is not dict:
        return obj
    line = obj["l"]
    if "m" in obj:
        flat = obj["m"]
        out = YMap()
        out.line = line
        lines = out.key_lines
        for i in range(0, len(flat), 3):
            k, v = flat[i], flat[i + 1]
            out[k] = _decode(v) if type(v) is dict else v
            lines[k] = flat[i + 2]
        return out
    out = YList([_decode(v) if type(v) is dict else v for v in obj["s"]])
    out.line = line
    out.item_lines = obj["il"]
    return out


def _cache_get(key: str):
    data = cache.read_json("yaml", key)
    try:
        return None if data is None else _decode(data)
    except (KeyError, TypeError, IndexError):
        return None


def _cache_put(key: str, data) -> None:
    try:
        encoded = _encode(data)
    except TypeError:
        return
    cache.write_json("yaml", key, encoded)


def plain(obj):
    """The same data as plain dicts and lists (for dumping what was loaded with line numbers)."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj
