"""One exception type for everything a user can get wrong; the CLI turns it into exit code 2."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, with where it is."""

    message: str
    file: str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class InputError(Exception):
    """Invalid input: a workload, rule, catalog, price or template file, or a command-line value."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class Collector:
    """Gathers problems so that a file reports all of them at once, not the first only."""

    def __init__(self, file: str | None = None):
        self.file = file
        self.problems: list[Problem] = []

    def add(self, message: str, line: int | None = None, field: str | None = None) -> None:
        self.problems.append(Problem(message, self.file, line, field))

    def raise_if_any(self) -> None:
        if self.problems:
            raise InputError(self.problems)
