"""The command line's edges (issue 13, class 8): each ends in one line and exit code 2, and leaves
what is stored as it was."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from hostile import one_error, qrelkit, snapshot

from qrelkit.errors import StoreError
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, judge_run


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish\n")
    (tmp_path / "docs.jsonl").write_text(json.dumps({"docid": "d1", "text": "goldfish"}) + "\n")
    with Store(tmp_path / "x.duckdb") as store:
        store.load_topics(tmp_path / "topics.tsv")
    return tmp_path


def test_missing_files_folders_and_memory_databases_are_one_line_each(folder):
    db = folder / "x.duckdb"
    before = snapshot(db)
    cases = [
        (("load", "docs", "nope.jsonl", "--db", db), "error: nope.jsonl: file not found"),
        (("load", "docs", ".", "--db", db), "error: .: is a directory, expected a file"),
        (
            ("load", "topics", "topics.tsv", "--db", ":memory:"),
            "error: --db ':memory:': an in-memory database keeps nothing; name a database file",
        ),
        (("load", "topics", "topics.tsv", "--db", "."), "error: database . is a directory; name a database file"),
    ]
    for args, expected in cases:
        assert one_error(qrelkit(*args, cwd=folder), 2) == expected
    assert snapshot(db) == before


def test_a_foreign_duckdb_file_is_refused_and_left_alone(folder):
    foreign = folder / "other.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE topics (id INTEGER, title TEXT)")
    con.execute("INSERT INTO topics VALUES (1, 'mine')")
    con.close()
    before = snapshot(foreign)
    error = one_error(qrelkit("load", "topics", "topics.tsv", "--db", "other.duckdb", cwd=folder), 2)
    assert error == "error: other.duckdb is a DuckDB database, but not a qrelkit one (it holds topics); name another --db"
    assert one_error(qrelkit("show", "--db", "other.duckdb", cwd=folder), 2) == error
    (folder / "text.duckdb").write_text("not a database at all\n")
    assert one_error(qrelkit("show", "--db", "text.duckdb", cwd=folder), 2).startswith("error: cannot open database text.duckdb:")
    assert snapshot(foreign) == before


def test_an_unwritable_output_path_is_named_before_any_work(folder):
    with Store(folder / "x.duckdb") as store:
        store.load_qrels(_qrels(folder), name="human")
    (folder / "plain").write_text("a file, not a folder\n")
    for output, reason in (("out", "it is a directory"), ("plain/qrels.txt", "plain is not a folder")):
        (folder / "out").mkdir(exist_ok=True)
        error = one_error(qrelkit("export", "qrels", output, "--name", "human", "--db", "x.duckdb", cwd=folder), 2)
        assert error == f"error: cannot write {output}: {reason}"


def _qrels(folder: Path) -> Path:
    (folder / "human.qrels").write_text("q1 0 d1 1\n")
    return folder / "human.qrels"


def test_a_judge_run_reference_is_literal_never_a_pattern(folder):
    with Store(folder / "x.duckdb") as store:
        ensure_judge_run(store, JudgeRunInfo("abc123def4567890", "length", {}, None, None, None, "m"))
        for pattern in ("%", "_", "abc%", "a_c"):
            with pytest.raises(StoreError, match="no judge run matches"):
                judge_run(store, pattern)
        assert judge_run(store, "abc1").judge_run_id == "abc123def4567890"
    error = one_error(qrelkit("grade", "--judge-run", "%", "--db", "x.duckdb", cwd=folder), 2)
    assert error.startswith("error: no judge run matches '%' in x.duckdb")


def test_a_folder_of_runs_with_a_bad_fourth_file_loads_none_of_them(folder):
    runs = folder / "runs"
    runs.mkdir()
    for i in range(1, 5):
        (runs / f"r{i}.run").write_text(f"q1 Q0 d1 1 {i}.0 r{i}\n" if i != 4 else "q1 Q0 d1 one 1.0 r4\n")
    db = folder / "x.duckdb"
    before = snapshot(db)
    error = one_error(qrelkit("load", "runs", "runs", "--db", db, cwd=folder), 2)
    assert error == "error: runs/r4.run:1: rank (column 4) must be an integer, found 'one'"
    assert snapshot(db) == before


def test_a_job_whose_run_folder_has_a_bad_file_loads_nothing_at_all(folder):
    import yaml

    runs = folder / "runs"
    runs.mkdir()
    for i in range(1, 5):
        (runs / f"r{i}.run").write_text(f"q1 Q0 d1 1 {i}.0 r{i}\n" if i != 4 else "q1 Q0 d1 1\n")
    job = {
        "database": "fresh.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl", "runs": ["runs"]},
        "pool": {"depth": 1},
        "judge": {"name": "hostile_judges:LengthJudge"},
        "allow_import": True,
    }
    (folder / "job.yaml").write_text(yaml.safe_dump(job))
    error = one_error(qrelkit("judge", "job.yaml", "--quiet", "--allow-import", cwd=folder), 2)
    assert error.startswith("error: ") and "runs/r4.run:1: expected 6 columns" in error
    tables = snapshot(folder / "fresh.duckdb")
    assert all(not rows for name, rows in tables.items() if name != "meta")  # topics and documents did not land either
