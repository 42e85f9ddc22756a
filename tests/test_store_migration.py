"""Migration 6 on a database written by the previous release (schema version 5: text keys, DOUBLE
scores, one row per entry with its names). tests/data/store_v5/make_fixture.py wrote the database
and what that release read back from it (expected.json); the migrated database must read back the
same entries, scores to the bit, and evaluate to the same numbers."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from qrelkit.evaluate.metrics import evaluate_runs
from qrelkit.storage import SCHEMA_VERSION, Store
from qrelkit.storage.pools import depth_pool, qrels_pool

FIXTURE = Path(__file__).parent / "data" / "store_v5"
MEASURES = ["nDCG@10", "AP(rel=2)", "P@2", "RR"]


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads((FIXTURE / "expected.json").read_text())


@pytest.fixture
def v5_db(tmp_path) -> Path:
    db = tmp_path / "v5.duckdb"
    with gzip.open(FIXTURE / "v5.duckdb.gz", "rb") as source, db.open("wb") as target:
        shutil.copyfileobj(source, target)
    return db


def column_types(store: Store, table: str) -> dict[str, str]:
    return column_types_of(store.con, table)


def column_types_of(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    rows = con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()
    return dict(rows)


def test_the_fixture_is_a_version_5_database(v5_db, expected):
    assert expected["schema_version"] == 5
    with duckdb.connect(str(v5_db), read_only=True) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("5",)
        assert column_types_of(con, "run_entries")["score"] == "DOUBLE"


def test_migration_6_makes_the_entry_tables_compact(v5_db):
    with Store(v5_db) as store:
        # 6, 7 (a judge run's qrels set, its sample), 8 (input hashes), 9 (probes), 10 (designs)
        assert store.schema_version() == SCHEMA_VERSION == 10
        assert column_types(store, "run_entries") == {
            "run_id": "INTEGER",
            "qid_id": "INTEGER",
            "docid_id": "INTEGER",
            "rank": "INTEGER",
            "score": "FLOAT",
        }
        assert column_types(store, "qrels") == {
            "qrels_set_id": "INTEGER",
            "qid_id": "INTEGER",
            "docid_id": "INTEGER",
            "grade": "INTEGER",
            "iteration": "VARCHAR",
        }
        # every name is in its lookup table once, and every entry finds its names
        assert store.con.execute("SELECT count(*), count(DISTINCT qid), count(DISTINCT qid_id) FROM qids").fetchone() == (3, 3, 3)
        assert store.con.execute("SELECT count(*), count(DISTINCT docid) FROM docids").fetchone() == (7, 7)
        orphans = store.con.execute(
            "SELECT count(*) FROM run_entries e ANTI JOIN qids USING (qid_id) UNION ALL "
            "SELECT count(*) FROM run_entries e ANTI JOIN docids USING (docid_id) UNION ALL "
            "SELECT count(*) FROM run_entries e ANTI JOIN runs USING (run_id)"
        ).fetchall()
        assert orphans == [(0,), (0,), (0,)]


def test_runs_qrels_and_judgments_read_back_as_the_previous_release_read_them(v5_db, expected):
    with Store(v5_db) as store:
        runs = store.runs()
        assert {run.name: {"tag": run.tag, "rows": run.table.to_pylist()} for run in runs} == expected["runs"]
        assert dict(store.con.execute("SELECT name, run_group FROM runs").fetchall()) == expected["run_groups"]
        assert {name: store.qrels(name).table.to_pylist() for name in store.qrels_names()} == expected["qrels"]
        judgments = store.con.execute(
            "SELECT qid, docid, status, score, parsed, expected, raw_output FROM judgments ORDER BY qid, docid"
        ).fetchall()
        assert [list(row) for row in judgments] == expected["judgments"]
        assert [list(line) for line in store.summary()] == expected["summary"]
        # float32 to the bit: 12.345678901 in the file is 12.34567928314209 as a float32, then and now
        bm25 = {(row["qid"], row["docid"]): row for row in expected["runs"]["bm25"]["rows"]}
        assert bm25[("q1", "d1")]["score"] == 12.34567928314209 and bm25[("q1", "d4")]["rank"] == 7


def test_the_migrated_runs_evaluate_to_the_previous_release_numbers(v5_db, expected):
    with Store(v5_db) as store:
        evaluation = evaluate_runs(store.qrels("human"), store.runs(), MEASURES).to_dict(per_query=True)
    before = expected["evaluation"]
    for run, means in before["runs"].items():
        assert evaluation["runs"][run] == pytest.approx(means, rel=1e-12), run
    for run, measures in before["per_query"].items():
        for measure, per_query in measures.items():
            assert evaluation["per_query"][run][measure] == pytest.approx(per_query, rel=1e-12), (run, measure)


def test_pools_over_the_migrated_tables_are_the_pools_of_the_entries(v5_db, expected):
    with Store(v5_db) as store:
        by_hand = set()
        for run in expected["runs"].values():
            per_query: dict[str, list[dict]] = {}
            for row in run["rows"]:
                per_query.setdefault(row["qid"], []).append(row)
            for rows in per_query.values():  # trec_eval order: score descending, ties by docid descending
                ranked = sorted(rows, key=lambda r: (r["score"], r["docid"]), reverse=True)
                by_hand |= {(r["qid"], r["docid"]) for r in ranked[:1]}
        assert depth_pool(store, 1) == sorted(by_hand)
        # q1's tie at 12.3456...: d2 beats d1 on docid descending, whatever the file's ranks say
        assert ("q1", "d2") in by_hand and ("q1", "d1") not in {p for p in by_hand if p[0] == "q1"}
        assert qrels_pool(store, "human") == sorted((row["qid"], row["docid"]) for row in expected["qrels"]["human"])


def test_a_migrated_database_takes_new_loads_and_reloads_nothing_unchanged(v5_db, expected, tmp_path):
    extra = tmp_path / "extra.run"
    extra.write_text("q1 Q0 d9 1 5.5 x\nq3 Q0 d1 1 4.5 x\n")
    with Store(v5_db) as store:
        assert store.load_run(FIXTURE / "bm25.run").status == "unchanged"
        assert store.load_qrels(FIXTURE / "human.qrels").status == "unchanged"
        assert store.load_run(extra).rows == 2
        ids = dict(store.con.execute("SELECT name, run_id FROM runs").fetchall())
        assert len(set(ids.values())) == 3  # the new run got an id of its own
        assert store.run("extra").table.to_pylist() == [
            {"qid": "q1", "docid": "d9", "rank": 1, "score": 5.5},
            {"qid": "q3", "docid": "d1", "rank": 1, "score": 4.5},
        ]
        assert {run.name: {"tag": run.tag, "rows": run.table.to_pylist()} for run in store.runs(["bm25", "dense"])} == expected["runs"]
        # d1 keeps its one id; q3 and d9 are new
        assert store.con.execute("SELECT count(*) FROM docids WHERE docid = 'd1'").fetchone() == (1,)
        assert store.con.execute("SELECT count(*) FROM qids").fetchone() == (4,)


def test_a_version_5_database_opened_to_be_read_is_upgraded_once_then_read(v5_db, expected):
    with Store(v5_db, read_only=True) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.run("dense").table.to_pylist() == expected["runs"]["dense"]["rows"]


def test_an_old_database_another_process_holds_is_named_and_left_as_it_was(v5_db):
    """Opened to be read while another process has it open: the upgrade cannot take the write lock;
    the message says why and what to do, and the file is still the old release's."""
    import subprocess
    import sys

    from qrelkit.errors import QrelkitError

    before = v5_db.read_bytes()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); print('held', flush=True); time.sleep(60)",
            str(v5_db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(QrelkitError) as raised:
            Store(v5_db, read_only=True)
    finally:
        holder.kill()
        holder.wait()
    message = str(raised.value)
    assert f"database {v5_db} has schema version 5" in message and "must be upgraded" in message
    assert v5_db.read_bytes() == before
    with Store(v5_db, read_only=True) as store:  # once the other process is gone, it upgrades
        assert store.schema_version() == SCHEMA_VERSION
