"""Documents of `qrelkit load | show | evaluate | correlate | import | export`."""

from __future__ import annotations

import math
from typing import Any

from qrelkit.report.document import Document, Lines, Table, notes, warnings


def loads(results: list[Any], request: Any) -> Document:
    """A line per file: what was loaded, replaced, found unchanged or skipped."""
    verbs = {"loaded": "loaded", "replaced": "replaced", "unchanged": "already loaded, unchanged:"}
    lines = []
    for r in results:
        if r.status == "skipped":
            lines.append(f"skipped {r.name}: {r.reason}")
        else:
            lines.append(f"{verbs[r.status]} {r.kind} {r.name!r}" + (f" ({r.rows} rows)" if r.rows else ""))
    data = [
        {"kind": r.kind, "name": r.name, "rows": r.rows, "status": r.status, "reason": r.reason or None, "notes": list(r.notes)}
        for r in results
    ]
    return Document(lead=lines, data=data, notes=notes([note for r in results for note in r.notes]))


def status(found: Any, request: Any) -> Document:
    """`qrelkit status` (and `qrelkit show` while a job holds the database): the job's own document."""
    return found.document()


def contents(found: Any, request: Any) -> Document:
    """`qrelkit show`: a row per thing the database holds (JSON: the sets, runs and judge runs); while
    a judging job holds the database, the job's status."""
    if hasattr(found, "document"):
        return status(found, request)
    database, lines, detailed = found
    rows = [[line["what"], line["count"], line["detail"]] for line in lines]
    table = Table(str(database), ["what", "count", "detail"], rows, text_columns=frozenset({0, 2}))  # the count right-aligned
    return Document(blocks=[table], data=detailed)


def evaluation(result: Any, request: Any) -> Document:
    """Each run's means (best first by the first measure), what they are means over, and with
    --per-query each query's value; `--format trec`: trec_eval -q's lines, byte for byte."""
    from qrelkit.commands.documents.trec_eval import trec_eval_lines

    measures = result.measures
    means = result.means()
    first = measures[0]
    ranked = sorted(
        result.runs, key=lambda run: (math.isnan(means[run][first]), -means[run][first] if not math.isnan(means[run][first]) else 0)
    )
    over = result.describe_average() + (f"; qrels cut to {result.qrels_cut}" if result.qrels_cut else "")
    qrels = request.qrels.ref if request.qrels.ref is not None else "the qrels given"
    runs = f"{len(result.runs)} run{'s' if len(result.runs) != 1 else ''}"
    lead = [f"{runs} scored under {qrels}: means {over}."]
    if len(ranked) > 1 and not math.isnan(means[ranked[0]][first]):
        lead = [f"{ranked[0]} leads {runs} by {first} ({means[ranked[0]][first]:.4f}) under {qrels}: means {over}."]
    header = ["run", *measures] + (["num_q"] if result.average == "run" else [])
    rows = [[run, *(means[run][m] for m in measures), *([result.num_q(run)] if result.average == "run" else [])] for run in ranked]
    blocks: list[Any] = [Table(f"mean {over}", header, rows, name="runs")]
    if request.per_query:
        lines = [
            "\t".join([run, qid] + [f"{result.values[run][m][i]:.4f}" for m in measures])
            for run in result.runs
            for i, qid in enumerate(result.queries)
        ]
        blocks.append(Lines(lines, "run\tquery\t" + "\t".join(measures)))
    own = {"trec": trec_eval_lines(result)} if request.output_format == "trec" else {}
    # what reading the runs left out (columns after the 6th): a warning, so that trec_eval's format says it on stderr too
    said = warnings(list(result.notes))
    return Document(lead=lead, blocks=blocks, data=result.to_dict(request.per_query), own=own, notes=said)


def correlations(result: Any, request: Any) -> Document:
    """`qrelkit correlate`: one matrix per statistic, then how each ordering was made."""
    from qrelkit.evaluate.correlate import CORRELATION_NAMES

    blocks = []
    for name, matrix in result.matrices.items():
        rows = [[label, *(float(matrix[i, j]) for j in range(len(result.orderings)))] for i, label in enumerate(result.orderings)]
        title = f"{CORRELATION_NAMES[name]} between the orderings of {len(result.runs)} runs"
        blocks.append(Table(title, ["", *result.orderings], rows, digits=3, name=name))
    lead = [f"{len(result.orderings)} orderings of {len(result.runs)} runs compared, means over {result.queries} queries."]
    tau = result.matrices.get("kendall_tau")
    if tau is not None and len(result.orderings) == 2:
        lead = [
            f"Kendall τ-b between {result.orderings[0]} and {result.orderings[1]} over {len(result.runs)} runs: {float(tau[0, 1]):.3f}."
        ]
    return Document(lead=lead, blocks=blocks, notes=notes(result.notes), data=result.to_dict())


def imported(result: Any, request: Any) -> Document:
    verb = {"imported": "imported", "replaced": "replaced", "unchanged": "already imported, unchanged:"}[result.status]
    line = f"{verb} {result.rows or ''} scores as judge run {result.judge_run_id} ({result.name!r})".replace("  ", " ")
    data = {"judge_run_id": result.judge_run_id, "name": result.name, "rows": result.rows, "status": result.status}
    return Document(lead=[line], data=data)


def exported_qrels(exported: Any, request: Any) -> Document:
    qrels, note = exported
    lead = [f"wrote {len(qrels)} judgments of {qrels.name!r} to {request.output}"]
    data = {"qrels": qrels.name, "judgments": len(qrels), "output": str(request.output), "note": note}
    return Document(lead=lead, data=data, said=[note] if note else [])


def exported_judgments(exported: Any, request: Any) -> Document:
    rows, runs = exported
    lead = [f"wrote {rows} judgments of {len(runs)} judge run(s) ({', '.join(runs) or 'none'}) to {request.output}"]
    return Document(lead=lead, data={"judgments": rows, "judge_runs": list(runs), "output": str(request.output)})
