"""Errors a user can act on. Each names what was wrong and where."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class QrelkitError(Exception):
    """Base class: the CLI prints these as one clean message, without a traceback."""


@dataclass(frozen=True)
class LineProblem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class InputFormatError(QrelkitError):
    """One or more malformed lines in an input file; each problem names file and line."""

    MAX_SHOWN = 10

    def __init__(self, problems: list[LineProblem], omitted: int = 0):
        """``omitted`` counts problems found beyond those kept in ``problems`` (a reader keeps
        the first few dozen of a file, not millions)."""
        self.problems = problems
        self.omitted = omitted
        shown = [str(p) for p in problems[: self.MAX_SHOWN]]
        more = len(problems) - len(shown) + omitted
        if more > 0:
            shown.append(f"... and {more} more problem(s) in {problems[0].path}")
        super().__init__("\n".join(shown))

    @classmethod
    def single(cls, path: str | Path, line: int, message: str) -> InputFormatError:
        return cls([LineProblem(str(path), line, message)])


class StoreError(QrelkitError):
    """The database refused an operation (in use, conflicting load, unknown name)."""


class DatabaseInUseError(StoreError):
    pass
