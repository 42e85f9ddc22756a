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
        """`file:line: message`; line 0 is the whole file (a missing or empty file): `file: message`."""
        return f"{self.path}{f':{self.line}' if self.line else ''}: {self.message}"


class InputFormatError(QrelkitError):
    """One or more malformed lines in an input file; each problem names file and line."""

    MAX_SHOWN = 10

    def __init__(self, problems: list[LineProblem], omitted: int = 0, stopped: str | None = None):
        """``omitted`` counts problems found beyond those kept in ``problems`` (a reader keeps
        the first few dozen of a file, not millions); ``stopped`` says why the reader stopped
        counting before the end of the file (there are more)."""
        self.problems = problems
        self.omitted = omitted
        self.stopped = stopped
        shown = [str(p) for p in problems[: self.MAX_SHOWN]]
        more = len(problems) - len(shown) + omitted
        if more > 0:
            shown.append(f"... and {more} more problem(s) in {problems[0].path}" + (f", and more ({stopped})" if stopped else ""))
        super().__init__("\n".join(shown))

    @classmethod
    def single(cls, path: str | Path, line: int, message: str) -> InputFormatError:
        return cls([LineProblem(str(path), line, message)])


class SkippedFilesWarning(UserWarning):
    """Files left out of a folder because they are evidently not what the folder is read for (a
    README in a runs folder); the CLI prints the warning as one line."""


class FatalJobError(QrelkitError):
    """A job or command failed for a reason other than its input: the judge is broken, most
    judgments failed, the database cannot be written. The CLI exits 3 (bad input exits 2)."""


class StoreError(QrelkitError):
    """The database refused an operation (in use, conflicting load, unknown name)."""


class DatabaseInUseError(StoreError):
    pass


class PairInputError(QrelkitError, ValueError):
    """A (topic, document) pair that cannot be put to the model: a template that cannot render it,
    a missing, corrupt or out-of-root image, a prompt that does not fit. Its judgment is an
    `input_error`, decided before the model runs."""


class StorageFailure(StoreError, FatalJobError):
    """The database could not write (disk full, I/O error): a failure of the machine, never a
    judgment's status. A job stops at once, keeping what was already committed."""


class JobFailed(FatalJobError):
    """A judging job stopped because its judge is broken, or finished with most judgments failed."""


class MissingExtraError(QrelkitError, ModuleNotFoundError):
    """An optional package a call needs is not installed; the message names the extra that installs it."""
