"""The package's imports flow one way: no module imports, even lazily inside a function, a module
that imports it back (style.md: shell -> judgement -> numbers -> inputs)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "advisor"


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    mods = {_module(p): p for p in ROOT.rglob("*.py")}
    graph = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for n in names:
                if n in mods and n != m and n != "advisor":
                    graph[m].add(n)
    return graph


def _cycles(graph):
    found, state = [], {}

    def visit(m, stack):
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                found.append(stack[stack.index(n):] + [n])
            elif not state.get(n):
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(graph):
        if not state.get(m):
            visit(m, [m])
    return found


def test_no_import_circles():
    graph = _graph()
    assert "advisor.engine" not in graph["advisor.knowledge"]          # the circle issue 10 names
    assert "advisor.cli" not in graph["advisor.dialogue"]              # and the other one
    assert _cycles(graph) == []


def test_numbers_never_import_the_judgement_or_the_shell():
    graph = _graph()
    upper = {"advisor.decision", "advisor.ranking", "advisor.knowledge", "advisor.engine", "advisor.facts",
             "advisor.memo", "advisor.cli", "advisor.dialogue", "advisor.report", "advisor.sweep", "advisor.explain"}
    for m in graph:
        if m.startswith("advisor.numbers") or m == "advisor.estimator":
            assert not graph[m] & upper, (m, graph[m] & upper)
