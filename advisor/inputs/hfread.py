"""A model's config.json read safely (advisor.inputs.hfconfig derives the figures from it): a regular
file of bounded size, or one fetched from the Hugging Face Hub (`hf:ORG/NAME`, the optional extra
`gpu-advisor[hub]`); JSON with bounded nesting, numbers and texts, duplicate keys refused. Every
problem is a ConfigError naming the file (and the field, the line), never a traceback.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import stat
from pathlib import Path

from advisor.base.text import clean
from advisor.base.errors import InputError, Problem
from advisor.base.files import read_input
from advisor.base.net import unresolvable

#: Bytes a config.json may have: real ones are a few kB.
MAX_BYTES = 4 * 2**20
#: Nesting a config may have (real ones: 3 levels).
MAX_DEPTH = 32
#: Largest magnitude of any number in a config: far beyond any real figure.
MAX_NUMBER = 10**18
#: Longest text (a name, a dtype) kept from a config.
MAX_TEXT = 200


class ConfigError(InputError):
    pass


class MissingConfig(ConfigError):
    """No config.json where the workload points: the workload's own line is the place to say so."""


def _fail(msg: str, where: str, field: str | None = None, line: int | None = None):
    raise ConfigError(Problem(msg, where, line, field))


def plain_text(text: str, limit: int = MAX_TEXT) -> str:
    """A name from a config, or a path, as plain text: control characters (terminal escapes, line
    breaks, bidirectional overrides) dropped, at most `limit` characters."""
    return clean(text, limit)


# --- reading: a regular file of bounded size; JSON with bounded nesting and numbers --------------------

class _Bad:
    """A JSON number the advisor refuses, left in its place so that the refusal can name the field."""

    def __init__(self, why: str):
        self.why = why


def _number(text: str, value):
    if isinstance(value, float) and not math.isfinite(value) or abs(value) > MAX_NUMBER:
        shown = f"a {len(text.lstrip('-'))}-digit number" if len(text) > 30 else text
        return _Bad(f"must be a number of at most 10^18 (got {shown})")
    return value


def _parse_int(text: str):
    if len(text.lstrip("-")) > 19:       # before int(): 5,000 digits cost time and exceed Python's own limit
        return _number(text, MAX_NUMBER + 1)
    return _number(text, int(text))


class _Duplicate(Exception):
    pass


def _pairs(pairs):
    out = {}
    for k, v in pairs:
        if k in out:       # json keeps the last one silently; a reader of the file may believe the first
            raise _Duplicate(k)
        out[k] = v
    return out


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


def _too_deep(text: str) -> bool:
    """Nesting beyond MAX_DEPTH, counted before parsing: json recurses, and 100,000 levels would be a
    RecursionError."""
    depth = 0
    for m in _BRACKETS.finditer(_STRINGS.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        if depth > MAX_DEPTH:
            return True
    return False


def _first_bad(node, path: str = ""):
    if isinstance(node, _Bad):
        return path, node.why
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        found = _first_bad(v, f"{path}[{k}]" if isinstance(k, int) else f"{path}.{k}" if path else k)
        if found:
            return found
    return None


def loads(text: str, where: str = "config.json") -> dict:
    """The JSON object of a config.json's text. NaN, Infinity, numbers beyond 10^18, duplicate keys and
    nesting beyond MAX_DEPTH are refused, naming the field."""
    if _too_deep(text):
        _fail(f"nested more than {MAX_DEPTH} levels deep: not a config.json", where, "model")
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=lambda t: _number(t, float(t)),
                          parse_constant=lambda t: _Bad(f"must be a finite number (got {t})"), object_pairs_hook=_pairs)
    except _Duplicate as exc:
        _fail("appears twice in one object", where, plain_text(str(exc.args[0])))
    except json.JSONDecodeError as exc:
        _fail(f"JSON syntax error: {exc.msg} (column {exc.colno})", where, "model", exc.lineno)
    except RecursionError:          # (the count above keeps this from happening)
        _fail(f"nested more than {MAX_DEPTH} levels deep: not a config.json", where, "model")
    if not isinstance(data, dict):
        _fail("config.json must be a JSON object", where, "model")
    bad = _first_bad(data)
    if bad:
        _fail(bad[1], where, plain_text(bad[0]))
    return data


def _stat(p: Path, where: str) -> os.stat_result:
    try:
        return os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        raise MissingConfig(Problem(f"no such config.json: {where} (give a file or a folder holding config.json)", where, None, "model"))
    except (OSError, ValueError) as exc:
        _fail(f"cannot read: {getattr(exc, 'strerror', None) or exc}", where, "model")


def read(path: str | Path, base: Path | None = None) -> tuple[dict, str]:
    """The parsed config.json at `path` (a file, or a folder holding config.json). A relative path is
    taken from `base` (the workload's folder) when given, never from the current directory first."""
    p = Path(path).expanduser()
    if not p.is_absolute() and base is not None:
        p = base / p
    st = _stat(p, plain_text(str(p), 1000))
    if stat.S_ISDIR(st.st_mode):
        p = p / "config.json"
        st = _stat(p, plain_text(str(p), 1000))
    where = plain_text(str(p), 1000)
    raw = read_input(p, MAX_BYTES, "config.json")   # regular files only, bounded, recorded as an input
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        _fail("not UTF-8 text", where, "model", raw[: exc.start].count(b"\n") + 1)
    return loads(text, where), where


#: A Hub repository id, as huggingface_hub's validate_repo_id has it: ORG/NAME, each part letters,
#: digits, '-', '_' and '.', at most 96 characters, not starting or ending with '-' or '.'.
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"{_PART}/{_PART}")


def check_repo_id(repo: str) -> str:
    """`repo` when it is a Hub repository id ORG/NAME; else a one-line refusal, before anything is fetched."""
    if not _REPO_ID.fullmatch(repo) or "--" in repo or ".." in repo or repo.endswith(".git"):
        _fail("expected hf:ORG/NAME, each part at most 96 letters, digits, '-', '_' or '.', not starting or "
              "ending with '-' or '.', without '--' or '..'", f"hf:{plain_text(repo)}", "model")
    return repo


def fetch(repo: str) -> Path:
    """config.json of a Hugging Face repository (cached by huggingface_hub under HF_HOME). Needs the
    optional extra `gpu-advisor[hub]`; offline, gated, missing repositories are clear one-line errors."""
    where = f"hf:{check_repo_id(repo)}"

    def no_config(msg: str):
        # reported at the workload's `model:` line (workload.parse places a MissingConfig there)
        raise MissingConfig(Problem(f"{where}: {msg}", where, None, "model"))
    try:
        import huggingface_hub
        from huggingface_hub import constants, errors
    except ImportError:
        no_config("reading a model from the Hugging Face Hub needs the optional extra: pip install 'gpu-advisor[hub]'")
    # a host that does not resolve (no network, no proxy) is answered from the local cache at once: the
    # library retries a failed connection five times over about 23 s, each retry a warning on stderr
    # (review 11); its own warnings stay out of the one-line error either way
    down = unresolvable(constants.ENDPOINT)
    quiet = logging.getLogger("huggingface_hub")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        return Path(huggingface_hub.hf_hub_download(repo_id=repo, filename="config.json", local_files_only=bool(down)))
    except errors.LocalEntryNotFoundError as exc:
        if down:
            no_config(f"cannot reach the Hugging Face Hub ({down}) and its config.json is not in the local cache")
        no_config("cannot reach the Hugging Face Hub and its config.json is not in the local cache "
                  f"(offline? {type(exc).__name__})")
    except errors.GatedRepoError:           # (a RepositoryNotFoundError: caught first)
        no_config("the repository is gated: accept its licence on the Hub and log in (huggingface-cli login or HF_TOKEN)")
    except errors.RepositoryNotFoundError:
        no_config("no such repository on the Hub (or it is private: log in)")
    except errors.OfflineModeIsEnabled as exc:   # (an EntryNotFoundError)
        no_config("cannot reach the Hugging Face Hub and its config.json is not in the local cache "
                  f"(offline? {type(exc).__name__})")
    except errors.EntryNotFoundError:
        no_config("the repository has no config.json")
    except errors.HfHubHTTPError as exc:
        no_config(f"the Hub refused the request ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
    except OSError as exc:                    # no network at all
        no_config(f"cannot reach the Hugging Face Hub ({type(exc).__name__})")
    finally:
        quiet.setLevel(level)
