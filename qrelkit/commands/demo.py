"""`qrelkit demo`: judge the bundled toy collection with MiniLM (int8 ONNX), grade the scores
into qrels by per-topic quantiles, and compare how the model qrels and the human qrels rank
the bundled runs."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from scipy.stats import kendalltau

from qrelkit.commands.judging import describe_grading, export_qrels_file
from qrelkit.embed.onnx import check_onnx_extra
from qrelkit.evaluate import evaluate_runs
from qrelkit.jobs.grade import grade_judge_run
from qrelkit.jobs.runner import run_job
from qrelkit.jobs.spec import load_job
from qrelkit.storage import Store

DEMO_JOB = Path(__file__).resolve().parents[1] / "data" / "demo" / "job.yaml"
MEASURE = "nDCG@10"


def run_demo(out_dir: Path, console: Console) -> dict[str, float]:
    check_onnx_extra("qrelkit demo (MiniLM, int8 ONNX)")  # before anything is written: no half-made out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    spec = load_job(DEMO_JOB, {"database": str((out_dir / "demo.duckdb").resolve())})
    report = run_job(spec, console=console, progress=console.is_terminal)
    console.print(
        f"judged {report.judged} of {report.pairs} pairs with MiniLM (int8 ONNX) [{report.already_ok} already in the database]",
        highlight=False,
    )
    grading = spec.grading
    assert grading is not None
    with Store(spec.database) as store:
        result = grade_judge_run(
            store,
            report.judge_run_id,
            name=grading.name,
            method=grading.method,
            quantiles=grading.quantiles,
            labels=grading.labels,
            per_topic=grading.per_topic,
        )
        console.print(describe_grading(result), highlight=False)
        human = store.qrels("human")
        runs = store.runs()
    qrels_file = out_dir / "minilm.qrels"
    export_qrels_file(spec.database, qrels_file, judge_run_id=report.judge_run_id, name=None)

    under_human = evaluate_runs(human, runs, [MEASURE]).means()
    under_model = evaluate_runs(result.qrels, runs, [MEASURE]).means()
    table = Table(title=f"{MEASURE} of the bundled runs under human and MiniLM qrels")
    for column in ("run", "human qrels", "MiniLM qrels"):
        table.add_column(column, justify="left" if column == "run" else "right")
    order = sorted(under_human, key=lambda r: -under_human[r][MEASURE])
    for run in order:
        table.add_row(run, f"{under_human[run][MEASURE]:.4f}", f"{under_model[run][MEASURE]:.4f}")
    console.print(table)
    tau = kendalltau([under_human[r][MEASURE] for r in order], [under_model[r][MEASURE] for r in order]).statistic
    agree = sum(
        1
        for q in result.qrels.entries
        if human.grades.get(q.qid, {}).get(q.docid) is not None and (human.grades[q.qid][q.docid] >= 2) == (q.grade >= 2)
    )
    console.print(
        f"Kendall τ between the two system rankings: {tau:.3f}; binary agreement (grade ≥ 2) on "
        f"{agree}/{len(result.qrels)} pairs. Model qrels: {qrels_file}. Database: {spec.database}. "
        f"Done in {time.perf_counter() - started:.1f}s.",
        highlight=False,
    )
    return {"kendall_tau": float(tau), "seconds": time.perf_counter() - started}
