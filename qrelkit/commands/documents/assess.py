"""Documents of `qrelkit assess plan` and `qrelkit assess load`: what was planned (or added by
`--next`) for human assessors, and what they returned."""

from __future__ import annotations

from typing import Any

from qrelkit.commands.assess_results import LoadResult, PlanResult
from qrelkit.report.document import Cell, Document, Note, Table

STATUS = {
    "new": "planned",
    "unchanged": "kept (already planned so)",
    "extended": "extended (the earlier pairs kept)",
    "replaced": "replaced (planned again with other settings)",
    "next": "added to",
}


def plan_document(result: PlanResult, request: Any = None) -> Document:
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


def load_document(result: LoadResult, request: Any = None) -> Document:
    lead = f"Loaded {result.labels:,} human grades ({result.new:,} new) for design {result.design!r} as qrels set {result.qrels_set!r}."
    rows: list[list[Cell]] = [[grade, count] for grade, count in result.grades.items()]
    return Document(lead=[lead], blocks=[Table("grades", ["grade", "pairs"], rows, name="grades")], data=result.to_dict())
