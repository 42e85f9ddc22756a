"""What `qrelkit assess plan` and `qrelkit assess load` did, as data and as documents."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.io.results import Result


@dataclass(frozen=True, repr=False)
class PlanResult(Result):
    """``design``: the design as recorded; ``status``: new, unchanged, extended, replaced or next;
    ``planned``: the pairs of this plan (or of the `--next` phase); ``new``: those not planned before."""

    design: dict[str, Any]
    status: str
    planned: int
    new: int
    phase: int
    files: list[Path]
    inclusion: np.ndarray
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return f"design={self.design['name']!r}, status={self.status!r}, planned={self.planned}, new={self.new}"

    def to_dict(self) -> dict[str, Any]:
        positive = self.inclusion[self.inclusion > 0]
        return {
            "design": self.design,
            "status": self.status,
            "phase": self.phase,
            "planned": self.planned,
            "new": self.new,
            "expected_labels": float(self.inclusion.sum()),
            "inclusion": {"min": float(positive.min()) if len(positive) else None, "max": float(positive.max()) if len(positive) else None},
            "files": [str(p) for p in self.files],
            "notes": list(self.notes),
        }

    def to_pandas(self):
        from qrelkit.io.results import pandas

        return pandas().DataFrame([{k: v for k, v in self.to_dict().items() if not isinstance(v, dict | list)}])


@dataclass(frozen=True, repr=False)
class LoadResult(Result):
    design: str
    qrels_set: str
    labels: int
    new: int
    grades: dict[str, int]
    path: str

    def summary(self) -> str:
        return f"design={self.design!r}, qrels_set={self.qrels_set!r}, labels={self.labels}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_pandas(self):
        from qrelkit.io.results import pandas

        return pandas().DataFrame([{"grade": g, "labels": n} for g, n in self.grades.items()])
