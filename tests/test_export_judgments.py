"""`qrelkit export judgments OUT.{parquet,csv,jsonl}`: every stored field, read back equal."""

from __future__ import annotations

import json
import math

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import QrelkitError
from qrelkit.judges import Judgment
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, write_judgments

runner = CliRunner()
ANSWER = 'The passage, "as quoted", answers it.\nRelevance: 2'  # a comma, quotes and a newline: CSV must quote it


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "j.duckdb"
    with Store(path) as store:
        for run_id, judge in (("aaaa1111", "openai"), ("bbbb2222", "llamacpp")):
            ensure_judge_run(store, JudgeRunInfo(run_id, judge, {"model": "m"}, "trec-dl-graded", "h" * 64, {"id": "t"}, "model-x"))
        ok = Judgment("q1", "d1", "ok", score=1.75, parsed=2.0, expected=1.75, raw_output=ANSWER, tokens_in=812, tokens_out=9)
        ok.latency_ms, ok.cost, ok.attempts, ok.model_id, ok.system_fingerprint = 412.5, 0.00123, 2, "gpt-4o-2024-08-06", "fp_abc"
        failed = Judgment("q1", "d2", "parse_error", raw_output="I cannot tell.", error="no match for the score pattern")
        write_judgments(store, "aaaa1111", [ok, failed])
        write_judgments(store, "bbbb2222", [Judgment("q2", "d3", "ok", score=0.0, parsed=0.0)])
        stored = store.con.execute("SELECT * FROM judgments ORDER BY judge_run_id, qid, docid").fetchall()
        columns = [d[0] for d in store.con.description]
    return path, columns, stored


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b)
    return a == b


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_every_stored_field_of_a_judge_run_is_exported(db, tmp_path, suffix):
    path, columns, stored = db
    out = tmp_path / f"judgments{suffix}"
    result = runner.invoke(app, ["export", "judgments", str(out), "--judge-run", "aaaa", "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert f"wrote 2 judgments of 1 judge run(s) (aaaa1111) to {out}" in result.output
    if suffix == ".parquet":
        rows = pq.read_table(out).to_pylist()
    elif suffix == ".csv":
        rows = pacsv.read_csv(out, convert_options=pacsv.ConvertOptions(strings_can_be_null=True)).to_pylist()
    else:
        rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert list(rows[0]) == columns + ["judge", "template_id"]  # the table's own columns, then the run's
    expected = [dict(zip(columns, row)) for row in stored if row[0] == "aaaa1111"]
    for got, want in zip(rows, expected, strict=True):
        for column in columns:
            if column == "judged_at":
                assert str(got[column]).replace("T", " ").startswith(str(want[column])[:19])
            else:
                assert same(got[column], want[column]), (column, got[column], want[column])
        assert got["judge"] == "openai" and got["template_id"] == "trec-dl-graded"
    assert rows[0]["raw_output"] == ANSWER and rows[1]["score"] is None and rows[1]["error"] == "no match for the score pattern"


def test_without_a_judge_run_every_run_is_exported(db, tmp_path):
    path, _, stored = db
    result = runner.invoke(app, ["export", "judgments", str(tmp_path / "all.jsonl"), "--db", str(path)])
    assert "wrote 3 judgments of 2 judge run(s) (aaaa1111, bbbb2222)" in result.output
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == len(stored) == 3


def test_an_unknown_suffix_names_the_formats(db, tmp_path):
    with pytest.raises(QrelkitError, match=r"judgments.xlsx: write .parquet, .csv or .jsonl"):
        runner.invoke(app, ["export", "judgments", str(tmp_path / "judgments.xlsx"), "--db", str(db[0])], catch_exceptions=False)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv"])
def test_an_export_shows_its_progress_in_the_runs_rows(db, tmp_path, suffix, monkeypatch):
    """DuckDB's COPY writes Parquet and JSON Lines (its own progress, polled, is the export's),
    qrelkit the CSV a batch at a time: counted in the rows of the run asked for (2 of aaaa's, not
    the database's 3)."""
    monkeypatch.setenv("QRELKIT_PROGRESS_SECONDS", "0")  # a line at every report
    out = tmp_path / f"judgments{suffix}"
    result = runner.invoke(app, ["export", "judgments", str(out), "--judge-run", "aaaa", "--db", str(db[0])])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(f"exporting judgments to {out.name}: ")]
    assert lines and lines[-1].startswith(f"exporting judgments to {out.name}: 2/2 rows (100.0%)"), result.output


def test_a_csv_written_a_batch_at_a_time_is_the_csv_of_the_whole_table(db, tmp_path):
    """One row a batch: the same bytes as the whole table written at once (one header, every cell
    quoted and formula-safe as before), and the progress hears every batch."""
    from qrelkit.io.tables import write_table
    from qrelkit.storage.judgments import export_judgments, judgments_table

    with Store(db[0]) as store:
        store.con.execute("UPDATE judgments SET raw_output = '=HYPERLINK(1)' WHERE docid = 'd3'")
        heard: list[tuple[int, int]] = []
        rows, runs = export_judgments(
            store, tmp_path / "batched.csv", "csv", progress=lambda done, total: heard.append((done, total)), batch_rows=1
        )
        write_table(judgments_table(store), tmp_path / "whole.csv")
    assert (rows, runs) == (3, ["aaaa1111", "bbbb2222"]) and heard == [(1, 3), (2, 3), (3, 3)]
    assert (tmp_path / "batched.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    assert "'=HYPERLINK(1)" in (tmp_path / "batched.csv").read_text()
