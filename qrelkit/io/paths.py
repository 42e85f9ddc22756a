"""Which files are runs, and what a run is called: no parsing, so the CLI can use it at startup."""

from __future__ import annotations

from pathlib import Path

from qrelkit.errors import InputFormatError


def run_name_from_path(path: str | Path) -> str:
    """A run's name is its file name without the extension (`runs/bm25.run` -> `bm25`)."""
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    return Path(name).stem if "." in name else name


def list_run_files(paths: list[str | Path]) -> list[Path]:
    """Expand files and directories (every regular, non-hidden file inside) into run files."""
    out: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".")))
        elif p.exists():
            out.append(p)
        else:
            raise InputFormatError.single(p, 0, "no such file or directory")
    return out


def run_files(paths: list[str | Path]) -> list[Path]:
    """The run files under ``paths``, refusing two that would give runs the same name."""
    files = list_run_files(paths)
    names: dict[str, Path] = {}
    for path in files:
        name = run_name_from_path(path)
        if name in names:
            raise InputFormatError.single(path, 0, f"run name {name!r} also comes from {names[name]}")
        names[name] = path
    return files
