"""What `qrelkit assess plan` and `qrelkit assess load` did, as data and as documents."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qrelkit.io.results import Result
from qrelkit.report.document import Cell, Document, Note, Table

STATUS = {
    "new": "planned",
    "unchanged": "kept (already planned so)",
    "extended": "extended (the earlier pairs kept)",
    "replaced": "replaced (planned again with other settings)",
    "next": "added to",
}


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


def plan_document(result: PlanResult) -> Document:
    design = result.design
    what = "pairs" if design["design"] != "queries" else "pairs (whole queries)"
    if result.status == "next":
        lead = (
            f"Added {result.planned:,} pairs to design {design['name']!r} as phase {result.phase}, "
            "where the intervals still undecided shrink most."
        )
    else:
        lead = (
            f"Design {design['name']!r} {STATUS[result.status]}: {result.planned:,} {what} of a pool of {design['pool_pairs']:,} "
            f"for human assessors ({design['design']}, seed {design['seed']})"
            + (f", {result.new:,} of them new." if result.status == "extended" else ".")
        )
    rows: list[list[Cell]] = [[p["phase"], p["kind"], p["budget"]] for p in design["phases"]]
    positive = result.inclusion[result.inclusion > 0]
    notes = [Note(text) for text in result.notes]
    if len(positive):
        notes.append(
            Note(
                f"inclusion probabilities of this phase's pairs: {positive.min():.4f} to {positive.max():.4f} "
                f"(expected labels {result.inclusion.sum():.0f})"
            )
        )
    if not result.files:
        notes.append(Note("no file written for assessors (--out FILE writes the pairs and a TREC qrels template)"))
    return Document(
        lead=[lead],
        blocks=[Table("phases", ["phase", "design", "budget"], rows, text_columns=2, name="phases")],
        notes=notes,
        data=result.to_dict(),
        files=list(result.files),
    )


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
        return {
            "design": self.design,
            "qrels_set": self.qrels_set,
            "labels": self.labels,
            "new": self.new,
            "grades": self.grades,
            "path": self.path,
        }

    def to_pandas(self):
        from qrelkit.io.results import pandas

        return pandas().DataFrame([{"grade": g, "labels": n} for g, n in self.grades.items()])


def load_document(result: LoadResult) -> Document:
    lead = f"Loaded {result.labels:,} human grades ({result.new:,} new) for design {result.design!r} as qrels set {result.qrels_set!r}."
    rows: list[list[Cell]] = [[grade, count] for grade, count in result.grades.items()]
    return Document(lead=[lead], blocks=[Table("grades", ["grade", "pairs"], rows, name="grades")], data=result.to_dict())
