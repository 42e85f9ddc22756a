"""Sweeps: one job file, the cartesian product of some of its settings, each cell its own judge run.

    sweep:
      template: [trec-dl-graded, umbrela]
      judge.options.model: [gpt-4o-mini, gpt-4o]

Any dotted key of the job can be swept (the judge, its options, the template, the grading), except
`database` and `collection`: the cells share one database, so the collection is loaded and the pool built once
(the first cell loads; the others find every file unchanged) and each cell is a judge run with its
own identity, resumed like any job. Each cell grades into a qrels set named by a pattern: the job's
`grading.name` when it holds `{key}` placeholders (`dl19-{template}-{judge.options.model}`), else
the swept values joined by `-` (`trec-dl-graded-gpt-4o-mini`), after the job's `grading.name` when
it has one. A template file is named by its stem.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qrelkit.errors import InputFormatError
from qrelkit.io.structured import read_yaml
from qrelkit.jobs.spec import JobError, JobSpec, load_job

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_CELLS = 1000  # a sweep is judge runs, each paid for: a typo that multiplies lists should not start 10,000


@dataclass(frozen=True)
class SweepCell:
    """One cell of a sweep: its name (the qrels set it grades into) and its values (dotted key -> value)."""

    name: str
    values: dict[str, Any]

    def settings(self, graded: bool) -> dict[str, Any]:
        """The job settings this cell stands for: its values, and its grading set's name when the job grades."""
        return {**self.values, "grading.name": self.name} if graded else dict(self.values)


@dataclass(frozen=True)
class Sweep:
    """What a job file sweeps over: the keys in the file's order and each key's values."""

    source: Path
    axes: dict[str, list[Any]]
    pattern: str
    graded: bool

    @property
    def keys(self) -> list[str]:
        return list(self.axes)

    def cells(self) -> list[SweepCell]:
        combinations = (dict(zip(self.axes, combination, strict=True)) for combination in itertools.product(*self.axes.values()))
        out = [SweepCell(cell_name(self.pattern, values), values) for values in combinations]
        seen: dict[str, SweepCell] = {}
        for cell in out:
            if cell.name in seen:
                raise JobError(
                    f"{self.source}: sweep: cells {seen[cell.name].values} and {cell.values} are both named {cell.name!r}: "
                    "give grading.name a pattern that tells them apart"
                )
            seen[cell.name] = cell
        return out


def value_label(value: Any) -> str:
    """A value as part of a qrels set's name: a template file by its stem, anything else as text,
    with characters other than letters, digits, `.`, `_` and `-` turned into `-`."""
    text = str(value)
    if isinstance(value, str) and value.lower().endswith((".yaml", ".yml")):
        text = Path(value).stem
    return _UNSAFE.sub("-", text).strip("-") or "value"


def cell_name(pattern: str, values: Mapping[str, Any]) -> str:
    return _PLACEHOLDER.sub(lambda m: value_label(values[m.group(1)]), pattern)


def _pattern(source: Path, axes: dict[str, list[Any]], grading: Any) -> str:
    default = "-".join(f"{{{key}}}" for key in axes)
    name = grading.get("name") if isinstance(grading, dict) else None
    if not isinstance(name, str) or not name:
        return default
    if not _PLACEHOLDER.search(name):
        return f"{name}-{default}"
    unknown = sorted(set(_PLACEHOLDER.findall(name)) - set(axes))
    if unknown:
        raise JobError(f"{source}: grading.name: {name!r} names {', '.join(unknown)}, which the sweep does not vary ({', '.join(axes)})")
    missing = [key for key in axes if f"{{{key}}}" not in name]
    if missing:
        raise JobError(f"{source}: grading.name: {name!r} leaves out {', '.join(missing)}: every cell would need its own name")
    return name


def read_sweep(path: str | Path) -> Sweep | None:
    """The job file's `sweep:`, checked (a mapping of dotted keys to non-empty lists of distinct
    values, never `database`); None for a job without one."""
    path = Path(path)
    if not path.is_file():
        return None  # load_job says what is wrong with the path
    try:
        data = read_yaml(path)
    except InputFormatError:
        return None  # likewise
    if not isinstance(data, dict) or "sweep" not in data:
        return None
    raw = data["sweep"]
    if not isinstance(raw, dict) or not raw:
        raise JobError(f"{path}: sweep: expected a mapping of job keys to lists of values, e.g. template: [trec-dl-graded, umbrela]")
    axes: dict[str, list[Any]] = {}
    for key, values in raw.items():
        where = f"{path}: sweep.{key}"
        if not isinstance(key, str) or not key.strip() or any(not part for part in key.split(".")):
            raise JobError(f"{path}: sweep: {key!r} is not a dotted job key such as judge.options.model")
        if key.split(".")[0] in ("database", "sweep"):
            raise JobError(f"{where}: a sweep's cells share one database (and a sweep does not nest): sweep other keys")
        if key.split(".")[0] == "collection":
            raise JobError(
                f"{where}: a sweep's cells share one database and so one collection (a second topics or documents file would be "
                "refused after the first cell was judged): sweep the judge, its options, the template or the grading, and give "
                "each collection a job and database of its own"
            )
        if not isinstance(values, list) or not values:
            raise JobError(f"{where}: expected a non-empty list of values, got {values!r}")
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            raise JobError(f"{where}: {repeated[0]!r} is listed twice")
        axes[key] = values
    cells = math.prod(map(len, axes.values()))
    if cells > MAX_CELLS:
        raise JobError(f"{path}: sweep: {cells} cells (at most {MAX_CELLS}): split the sweep")
    return Sweep(path, axes, _pattern(path, axes, data.get("grading")), isinstance(data.get("grading"), dict))


def check_sets_leave_axes_alone(sweep: Sweep, sets: list[str]) -> None:
    """A `--set` of a swept key would make every cell the same: refused."""
    for item in sets:
        key = item.partition("=")[0].strip()
        if key in sweep.axes or any(key.startswith(axis + ".") or axis.startswith(key + ".") for axis in sweep.axes):
            raise JobError(f"--set {item!r}: {sweep.source} sweeps {key!r}; change the sweep's list instead")


def sweep_jobs(
    path: str | Path,
    overrides: dict[str, Any] | None = None,
    *,
    sets: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    allow_import: bool = False,
) -> list[tuple[SweepCell, JobSpec]]:
    """Every cell of a sweep job as a job of its own, all validated before any is run."""
    sweep = read_sweep(path)
    if sweep is None:
        raise JobError(f"{path}: no sweep: in this job; run it as one job")
    check_sets_leave_axes_alone(sweep, sets or [])
    return [
        (cell, load_job(path, overrides, sets=sets, environ=environ, allow_import=allow_import, cell=cell.settings(sweep.graded)))
        for cell in sweep.cells()
    ]
