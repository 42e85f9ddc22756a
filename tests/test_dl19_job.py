"""configs/dl19-minilm.yaml on real TREC DL 2019 (read from $QRELKIT_DATA): killed part-way, resumed, graded, evaluated."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from scipy.stats import kendalltau

from qrelkit.commands.judging import grade_job
from qrelkit.errors import QrelkitError
from qrelkit.evaluate import evaluate_runs
from qrelkit.jobs import load_job, run_job
from qrelkit.storage import Store

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("onnxruntime", reason="the ONNX backend is not installed (pip install 'qrelkit[onnx]')")


def job_copy(tmp_path: Path) -> Path:
    """The shipped job, with its database moved into tmp_path (paths stay relative to configs/)."""
    spec = yaml.safe_load((ROOT / "configs" / "dl19-minilm.yaml").read_text())
    spec["database"] = str(tmp_path / "dl19.duckdb")
    path = ROOT / "configs" / f".test-dl19-{os.getpid()}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_dl19_job_survives_sigkill_and_ends_with_every_pair_judged_once(dl19, tmp_path):
    job = job_copy(tmp_path)
    try:
        script = textwrap.dedent(
            f"""
            from qrelkit.jobs import load_job, run_job
            spec = load_job({str(job)!r})
            run_job(spec, progress=False, on_flush=lambda n: print(n, flush=True))
            """
        )
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        committed = 0
        for line in child.stdout:  # kill it as soon as a first part of the judgments is committed
            if not line.strip().isdigit():
                continue
            committed = int(line)
            if committed >= 1000:
                os.kill(child.pid, signal.SIGKILL)
                break
        child.wait()
        assert child.returncode == -signal.SIGKILL and 1000 <= committed < 9260, committed

        spec = load_job(job)
        with Store(spec.database, read_only=True) as store:
            (before,) = store.con.execute("SELECT count(*) FROM judgments").fetchone()
        assert committed <= before < 9260

        report = run_job(spec, progress=False)
        assert report.already_ok == before and report.to_judge == 9260 - before == report.judged
        with Store(spec.database, read_only=True) as store:
            total, distinct, ok = store.con.execute(
                "SELECT count(*), count(DISTINCT (qid, docid)), count(*) FILTER (status = 'ok') FROM judgments"
            ).fetchone()
            attempts = store.con.execute("SELECT max(attempts) FROM judgments").fetchone()[0]
        assert (total, distinct, ok, attempts) == (9260, 9260, 9260, 1)

        grade_job(spec, report.judge_run_id)  # the job's own grading step, as `qrelkit judge` runs it
        with Store(spec.database, read_only=True) as store:
            model = store.qrels("minilm-dl19")
            runs = store.runs()
            grading = json.loads(store.con.execute("SELECT grading FROM qrels_sets WHERE name = 'minilm-dl19'").fetchone()[0])
        assert len(model) == 9260 and grading["per_topic"] and len(grading["thresholds"]) == 43
        nist = evaluate_runs(store_qrels(dl19), runs, ["nDCG@10"]).means()
        ours = evaluate_runs(model, runs, ["nDCG@10"]).means()
        names = sorted(nist)
        tau = kendalltau([nist[r]["nDCG@10"] for r in names], [ours[r]["nDCG@10"] for r in names]).statistic
        print(f"Kendall tau, MiniLM per-topic quantile qrels vs NIST, nDCG@10 over 37 runs: {tau:.4f}")
        assert tau > 0.8  # an outside measurement gave about 0.9
    finally:
        job.unlink(missing_ok=True)


def store_qrels(dl19: Path):
    from qrelkit.io import read_qrels

    return read_qrels(dl19 / "qrels.txt")


def test_the_shipped_job_reads_its_data_root_from_qrelkit_data_and_a_dry_run_writes_nothing(dl19, tmp_path):
    """`QRELKIT_DATA` (the tests set it to the data they use) is the one place the example names its data."""
    from typer.testing import CliRunner

    from qrelkit.cli import app

    job = str(ROOT / "configs" / "dl19-minilm.yaml")
    database = tmp_path / "dl19.duckdb"
    result = CliRunner().invoke(app, ["judge", job, "--dry-run", "--set", f"database={database}"], env={"QRELKIT_DATA": str(dl19.parent)})
    assert result.exit_code == 0, result.output
    assert "judge run " in result.output and "9260 pairs in the pool; before this run 0 ok, 0 failed; 9260 to judge" in result.output
    assert re.search(r"would load 37 runs \(28,171 rows\): '[^']+', '[^']+', '[^']+' and 34 more\n", result.output), result.output
    assert list(tmp_path.iterdir()) == []  # no database, no WAL
    data_env = {"QRELKIT_DATA": str(dl19.parent)}
    as_json = CliRunner().invoke(app, ["judge", job, "--dry-run", "--json", "--set", f"database={database}"], env=data_env)
    runs = [load for load in json.loads(as_json.stdout)["loads"] if load["kind"] == "runs"]  # the text's 34 more, every one named
    assert sorted(load["name"] for load in runs) == sorted(p.stem for p in (dl19 / "runs").iterdir() if not p.name.startswith("."))
    assert sum(load["rows"] for load in runs) == 28_171
    elsewhere = tmp_path / "no-data"
    moved = CliRunner().invoke(app, ["judge", job, "--dry-run", "--set", f"database={database}"], env={"QRELKIT_DATA": str(elsewhere)})
    assert isinstance(moved.exception, QrelkitError)
    assert str(moved.exception) == f"{job}: collection.topics: {elsewhere}/trec-dl-2019/topics.tsv not found"
