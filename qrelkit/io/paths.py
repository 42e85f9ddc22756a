"""Which files are runs, and what a run is called: no parsing, so the CLI can use it at startup."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from qrelkit.errors import InputFormatError, LineProblem, SkippedFilesWarning
from qrelkit.io.files import folder_files
from qrelkit.io.lines import iter_lines

# Control characters (C0 with tab and newline, DEL, C1), Unicode's line and paragraph separators, and
# the bidirectional overrides and isolates, which reorder how the text around them is shown.
_NAME_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
# Characters that show as nothing: two names differing by one read the same ("nist" and "nist\u200b")
_NAME_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff]")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a set, a run or a judge run (None when it can)."""
    found = _NAME_CONTROL.search(name)
    if found is not None:
        return f"holds the control character {found.group()!r}: a name holds none"
    found = _NAME_INVISIBLE.search(name)
    if found is not None:
        return f"holds the invisible character {found.group()!r}: a name holds none (it would read as another name)"
    if not name.strip():
        return "is blank: a name has at least one visible character"
    if name != name.strip():
        return "begins or ends with a space: a name does not (it would read as another name)"
    return None


def checked_name(name: str, what: str, path: str | Path | None = None) -> str:
    """``name`` (of a qrels set, a run, a judge run...) when it holds no control or invisible
    character, is not blank and has no space at either end: names are data, shown in terminal
    tables, Markdown, LaTeX and HTML, where a newline or an escape sequence in one would end a
    comment or rewrite the screen, and where `nist` and `nist ` would read as one. An
    InputFormatError naming ``path`` otherwise."""
    problem = name_problem(name)
    if problem is None:
        return name
    message = f"{what} {name!r} {problem}; rename it" + (" or give --name" if path is not None else "")
    raise InputFormatError.single(path if path is not None else name, 0, message)


def run_name_from_path(path: str | Path) -> str:
    """A run's name is its file name without the extension (`runs/bm25.run` -> `bm25`). NIST ships
    every submitted run as `input.<tag>[.gz]`, so those are named by the tag (`input.bm25base_p.gz`
    -> `bm25base_p`), not all `input`. A file name with a control character is refused (`checked_name`)."""
    name = Path(path).name
    if not name:
        return name  # `.` or `/`: no file's name at all (opening it says what it is)
    if name.endswith(".gz"):
        name = name[:-3]
    if name.startswith("input.") and len(name) > len("input."):
        return checked_name(name[len("input.") :], "the name taken from the file", repr(str(path)))
    return checked_name(Path(name).stem if "." in name else name, "the name taken from the file", repr(str(path)))


# Files a runs folder (or a folder of judgment files) often holds beside the runs (NIST's and the authors' releases): never data.
_NOT_RUN_NAMES = re.compile(r"^(readme|license|licence|copying|notice|changelog|manifest)([._-].*)?$", re.IGNORECASE)
NOT_DATA_SUFFIXES = {".md", ".rst", ".html", ".htm", ".pdf", ".json", ".yaml", ".yml", ".py", ".sh", ".ipynb", ".png", ".jpg", ".svg"}


def not_a_run(path: Path) -> str | None:
    """Why a file found in a runs folder is not a run (None when it may be one): a hidden file, a
    README or LICENSE, documentation or code by its suffix, or a `.txt` whose first line is not a
    `qid Q0 docid rank score tag` line."""
    name = path.name
    if name.startswith("."):
        return "hidden file"
    if _NOT_RUN_NAMES.match(name):
        return "not a run file (" + name.split(".")[0].upper() + ")"
    if path.suffix.lower() in NOT_DATA_SUFFIXES:
        return f"not a run file ({path.suffix.lower()})"
    if path.suffix.lower() == ".txt" and not _looks_like_run(path):
        return "not a run file (its first line is not `qid Q0 docid rank score tag`)"
    return None


def _looks_like_run(path: Path) -> bool:
    problems: list[LineProblem] = []
    for _, text in iter_lines(path, problems):
        cols = text.split()
        return len(cols) == 6 and cols[3].lstrip("-").isdigit()
    return False


def list_run_files(paths: list[str | Path], skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
    """Expand files and folders into run files. A file named directly is always read; inside a
    folder, files that are evidently not runs (`not_a_run`) are left out and appended to
    ``skipped`` as (path, reason), or, when the caller passes no list, named in a warning."""
    out: list[Path] = []
    left_out: list[tuple[Path, str]] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            files, other = folder_files(p)
            reasons = {f: not_a_run(f) for f in files}
            out += [f for f, reason in reasons.items() if reason is None]
            left_out += [*other, *((f, reason) for f, reason in reasons.items() if reason is not None)]
        elif p.exists():
            out.append(p)
        else:
            raise InputFormatError.single(p, 0, "no such file or directory")
    if skipped is not None:
        skipped.extend(left_out)
    elif left_out:
        shown = ", ".join(f"{f} ({reason})" for f, reason in left_out if not f.name.startswith("."))
        if shown:
            warnings.warn(f"skipped {shown}", SkippedFilesWarning, stacklevel=2)
    return out


def run_files(paths: list[str | Path], skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
    """The run files under ``paths``, refusing two that would give runs the same name."""
    files = list_run_files(paths, skipped)
    names: dict[str, Path] = {}
    for path in files:
        name = run_name_from_path(path)
        if name in names:
            raise InputFormatError.single(path, 0, f"run name {name!r} also comes from {names[name]}")
        names[name] = path
    return files


IRDS_PREFIX = "irds:"


def irds_id(ref: object) -> str | None:
    """The dataset id of an `irds:<id>` reference (ir_datasets), None for anything else (a file path)."""
    text = str(ref)
    return text[len(IRDS_PREFIX) :] if text.startswith(IRDS_PREFIX) else None
