"""The guided dialogue (`gpu-advisor ask`): questions declared in rules/questions.yaml, typed
validation that refuses a bad answer in place, `?` for help, `why` for the rules an answer feeds,
`back`, `quit`, a summary to confirm, then the recommendation and the memo, decision record and
transcript written side by side. Ctrl-C / Ctrl-D save the answers to a resume file.

`Dialogue` is a plain state machine (prompt -> answer -> messages); `run_interactive` drives it with
prompt-toolkit, `replay` with a transcript's recorded answers: both go through the same code.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from advisor import HOME, __version__
from advisor.base import yamlio
from advisor.inputs.catalog import Catalog
from advisor.base.errors import Collector, InputError
from advisor.judgement.knowledge import KnowledgeBase
from advisor.inputs.workload import CONSTRAINTS, FIELDS, MODEL_FIELDS, Spec, check_value

QUESTIONS_FILE = HOME / "rules" / "questions.yaml"
COMMANDS = ("?", "why", "back", "quit")
MAX_ANSWER = 200
RESUME_FILE = ".gpu-advisor-resume.yaml"
YES = {"y", "yes", "true", "1", "on"}
NO = {"n", "no", "false", "0", "off"}


@dataclass(frozen=True)
class Question:
    """One question of the dialogue (rules/questions.yaml)."""

    id: str
    field: str
    prompt: str
    help: str
    spec: Spec
    default: object = None
    optional: bool = False
    when: dict = field(default_factory=dict)
    kind: str = ""
    unit: str = "count"            # how a number may be typed (advisor/units.py)
    synonyms: dict = field(default_factory=dict)   # normalised typed text -> accepted answer
    terms: tuple = ()              # glossary lines shown by `?`
    said: tuple = ()               # (synonym as written in the questions file, its answer), for the help
    unset: str = ""                # what Enter leaves to the advisor ("the planner's choice"), shown as the default


def _spec(field_name: str) -> Spec:
    if field_name.startswith("constraints."):
        return CONSTRAINTS[field_name.split(".", 1)[1]]
    if field_name.startswith("model."):
        return MODEL_FIELDS[field_name.split(".", 1)[1]]
    return FIELDS[field_name]


UNITS = {"B": "billions", "tokens": "tokens", "USD/h": "usd_per_hour", "kW": "kw"}


def _norm(text: str) -> str:
    """What people type, compared without case, spaces, hyphens or underscores ('Fine tune' = 'finetune')."""
    return re.sub(r"[\s_-]+", "", str(text).lower())


def glossary(path: Path = QUESTIONS_FILE) -> dict:
    """The one-line explanations of terms (KV cache, tensor parallelism, ...) in the questions file."""
    return dict((yamlio.load(path) or {}).get("terms") or {})


def load_questions(path: Path = QUESTIONS_FILE) -> list[Question]:
    data = yamlio.load(path)
    col = Collector(str(path))
    out, seen = [], set()
    terms = (data or {}).get("terms") or {}
    for i, q in enumerate((data or {}).get("questions") or []):
        line = yamlio.line_of(data["questions"], i)
        try:
            spec = _spec(q["field"])
        except (KeyError, TypeError):
            col.add(f"question needs an id and a workload field (got {q!r})", line)
            continue
        if q["id"] in seen:
            col.add(f"duplicate question id '{q['id']}'", line)
        seen.add(q["id"])
        unknown = [t for t in q.get("terms") or [] if t not in terms]
        if unknown:
            col.add(f"question '{q['id']}' names unknown terms: {', '.join(unknown)}", line)
        out.append(Question(q["id"], q["field"], q["prompt"], q.get("help", ""), spec,
                            q.get("default", spec.default), bool(q.get("optional")), dict(q.get("when") or {}),
                            q.get("type", spec.kind), q.get("unit") or UNITS.get(spec.unit, "count"),
                            {_norm(k): v for k, v in (q.get("synonyms") or {}).items()},
                            tuple(terms[t] for t in q.get("terms") or [] if t in terms),
                            tuple((str(k), str(v)) for k, v in (q.get("synonyms") or {}).items()),
                            str(q.get("unset") or "")))
    col.raise_if_any()
    return out


@dataclass
class Prompt:
    """A question as asked: its text, default, completions and validation."""

    id: str
    text: str
    completions: list[str]


class Dialogue:
    """The interview as a state machine; `answers` maps workload fields to validated values."""

    def __init__(self, catalog: Catalog, kb: KnowledgeBase, questions: list[Question] | None = None,
                 answers: dict | None = None, out_dir: Path | str = ".", dry_run: bool = False, width: int | None = None):
        self.catalog, self.kb = catalog, kb
        self.width = width or _terminal_width()
        self.resumed_from: Path | None = None        # a resume file to remove once the session completes
        self.questions = questions or load_questions()
        self.answers: dict = dict(answers or {})
        self.preset = set(self.answers)            # from --from: never asked
        self.asked: list[str] = []                 # question ids answered in the dialogue, for `back`
        self.previous: dict = {}                   # answers kept when going back
        self.steps: list[dict] = []
        self.stage = "questions"
        self.out_dir = Path(out_dir)
        self.dry_run = dry_run
        self.decision = None
        self.memo_format = "md"
        self.written: list[Path] = []

    # --- which question -------------------------------------------------------------------------
    def relevant(self, q: Question) -> bool:
        for key, allowed in q.when.items():
            if key == "model_in_catalog":
                in_catalog = self.answers.get("model") not in (None, "other")
                if in_catalog != bool(allowed):
                    return False
                continue
            if self.answers.get(key) not in (allowed if isinstance(allowed, list) else [allowed]):
                return False
        mode = self.answers.get("mode")
        if mode and not q.field.startswith(("constraints.", "model.")) and q.field in FIELDS and mode not in q.spec.modes:
            return False
        return True

    def pending(self) -> Question | None:
        for q in self.questions:
            if q.id in self.asked or q.field in self.preset or not self.relevant(q):
                continue
            return q
        return None

    def default_for(self, q: Question):
        if q.id in self.previous:
            return self.previous[q.id]
        if q.field == "precision":
            return None
        return q.default

    # --- prompts ------------------------------------------------------------------------------------
    def current(self) -> Prompt:
        if self.stage == "questions":
            q = self.pending()
            if q is None:
                self.stage = "confirm"
            else:
                d = self.default_for(q)
                shown = f" [{_show(d)}]" if d is not None else (" [the model's own]" if q.field == "precision" else
                                                                 f" [{q.unset}]" if q.unset else
                                                                 " [none]" if q.optional else "")
                choices = self._choices(q)
                hint = f" ({'/'.join(choices)})" if q.kind in ("enum",) and choices else ""
                return Prompt(q.id, f"{q.prompt}{hint}{shown} ", self._completions(q))
        if self.stage == "confirm":
            return Prompt("confirm", "Recommend with these answers? (yes / edit ID / no) [yes] ",
                          ["yes", "no"] + [f"edit {q.id}" for q in self.questions if q.id in self.asked])
        if self.stage == "format":
            return Prompt("format", "Memo format? (text/md/html) [md] ", ["text", "md", "html"])
        if self.stage == "path":
            return Prompt("path", f"Write the memo to? [{self.default_path()}] ", [])
        if self.stage == "save":
            return Prompt("save", "Save your answers to resume later? (yes/no) [yes] ", ["yes", "no"])
        return Prompt(self.stage, "", [])

    def _choices(self, q: Question) -> list[str]:
        return list(q.spec.choices)

    def _completions(self, q: Question) -> list[str]:
        if q.kind == "model":
            return sorted(self.catalog.models) + ["other"]
        if q.kind == "bool":
            return ["yes", "no"]
        return self._choices(q)

    def summary(self) -> list[str]:
        """The answers by question id (what `edit` takes); answers from --from are marked."""
        lines = ["Your workload (edit ID to change an answer):"]
        for q in self.questions:
            if q.field in self.answers and (q.id in self.asked or q.field in self.preset):
                lines.append(f"  {q.id}: {_show(self.answers[q.field])}" + ("  (from your file)" if q.field in self.preset else ""))
            elif q.unset and q.id in self.asked:
                lines.append(f"  {q.id}: {q.unset}")
        return lines

    # --- answers ------------------------------------------------------------------------------------
    def submit(self, raw: str) -> list[str]:
        """Take one line the user typed; return the messages to show."""
        prompt = self.current()
        text = raw if isinstance(raw, str) else str(raw)
        self.steps.append({"question": prompt.id, "answer": text})
        if len(text) > MAX_ANSWER:
            return [f"  That answer is too long ({len(text)} characters; at most {MAX_ANSWER})."]
        if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text):
            return ["  That answer contains control characters; please type plain text."]
        text = text.strip()
        handler = getattr(self, f"_on_{self.stage}")
        return handler(prompt, text)

    def _on_questions(self, prompt: Prompt, text: str) -> list[str]:
        q = next(x for x in self.questions if x.id == prompt.id)
        low = text.lower()
        if low == "?":
            return self.help(q)
        if low == "why":
            return self.why(q)
        if low == "back":
            return self.back()
        if low == "quit":
            self.stage = "save"
            return ["  Leaving the dialogue."]
        value, error = self.parse(q, text)
        if error:
            return [f"  {error}"]
        if value is None and q.field in self.answers:
            del self.answers[q.field]
        elif value is not None:
            self.answers[q.field] = value
        if q.field == "model" and value != "other":
            for k in [k for k in self.answers if k.startswith("model.")]:
                del self.answers[k]
        self.asked.append(q.id)
        self.previous.pop(q.id, None)
        return []

    def parse(self, q: Question, text: str):
        """(value, None) for an accepted answer, (None, reason) for a refused one."""
        if text == "":
            d = self.default_for(q)
            if d is not None:
                return d, None
            if q.optional:
                return None, None
            return None, f"An answer is needed. {self.accepted(q)}"
        if q.kind == "model":
            if text.lower() == "other":
                return "other", None
            try:
                return self.catalog.model(text).id, None
            except InputError as exc:
                return None, exc.problems[0].message.replace("unknown model", "Unknown model") + " (or 'other')"
        if _norm(text) in q.synonyms:
            text = str(q.synonyms[_norm(text)])
        if q.kind == "bool":
            if text.lower() in YES:
                return True, None
            if text.lower() in NO:
                return False, None
            return None, f"Please answer yes or no. {self.accepted(q)}"
        if q.kind == "enum":
            matches = [c for c in q.spec.choices if c.startswith(text.lower())]
            if text.lower() in q.spec.choices:
                return text.lower(), None
            if len(matches) == 1:
                return matches[0], None
            return None, f"'{text}' is not one of the choices. {self.accepted(q)}"
        value = text
        if q.kind in ("int", "float"):
            from advisor.shell.units import UnitError, parse_number
            try:
                value = parse_number(text, q.unit)
            except UnitError as exc:
                return None, f"{str(exc)[0].upper()}{str(exc)[1:]}. {self.accepted(q)}"
            if q.kind == "int" and isinstance(value, float) and value.is_integer() and abs(value) < 1e18:
                value = int(value)
        col = Collector()
        checked = check_value(q.spec, value, col, q.field, None)
        if col.problems:
            return None, f"{col.problems[0].message[0].upper()}{col.problems[0].message[1:]}. {self.accepted(q)}"
        return checked, None

    def accepted(self, q: Question) -> str:
        s = q.spec
        if q.kind == "model":
            return "Accepted: a catalog model id (Tab completes) or 'other'."
        if q.kind == "bool":
            return "Accepted: yes or no."
        if q.kind == "enum":
            firsts = {}
            for text, target in q.said:             # one synonym per choice, as the file writes it
                firsts.setdefault(target, text)
            also = list(firsts.values())[:5]
            return f"Accepted: {', '.join(s.choices)}" + (f" (also {', '.join(also)} and more)." if also else ".")
        if q.kind in ("int", "float"):
            unit = {"B": " billion"}.get(s.unit, f" {s.unit}" if s.unit else "")
            rng = f"a {'whole ' if q.kind == 'int' else ''}number from {_n(s.min)} to {_n(s.max)}{unit}"
            forms = UNIT_FORMS.get(q.unit, "")
            return f"Accepted: {rng}" + (f" ({forms})" if forms else "") + (", or Enter to skip." if q.optional else ".")
        return "Accepted: a short text."

    def help(self, q: Question) -> list[str]:
        """`?`: the question in plain words, a line on each term it uses, what is accepted (for the model
        question, the catalog with sizes), wrapped at the terminal's width."""
        lines = self._wrap(q.help) + [x for t in q.terms for x in self._wrap(t)]
        if q.kind == "model":
            lines += self.model_list()
        lines += self._wrap(self.accepted(q)) + self._wrap("Commands: ? help, why (rules that use this answer), back, quit.")
        return lines

    def model_list(self) -> list[str]:
        """The catalog's models with their sizes, in columns that fit the terminal."""
        items = []
        for m in self.catalog.models.values():
            total, active = m.num("params_b"), m.num("active_params_b")
            size = _size(total) + (f" ({_size(active)} active)" if active and total and active < total else "")
            items.append(f"{m.id}: {size}")
        col = max(len(x) for x in items) + 3
        per_line = max(1, (self.width - 4) // col)
        return ["    " + "".join(x.ljust(col) for x in items[i:i + per_line]).rstrip() for i in range(0, len(items), per_line)]

    def _wrap(self, text: str, indent: str = "  ") -> list[str]:
        import textwrap
        return textwrap.wrap(text, width=max(30, self.width - 1), initial_indent=indent, subsequent_indent=indent + "  ",
                             break_on_hyphens=False, break_long_words=False) or [indent]

    def why(self, q: Question) -> list[str]:
        """MYCIN's WHY: the rules that test this answer, and what they conclude."""
        name = q.field.split(".", 1)[1] if q.field.startswith(("constraints.", "model.")) else q.field
        facts = {f"workload.{name}"}
        if q.field == "model" or q.field.startswith("model."):
            facts |= {"workload.model", "workload.params_b", "workload.active_params_b", "workload.per_card_need_gb",
                      "workload.weights_gb", "workload.moe"}
        if q.field in ("context_tokens", "concurrency", "precision", "method"):
            facts |= {"workload.per_card_need_gb"}
        rules = [r for r in self.kb.rules if facts & set(r.facts_used) and self._may_apply(r)]
        if not rules:
            return ["  No rule tests this answer directly; the estimator uses it for the memory and speed figures."]
        lines = [f"  {len(rules)} rule(s) use this answer:"]
        for r in rules[:12]:
            effects = ", ".join(_effect_word(k, v) for k, v in r.effects.items())
            lines.append(f"  - {r.title} ({', '.join(r.source)}): {effects}")
        if len(rules) > 12:
            lines.append(f"  ... and {len(rules) - 12} more (gpu-advisor rules list)")
        return lines

    def _may_apply(self, rule) -> bool:
        """False for a rule whose top-level tests on answers already given exclude it (a training rule
        in an inference session)."""
        from advisor.judgement.engine import guard
        from advisor.judgement.knowledge import evaluate
        known = {}
        for k, v in self.answers.items():
            name = k.split(".", 1)[1] if k.startswith(("constraints.", "model.")) else k
            if not k.startswith("model."):
                known[f"w_{name}"] = v
        for leaf in guard(rule.when):
            if leaf.fact.startswith("workload.") and f"w_{leaf.fact[9:]}" in known and not evaluate(leaf, known):
                return False
        return True

    def back(self) -> list[str]:
        if not self.asked:
            return ["  This is the first question."]
        qid = self.asked.pop()
        q = next(x for x in self.questions if x.id == qid)
        if q.field in self.answers:
            self.previous[qid] = self.answers.pop(q.field)
        return [f"  Back to: {q.prompt}"]

    def _on_confirm(self, prompt: Prompt, text: str) -> list[str]:
        low = text.lower()
        if low in ("", "y", "yes"):
            return self.recommend()
        if low in ("n", "no", "quit"):
            self.stage = "save"
            return ["  Not recommending yet."]
        if low.startswith("edit"):
            target = low[4:].strip()
            ids = [q.id for q in self.questions if q.id in self.asked]
            if target not in ids:
                import difflib
                close = difflib.get_close_matches(target, ids, n=1)
                hint = f"Did you mean 'edit {close[0]}'? " if close and target else ""
                return [f"  {hint}Which answer? edit one of: {', '.join(ids)}"]
            q = next(x for x in self.questions if x.id == target)
            self.previous[target] = self.answers.pop(q.field, None)
            self.asked.remove(target)
            self.stage = "questions"
            return []
        if low == "?":
            terms = glossary()
            return (self._wrap("yes: recommend now; no or quit: leave (your answers can be saved); edit ID: change one answer.")
                    + self._wrap("The recommendation names a layout, TP x PP x DP:")
                    + [x for t in ("tensor-parallel", "pipeline-parallel", "data-parallel") if t in terms for x in self._wrap(terms[t])])
        if low == "back":
            return self._reopen_last()
        return ["  Please answer yes, no, or edit ID."]

    def _reopen_last(self) -> list[str]:
        """`back` at the confirmation: the last question again, its answer kept as the default."""
        self.stage = "questions"
        return self.back()

    def workload_data(self) -> dict:
        data: dict = {}
        model: dict = {}
        for k, v in self.answers.items():
            if k.startswith("model."):
                model[k[6:]] = v
            elif k.startswith("constraints."):
                data.setdefault("constraints", {})[k[12:]] = v
            else:
                data[k] = v
        if data.get("model") == "other" or "model" not in data:
            data["model"] = model or data.get("model")
        data.setdefault("name", f"{data['model'] if isinstance(data.get('model'), str) else 'custom-model'}-{data.get('mode')}")
        return data

    def recommend(self) -> list[str]:
        from advisor.judgement import decision
        from advisor.inputs import workload
        from advisor.numbers import estimate as estimator
        from advisor.shell.report import summary_text
        try:
            w = workload.parse(self.workload_data(), self.catalog, "your answers")
        except InputError as exc:
            self.stage = "confirm"
            return [f"  {p}" for p in exc.problems] + ["  Use 'edit ID' to change an answer."]
        self.decision = decision.decide(estimator.estimate(w, self.catalog), self.kb, self.catalog)
        self.stage = "format"
        return [""] + summary_text(self.decision.record, self.catalog).rstrip().splitlines()[:-1] + [""]

    def _on_format(self, prompt: Prompt, text: str) -> list[str]:
        low = text.lower() or "md"
        if low == "?":
            return ["  text: for the terminal (80 columns); md: Markdown, to paste or commit; html: one self-contained "
                    "page with a memory chart. The decision record and the transcript are written beside it."]
        if low == "back":
            self.stage = "confirm"
            return []
        if low == "quit":
            self.stage = "quit"
            return ["  Leaving without writing a memo."]
        if low not in ("text", "md", "html"):
            return ["  Please answer text, md or html (or ?, back, quit)."]
        self.memo_format = low
        self.stage = "path"
        return []

    def default_path(self) -> str:
        ext = {"text": "txt", "md": "md", "html": "html"}[self.memo_format]
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", str(self.workload_data().get("name")))
        return f"{name}-memo.{ext}"

    def _on_path(self, prompt: Prompt, text: str) -> list[str]:
        from advisor.shell import memo
        if text.lower() == "?":
            return ["  A file name for the memo; the decision record (-decision.json) and the transcript "
                    "(-transcript.yaml) go beside it."]
        if text.lower() == "back":
            self.stage = "format"
            return []
        if text.lower() == "quit":
            self.stage = "quit"
            return ["  Leaving without writing a memo."]
        path = Path(text or self.default_path())
        if not path.is_absolute():
            path = self.out_dir / path
        if path.is_dir() or not path.parent.is_dir():
            return [f"  Cannot write there: {path.parent} is not a folder."]
        base = path.with_suffix("") if path.suffix else path
        decision_path = base.parent / (base.name.removesuffix("-memo") + "-decision.json")
        transcript_path = base.parent / (base.name.removesuffix("-memo") + "-transcript.yaml")
        if not self.dry_run:
            from advisor.base.files import refuse_output
            try:                       # all three checked before any is written
                for p in (path, decision_path, transcript_path):
                    refuse_output(p)
            except InputError as exc:
                return [f"  Cannot write there: {exc.problems[0]}"]
        self.stage = "done"
        if self.dry_run:
            return []
        rec = self.decision.record
        memo.write_atomic(path, memo.render(rec, self.catalog, self.memo_format))
        memo.write_atomic(decision_path, json.dumps(rec, indent=2, ensure_ascii=False, default=str) + "\n")
        memo.write_atomic(transcript_path, self.transcript_yaml())
        self.written = [path, decision_path, transcript_path]
        self.finish()
        return [f"  Wrote the memo to {path}", f"  the decision record to {decision_path}",
                f"  and this session's transcript to {transcript_path}"]

    def finish(self) -> None:
        """The session completed: a resume file it was started from (or that an interruption left in
        the output folder) is no longer needed."""
        for p in {self.resumed_from, self.resume_path()} - {None}:
            try:
                Path(p).unlink()
            except FileNotFoundError:
                pass

    def _on_save(self, prompt: Prompt, text: str) -> list[str]:
        low = text.lower()
        if low in ("", "y", "yes"):
            self.stage = "quit"
            return [f"  Answers saved to {self.save_resume()}; continue with: gpu-advisor ask --resume {self.resume_path()}"]
        if low in ("n", "no"):
            self.stage = "quit"
            return ["  Answers not saved."]
        return ["  Please answer yes or no."]

    # --- resume and transcripts ------------------------------------------------------------------
    def resume_path(self) -> Path:
        return self.out_dir / RESUME_FILE

    def save_resume(self, path: Path | None = None) -> Path:
        from advisor.shell import memo
        path = path or self.resume_path()
        if self.dry_run:              # a replay or a dry run writes nothing
            return path
        state = {"resume": 1, "advisor": __version__, "answers": self.answers, "preset": sorted(self.preset),
                 "asked": self.asked, "steps": self.steps}
        # the resume file this session continues is read, and meant to be saved over
        memo.write_atomic(path, yaml.safe_dump(state, sort_keys=False, allow_unicode=True), replaces=self.resumed_from)
        return path

    @classmethod
    def resume(cls, path: str | Path, catalog: Catalog, kb: KnowledgeBase, **kw) -> "Dialogue":
        state = yamlio.load(path)
        if not isinstance(state, dict) or state.get("resume") != 1 or not isinstance(state.get("answers"), dict):
            raise InputError(f"{path}: not a gpu-advisor resume file")
        state = yamlio.plain(state)
        d = cls(catalog, kb, answers=state["answers"], **kw)
        d.resumed_from = Path(path)
        d.preset = set(state.get("preset") or [])
        d.asked = list(state.get("asked") or [])
        d.steps = list(state.get("steps") or [])
        return d

    def transcript(self) -> dict:
        rec = self.decision.record if self.decision else {}
        r = rec.get("recommendation") or {}
        return {
            "transcript": 1, "advisor": __version__,
            "preset": {k: self.answers[k] for k in sorted(self.preset) if k in self.answers},
            "steps": self.steps,
            "workload": self.workload_data(),
            "decision": {"gpu": r.get("gpu"), "count": r.get("count"), "nodes": r.get("nodes"), "tp": r.get("tp"),
                         "pp": r.get("pp"), "dp": r.get("dp"),
                         "decisive_rule": (rec.get("decisive_rule") or {}).get("id"),
                         "rules_sha256": rec.get("versions", {}).get("rules_sha256"),
                         "catalog_sha256": rec.get("versions", {}).get("catalog_sha256")},
        }

    def transcript_yaml(self) -> str:
        return yaml.safe_dump(self.transcript(), sort_keys=False, allow_unicode=True, width=100)


UNIT_FORMS = {"billions": "27, 27B, 1.5T or 600M", "tokens": "e.g. 2000, 2k, 60M, 1.5T", "context": "e.g. 8192, 8k, 128K",
              "count": "e.g. 64 or 1k", "usd_per_hour": "e.g. 20, $20 or 20/h", "kw": "e.g. 5, 5kW or 5000 W",
              "share": "e.g. 0.5, 50%, 12h/day or 8x5"}


def _terminal_width() -> int:
    """The terminal's width for help texts (COLUMNS first, as shutil reads it), at least 40."""
    import shutil
    return max(40, shutil.get_terminal_size().columns)


def _size(b) -> str:
    if not b:
        return "size unknown"
    return f"{b / 1000:.3g}T" if b >= 1000 else f"{b:.3g}B"


def _n(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,g}"


def _show(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _effect_word(kind: str, v) -> str:
    if kind in ("prefer", "avoid"):
        target = ", ".join(str(v[s]) for s in ("gpu", "vendor", "generation", "class") if s in v) or "the candidate"
        return f"{kind} {target} ({v['weight']:g})"
    if kind == "exclude":
        return "exclude"
    if kind == "derive":
        return "derive " + ", ".join(v)
    return kind


# --- drivers ----------------------------------------------------------------------------------------

def run_interactive(dlg: Dialogue, write=None) -> int:
    """Drive the dialogue with prompt-toolkit; Ctrl-C / Ctrl-D save the answers. Returns an exit code."""
    from prompt_toolkit import PromptSession, print_formatted_text
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.history import InMemoryHistory

    say = write or (lambda s: print_formatted_text(s))
    session = PromptSession(history=InMemoryHistory())
    say("gpu-advisor: a few questions about your workload, then a recommendation and a memo.")
    say("Type ? for help, why for the rules an answer feeds, back to revise, quit to leave. Enter accepts [defaults].")
    while dlg.stage not in ("done", "quit"):
        p = dlg.current()
        if dlg.stage == "confirm" and p.id == "confirm" and not getattr(dlg, "_summarised", False):
            for line in dlg.summary():
                say(line)
            dlg._summarised = True
        if dlg.stage != "confirm":
            dlg._summarised = False
        try:
            text = session.prompt(p.text, completer=WordCompleter(p.completions + list(COMMANDS), ignore_case=True,
                                                                  sentence=True) if p.completions else None)
        except (KeyboardInterrupt, EOFError) as exc:
            path = dlg.save_resume()
            say(f"\nInterrupted: your answers are saved to {path}; continue with: gpu-advisor ask --resume {path}")
            return 130 if isinstance(exc, KeyboardInterrupt) else 1
        for line in dlg.submit(text):
            say(line)
    return 0


def run_lines(dlg: Dialogue, lines, write) -> int:
    """Drive the dialogue from piped lines (the test harness); running out of lines acts as Ctrl-D."""
    it = iter(lines)
    while dlg.stage not in ("done", "quit"):
        p = dlg.current()
        if dlg.stage == "confirm":
            for line in dlg.summary():
                write(line)
        write(p.text)
        try:
            text = next(it).rstrip("\n")
        except StopIteration:
            path = dlg.save_resume()
            write(f"Input ended: your answers are saved to {path}; continue with: gpu-advisor ask --resume {path}")
            return 1
        for line in dlg.submit(text):
            write(line)
    return 0


def replay(path: str | Path, catalog: Catalog, kb: KnowledgeBase) -> tuple[bool, list[str]]:
    """Feed a transcript's answers through the dialogue; (same, differences)."""
    t = yamlio.load(path)
    if not isinstance(t, dict) or t.get("transcript") != 1 or not isinstance(t.get("steps"), list):
        raise InputError(f"{path}: not a gpu-advisor transcript")
    dlg = Dialogue(catalog, kb, answers=dict(t.get("preset") or {}), dry_run=True)
    diffs = []
    for i, step in enumerate(t["steps"]):
        if dlg.stage in ("done", "quit"):
            diffs.append(f"step {i + 1}: the dialogue ended before '{step['question']}' was asked")
            break
        asked = dlg.current().id
        if asked != step["question"]:
            diffs.append(f"step {i + 1}: asked '{asked}', the transcript has '{step['question']}'")
            break
        dlg.submit(step["answer"])
    if not diffs and dlg.stage not in ("done", "quit"):
        diffs.append(f"the dialogue did not finish: it now asks '{dlg.current().id}'")
    got = dlg.transcript()["decision"] if dlg.decision else {}
    want = t.get("decision") or {}
    for k in ("gpu", "count", "nodes", "tp", "pp", "dp", "decisive_rule"):
        if got.get(k) != want.get(k):
            diffs.append(f"decision {k}: transcript {want.get(k)!r}, now {got.get(k)!r}")
    return not diffs, diffs


def answers_from(data: dict, catalog: Catalog) -> dict:
    """The dialogue's answers from a workload document (for `ask --from`)."""
    answers = {}
    for k, v in data.items():
        if k == "constraints" and isinstance(v, dict):
            for ck, cv in v.items():
                if cv is not None and ck in CONSTRAINTS and ck != "gpus":
                    answers[f"constraints.{ck}"] = cv
        elif k == "model" and isinstance(v, dict):
            answers["model"] = "other"
            for mk, mv in v.items():
                if mk in MODEL_FIELDS and mk != "name":
                    answers[f"model.{mk}"] = mv
        elif k == "model":
            answers["model"] = catalog.model(str(v)).id
        elif k in FIELDS and v is not None and k != "name":
            answers[k] = v
    return answers
