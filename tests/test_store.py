"""The DuckDB store: idempotent loads, atomic loads under SIGKILL, one writer at a time."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from qrelkit.errors import DatabaseInUseError, InputFormatError, StoreError
from qrelkit.storage import SCHEMA_VERSION, Store

RUN = "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d3 1 0.5 t\n"


def table_counts(db) -> dict[str, int]:
    with Store(db, read_only=True) as store:
        tables = ["loads", "topics", "documents", "runs", "run_entries", "qrels_sets", "qrels"]
        return {t: store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "bm25.run").write_text(RUN)
    (tmp_path / "human.qrels").write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n")
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish growth\nq2\twifi vs bluetooth\n")
    (tmp_path / "docs.jsonl").write_text(
        '{"docid": "d1", "text": "Goldfish grow."}\n{"docid": "d2", "text": "Cats."}\n{"docid": "d3", "text": "Radio."}\n'
    )
    return tmp_path


def test_a_new_database_gets_the_current_schema_version(tmp_path):
    with Store(tmp_path / "q.duckdb") as store:
        assert store.schema_version() == SCHEMA_VERSION


def test_a_database_from_a_newer_qrelkit_is_refused(tmp_path):
    db = tmp_path / "q.duckdb"
    with Store(db) as store:
        store.con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema version 999, newer than this qrelkit"):
        Store(db)


def test_loading_the_same_files_twice_changes_nothing(files):
    db = files / "q.duckdb"
    with Store(db) as store:
        store.load_topics(files / "topics.tsv")
        store.load_documents(files / "docs.jsonl")
        store.load_run(files / "bm25.run")
        store.load_qrels(files / "human.qrels")
    before = table_counts(db)
    with Store(db) as store:
        results = [
            store.load_topics(files / "topics.tsv"),
            store.load_documents(files / "docs.jsonl"),
            store.load_run(files / "bm25.run"),
            store.load_qrels(files / "human.qrels"),
        ]
    assert {r.status for r in results} == {"unchanged"}
    assert table_counts(db) == before
    assert before["run_entries"] == 3 and before["qrels"] == 3 and before["loads"] == 4


def test_a_changed_file_under_the_same_name_needs_replace(files):
    db = files / "q.duckdb"
    with Store(db) as store:
        store.load_run(files / "bm25.run")
    (files / "bm25.run").write_text(RUN + "q3 Q0 d9 1 0.1 t\n")
    with Store(db) as store:
        with pytest.raises(StoreError, match="runs 'bm25' is already loaded .* Pass --replace"):
            store.load_run(files / "bm25.run")
        assert len(store.run("bm25")) == 3
        assert store.load_run(files / "bm25.run", replace=True).status == "replaced"
        assert len(store.run("bm25")) == 4


def test_a_malformed_file_loads_nothing_and_keeps_what_was_there(files):
    db = files / "q.duckdb"
    with Store(db) as store:
        store.load_qrels(files / "human.qrels")
    (files / "human.qrels").write_text("q1 0 d1 2\nq1 0 d2\n")
    with Store(db) as store:
        with pytest.raises(InputFormatError, match="human.qrels:2: expected 4 columns"):
            store.load_qrels(files / "human.qrels", replace=True)
        assert len(store.qrels("human")) == 3


def test_a_load_killed_before_commit_leaves_the_database_as_before(files):
    db = files / "q.duckdb"
    with Store(db) as store:
        store.load_run(files / "bm25.run")
    before = table_counts(db)
    big = "".join(f"q{q} Q0 d{d} {d + 1} {1000 - d} t\n" for q in range(50) for d in range(200))
    (files / "big.run").write_text(big)
    for point in ("mid-load", "before-commit"):
        script = textwrap.dedent(
            f"""
            from qrelkit.storage import Store
            with Store({str(db)!r}) as store:
                store.load_run({str(files / "big.run")!r})
            """
        )
        env = {**os.environ, "QRELKIT_CRASH_AT": point}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
        assert result.returncode == -9, result.stderr.decode()  # really killed, mid-transaction
        assert table_counts(db) == before
        with Store(db, read_only=True) as store:
            assert store.run_names() == ["bm25"]
    with Store(db) as store:  # and the same load goes through afterwards
        assert store.load_run(files / "big.run").rows == 10_000


def test_a_second_writer_is_told_which_process_holds_the_database(tmp_path):
    db = tmp_path / "q.duckdb"
    Store(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from qrelkit.storage import Store; s = Store({str(db)!r}); print('ready', flush=True); import time; time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(DatabaseInUseError, match=f"is in use by process {holder.pid} "):
            Store(db)
    finally:
        holder.kill()
        holder.wait()
    deadline = time.time() + 10
    while True:  # the lock goes with the process
        try:
            Store(db).close()
            break
        except DatabaseInUseError:
            assert time.time() < deadline
            time.sleep(0.1)


def test_topics_from_two_files_may_not_claim_one_qid(files):
    (files / "more.tsv").write_text("q2\tanother text\n")
    with Store(files / "q.duckdb") as store:
        store.load_topics(files / "topics.tsv")
        with pytest.raises(StoreError, match="topics already loaded from another file: 'q2' \\(from 'topics'\\)"):
            store.load_topics(files / "more.tsv")


def test_unknown_names_list_what_exists(files):
    with Store(files / "q.duckdb") as store:
        store.load_run(files / "bm25.run")
        with pytest.raises(StoreError, match=r"no run named .bm26. in .*\(loaded runs: bm25\)"):
            store.run("bm26")
        with pytest.raises(StoreError, match="qrels sets: none"):
            store.qrels("human")


def test_runs_read_back_exactly(files):
    from qrelkit.io import read_run

    with Store(files / "q.duckdb") as store:
        store.load_run(files / "bm25.run")
        stored = store.run("bm25")
    original = read_run(files / "bm25.run")
    assert stored.scores == original.scores and stored.ranking() == original.ranking()
