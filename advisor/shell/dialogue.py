"""The guided dialogue (`gpu-advisor ask`): questions declared in rules/questions.yaml, typed
validation that refuses a bad answer in place, `?` for help, `why` for the rules an answer feeds,
`back`, `quit`, a summary to confirm, then the recommendation and the memo, decision record and
transcript written side by side. Ctrl-C / Ctrl-D save the answers to a resume file.

`Dialogue` is the question flow, a plain state machine (prompt -> answer -> messages); its session
with the terminal and the files is advisor/shell/session.py (`run_interactive` drives it with
prompt-toolkit, `run_lines` with piped lines), and advisor/shell/transcripts.py records it and
replays a transcript's answers through it (`replay`): all go through the same `submit`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from advisor.inputs import diffusionmodels, kinds as kind_specs
from advisor.base import yamlio
from advisor.base.errors import InputError
from advisor.inputs.catalog import Catalog
from advisor.inputs.workload import CONSTRAINTS, FIELDS, MODEL_FIELDS, is_config
from advisor.judgement.advise import Setup
from advisor.shell import dialoguehelp, session, transcripts
from advisor.shell.memoworkload import label
# re-exported: the dialogue's callers (cli.py, the tests) reach the questions and the session through it
from advisor.shell.questions import COMMANDS, QUESTIONS_FILE, SERVICE_LEVEL, Question, accepted, glossary, load_questions, read_answer  # noqa: F401
from advisor.shell.session import RESUME_FILE, run_interactive, run_lines  # noqa: F401

MAX_ANSWER = 200


@dataclass
class Prompt:
    """A question as asked: its text, default, completions and validation."""

    id: str
    text: str
    completions: list[str]


class Dialogue:
    """The interview as a state machine; `answers` maps workload fields to validated values."""

    def __init__(self, setup: Setup, questions: list[Question] | None = None,
                 answers: dict | None = None, out_dir: Path | str = ".", dry_run: bool = False, width: int | None = None):
        self.setup = setup                         # what the recommendation is decided with (judgement.advise)
        self.catalog, self.kb = setup.catalog, setup.kb
        self.width = width or session.terminal_width()
        self.resumed_from: Path | None = None        # a resume file to remove once the session completes
        self.questions = questions or load_questions()
        self.answers: dict = dict(answers or {})
        self.preset = set(self.answers)            # from --from: never asked
        self.asked: list[str] = []                 # question ids answered in the dialogue, for `back`
        self.previous: dict = {}                   # answers kept when going back
        self.typed: dict = {}                      # question id -> the text typed for its answer, shown beside it
        self.steps: list[dict] = []
        self.stage = "questions"
        self.out_dir = Path(out_dir)
        self.dry_run = dry_run
        self.decision = None
        self.memo_format = "md"
        self.written: list[Path] = []
        self.chart_files: list[Path] = []          # a Markdown memo's SVG charts, written beside it
        self.replacing: Path | None = None         # a memo path whose files exist, awaiting a yes to replace them

    # --- which question -------------------------------------------------------------------------
    def relevant(self, q: Question) -> bool:
        for key, allowed in q.when.items():
            if key == "model_in_catalog":
                in_catalog = self.answers.get("model") not in (None, "other")
                if in_catalog != bool(allowed):
                    return False
                continue
            if allowed == "given":          # asked only when the earlier question was answered (not skipped)
                if self.answers.get(key) is None:
                    return False
                continue
            if self.answers.get(key) not in (allowed if isinstance(allowed, list) else [allowed]):
                return False
        mode = self.answers.get("mode")
        if mode and not q.field.startswith(("constraints.", "model.")) and q.field in FIELDS and mode not in q.spec.modes:
            return False
        # a field of some kinds only (prompt_tokens for the token kinds, resolution for image and video
        # generation) is asked once the answers so far name a kind it applies to
        # (the volume question is the one that makes a batch serving workload a batch job: asked as one)
        kind = self._kind(volume=q.field == "volume")
        if kind and q.field in FIELDS and FIELDS[q.field].kinds and kind not in FIELDS[q.field].kinds:
            return False
        return True

    def _kind(self, volume: bool = False) -> str | None:
        """The workload's kind as the answers so far read (advisor.inputs.kinds), None before the mode;
        `volume`: read as if a volume were given."""
        a = self.answers
        latency = a.get("latency") if isinstance(a.get("latency"), str) else None
        return kind_specs.kind_of(a.get("mode"), a.get("task"), a.get("method"), latency, volume or a.get("volume"))

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
                shown = f" [{dialoguehelp.show(d)}]" if d is not None else (" [the model's own]" if q.field == "precision" else
                                                                 f" [{q.unset}]" if q.unset else
                                                                 " [none]" if q.optional else "")
                choices = self._choices(q)
                hint = f" ({'/'.join(choices)})" if q.kind in ("enum",) and choices else ""
                return Prompt(q.id, f"{q.prompt}{hint}{shown} ", self._completions(q))
        if self.stage == "confirm":
            return Prompt("confirm", "Recommend with these answers? (yes / edit N, the number of a line / no) [yes] ",
                          ["yes", "no"] + [f"edit {q.id}" for q in self.editable()])
        if self.stage == "format":
            return Prompt("format", "Memo format? (text/md/html) [md] ", ["text", "md", "html"])
        if self.stage == "path":
            return Prompt("path", f"Write the memo to? [{self.default_path()}] ", [])
        if self.stage == "save":
            return Prompt("save", "Save your answers to resume later? (yes/no) [yes] ", ["yes", "no"])
        if self.stage == "overwrite":
            return Prompt("overwrite", "Replace them? (yes/no) [no] ", ["yes", "no"])
        return Prompt(self.stage, "", [])

    def _choices(self, q: Question) -> list[str]:
        return list(q.spec.choices)

    def _completions(self, q: Question) -> list[str]:
        if q.kind == "model":
            return sorted(self.catalog.models) + sorted(diffusionmodels.shipped()) + ["other"]
        if q.kind == "bool":
            return ["yes", "no"]
        return self._choices(q)

    def editable(self) -> list[Question]:
        """The questions answered in the dialogue, in the order the confirmation numbers them (`edit N`)."""
        return [q for q in self.questions if q.id in self.asked]

    def summary(self) -> list[str]:
        """The answers in words, each asked one numbered (what `edit N` takes) with what was typed where it
        reads differently (8x5 beside "24% of the month"); answers from --from are marked."""
        lines = ["Your workload (edit N to change the answer on line N):"]
        numbers = {q.id: i for i, q in enumerate(self.editable(), 1)}
        for q in self.questions:
            if q.id in numbers or q.field in self.preset:
                if q.field in self.answers:
                    shown = dialoguehelp.show(self.answers[q.field], q.unit)
                else:                # asked and left to Enter: what the advisor takes instead
                    shown = q.unset or ("the model's own" if q.field == "precision" else "none")
                typed = self.typed.get(q.id)
                # a number read from how it was typed (8x5, 1k, 2 days) shows the typing beside the figure
                said = f"  (typed: {typed})" if typed and q.kind in ("int", "float") and dialoguehelp.plainly(typed) != dialoguehelp.plainly(shown) else ""
                at = f"{numbers[q.id]:>3}. " if q.id in numbers else "     "
                lines.append(f"{at}{dialoguehelp.question_label(q)}: {shown}{said}" + ("  (from your file)" if q.field in self.preset else ""))
        asked = {q.field for q in self.questions}
        for k in sorted(self.preset - asked):          # the file's fields no question asks, kept as they are
            if k in self.answers and not k.startswith("model."):
                lines.append(f"     {label(k.split('.', 1)[-1], self.answers.get('mode'))}: {dialoguehelp.show(self.answers[k])}  (from your file)")
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
            return self._wrap(error)
        if value is None and q.field in self.answers:
            del self.answers[q.field]
        elif value is not None:
            self.answers[q.field] = value
        if q.field == "model" and value != "other":
            for k in [k for k in self.answers if k.startswith("model.")]:
                del self.answers[k]
        self.asked.append(q.id)
        self.previous.pop(q.id, None)
        if text:
            self.typed[q.id] = text
        else:
            self.typed.pop(q.id, None)
        return []

    def parse(self, q: Question, text: str):
        """(value, None) for an accepted answer, (None, reason) for a refused one."""
        return read_answer(q, text, self.catalog, self.default_for(q))

    def accepted(self, q: Question) -> str:
        return accepted(q)

    def help(self, q: Question) -> list[str]:
        """`?`: the question in plain words, its terms, what is accepted (advisor/shell/dialoguehelp.py)."""
        return dialoguehelp.help_lines(q, self.catalog, self.width)

    def why(self, q: Question) -> list[str]:
        """MYCIN's WHY: the rules that test this answer, and what they conclude."""
        return dialoguehelp.why_lines(q, self.kb, self.answers)

    def _wrap(self, text: str, indent: str = "  ") -> list[str]:
        return dialoguehelp.wrap(text, self.width, indent)
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
            target = low[4:].strip().rstrip(".")
            ids = [q.id for q in self.editable()]
            if target.isdigit() and 1 <= int(target) <= len(ids):
                target = ids[int(target) - 1]          # edit N: the line's number on the confirmation screen
            if target not in ids:
                import difflib
                close = difflib.get_close_matches(target, ids, n=1)
                hint = f"Did you mean 'edit {close[0]}'? " if close and target else ""
                return [f"  {hint}Which answer? edit a line's number, 1 to {len(ids)} (or its name: {', '.join(ids)})"]
            q = next(x for x in self.questions if x.id == target)
            self.previous[target] = self.answers.pop(q.field, None)
            self.asked.remove(target)
            self.stage = "questions"
            return []
        if low == "?":
            terms = glossary()
            return (self._wrap("yes: recommend now; no or quit: leave (your answers can be saved); edit N: change the answer "
                               "on line N of the list above (edit 3, or its name, e.g. edit concurrency).")
                    + self._wrap("The recommendation names a layout, TP x PP x DP:")
                    + [x for t in ("tensor-parallel", "pipeline-parallel", "data-parallel") if t in terms for x in self._wrap(terms[t])])
        if low == "back":
            return self._reopen_last()
        return ["  Please answer yes, no, or edit N (the number of a line above)."]

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
            elif k == SERVICE_LEVEL:
                continue            # written into latency below, once the latency answer is known
            else:
                data[k] = v
        if isinstance(self.answers.get(SERVICE_LEVEL), dict) and data.get("latency", "interactive") == "interactive":
            data["latency"] = dict(self.answers[SERVICE_LEVEL])       # {ttft_ms, tpot_ms}: interactive, stated
        if data.get("volume") and data.get("latency") == "batch":
            # a batch job with a volume runs each copy of the model at its largest batch (the volume
            # question's help says so): the sequences-at-once answer does not size it
            data["concurrency"] = "max"
        if data.get("model") == "other" or "model" not in data:
            data["model"] = model or data.get("model")
        data.setdefault("name", f"{data['model'] if isinstance(data.get('model'), str) else 'custom-model'}-{data.get('mode')}")
        return data

    def recommend(self) -> list[str]:
        from advisor.judgement.advise import advise
        from advisor.shell.report import summary_text
        try:
            self.decision = advise(self.workload_data(), self.setup, "your answers", why_none=True)
        except InputError as exc:
            self.stage = "confirm"
            return [f"  {p}" for p in exc.problems] + ["  Use 'edit N' (the number of a line above) to change an answer."]
        self.stage = "format"
        lines = summary_text(self.decision.record, self.catalog).rstrip().splitlines()[:-1]
        speed = dialoguehelp.speed_line(self.decision.record)
        if speed:
            lines.insert(2 if len(lines) > 2 and lines[1].startswith("  about") else 1, speed)
        # at word boundaries: a terminal breaks a long line mid-word ("instan/ce")
        return [""] + [w for line in lines for w in dialoguehelp.wrap(line.strip(), self.width,
                                                                     line[:len(line) - len(line.lstrip())])] + [""]

    def _on_format(self, prompt: Prompt, text: str) -> list[str]:
        low = text.lower() or "md"
        if low == "?":
            return ["  text: for the terminal (80 columns); md: Markdown, to paste or commit, with its charts as SVG files "
                    "beside it; html: one self-contained page with the charts. The decision record and the transcript "
                    "are written beside it."]
        if low == "back":
            self.stage = "confirm"
            return []
        if low == "quit":
            return self._leave_unwritten()
        if low not in ("text", "md", "html"):
            return ["  Please answer text, md or html (or ?, back, quit)."]
        self.memo_format = low
        self.stage = "path"
        return []

    def _leave_unwritten(self) -> list[str]:
        """`quit` after the recommendation, before a memo is written: the answers are kept (every exit of
        the dialogue keeps what the user typed)."""
        self.stage = "quit"
        if self.dry_run:
            return ["  Leaving without writing a memo."]
        saved = self.save_resume()
        return [f"  Leaving without writing a memo; your answers are saved to {saved}; continue with: "
                f"gpu-advisor ask --resume {saved}"]

    def default_path(self) -> str:
        ext = {"text": "txt", "md": "md", "html": "html"}[self.memo_format]
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", str(self.workload_data().get("name")))
        return f"{name}-memo.{ext}"

    def _on_path(self, prompt: Prompt, text: str) -> list[str]:
        if text.lower() == "?":
            return ["  A file name for the memo; the decision record (-decision.json) and the transcript "
                    "(-transcript.yaml) go beside it."]
        if text.lower() == "back":
            self.stage = "format"
            return []
        if text.lower() == "quit":
            return self._leave_unwritten()
        path = Path(text or self.default_path())
        if not path.is_absolute():
            path = self.out_dir / path
        if path.is_dir() or not path.parent.is_dir():
            return [f"  Cannot write there: {path.parent} is not a folder."]
        paths = session.output_paths(path)
        if not self.dry_run:
            refused = session.refusal(paths)
            if refused:
                return [f"  Cannot write there: {refused}"]
            there = session.existing_outputs(paths)
            if there:
                # nothing the user already wrote is lost without a yes (review 14: notes.md was replaced)
                self.stage, self.replacing = "overwrite", path
                return [f"  {', '.join(p.name for p in there)} already exist{'s' if len(there) == 1 else ''} in {path.parent}."]
        return self._write(path, paths)

    def _on_overwrite(self, prompt: Prompt, text: str) -> list[str]:
        low = text.lower()
        if low in ("y", "yes"):
            return self._write(self.replacing, session.output_paths(self.replacing))
        if low in ("", "n", "no"):
            self.stage = "path"
            return ["  Nothing replaced: give another file name."]
        return ["  Please answer yes or no."]

    def _write(self, path: Path, paths: tuple[Path, Path, Path]) -> list[str]:
        self.stage = "done"
        if self.dry_run:
            return []
        self.written = session.write_outputs(self, paths)
        self.finish()
        _, decision_path, transcript_path = paths
        charts = [f"  its charts beside it: {', '.join(p.name for p in self.chart_files)}"] if self.chart_files else []
        return [f"  Wrote the memo to {path}", *charts, f"  the decision record to {decision_path}",
                f"  and this session's transcript to {transcript_path}"]

    def _on_save(self, prompt: Prompt, text: str) -> list[str]:
        low = text.lower()
        if low in ("", "y", "yes"):
            self.stage = "quit"
            saved = self.save_resume()          # the system's temporary folder when the output folder cannot be written
            return [f"  Answers saved to {saved}; continue with: gpu-advisor ask --resume {saved}"]
        if low in ("n", "no"):
            self.stage = "quit"
            return ["  Answers not saved."]
        return ["  Please answer yes or no."]

    # --- the session's files and transcript (advisor/shell/session.py, advisor/shell/transcripts.py) -----
    def resume_path(self) -> Path:
        return self.out_dir / RESUME_FILE

    def save_resume(self, path: Path | None = None) -> Path:
        return session.save_resume(self, path or self.resume_path())

    def finish(self) -> None:
        """The session completed: the resume file it started from, or one an interruption left, goes."""
        session.remove_resume(self.resumed_from, self.resume_path())

    @classmethod
    def resume(cls, path: str | Path, setup: Setup, **kw) -> "Dialogue":
        """The dialogue a resume file saved, continued where it stopped."""
        state = session.load_resume(path)
        d = cls(setup, answers=state["answers"], **kw)
        d.resumed_from = Path(path)
        d.preset = set(state.get("preset") or [])
        # only the questions this version asks, each once: a tampered or older file's unknown ids made `back`
        # fail with StopIteration (issue 42)
        known = {q.id for q in d.questions}
        d.asked = list(dict.fromkeys(q for q in state.get("asked") or [] if isinstance(q, str) and q in known))
        d.typed = {str(k): str(v) for k, v in (state.get("typed") or {}).items()}
        # the session goes on as one: the `quit` that paused it and the save answer are not steps of its transcript
        # (review 14: a replay of a quit-and-resumed session ended at the quit)
        steps = []
        for st in state.get("steps") or []:
            if isinstance(st, dict) and st.get("question") == "save":
                if steps and str(steps[-1].get("answer", "")).strip().lower() == "quit":
                    steps.pop()
                continue
            steps.append(st)
        d.steps = steps
        return d

    def transcript(self) -> dict:
        return transcripts.transcript(self)

    def transcript_yaml(self) -> str:
        return transcripts.transcript_yaml(self)


def replay(path: str | Path, setup: Setup) -> tuple[bool, list[str]]:
    """Feed a transcript's answers through a fresh dialogue (a dry run); (same, differences)."""
    return transcripts.replay(path, lambda preset: Dialogue(setup, answers=preset, dry_run=True))


def answers_from(data: dict, catalog: Catalog, file: str | None = None) -> dict:
    """The dialogue's answers from a workload document (for `ask --from`): every field the file gives,
    those no question asks included (review 14: `constraints.gpus` and `name` were dropped, and the dialogue
    recommended a GeForce card the file ruled out), as plain values (the loader's line-carrying lists and
    maps do not go into a transcript)."""
    answers = {}
    for k, v in data.items():
        if k == "constraints" and isinstance(v, dict):
            for ck, cv in v.items():
                if cv is not None and ck in CONSTRAINTS:
                    answers[f"constraints.{ck}"] = yamlio.plain(cv)
        elif k == "model" and isinstance(v, dict):
            answers["model"] = "other"
            for mk, mv in v.items():
                if mk in MODEL_FIELDS and mk != "name":
                    answers[f"model.{mk}"] = yamlio.plain(mv)
        elif k == "model" and file and _config_path(str(v), file):
            answers["model"] = _config_path(str(v), file)     # a config.json, as the file names it (review 14)
        elif k == "model" and diffusionmodels.knows(str(v)):
            answers["model"] = diffusionmodels.resolve_id(str(v))      # an image or video model
        elif k == "model":
            answers["model"] = catalog.model_release(str(v))[0].id
        elif k in FIELDS and v is not None:
            answers[k] = yamlio.plain(v)
    return answers


def _config_path(raw: str, file: str) -> str | None:
    """A model the workload names by its Hugging Face config: hf:ORG/NAME as it is, a path made absolute
    against the workload's own folder (the dialogue's workload has none); None for a catalog name."""
    if not is_config(raw, file):
        return None
    if raw.startswith("hf:"):
        return raw
    p = Path(raw).expanduser()
    return str(p if p.is_absolute() else (Path(file).parent / p).resolve())
