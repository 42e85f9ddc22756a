"""Stored runs read back in one pass (storage.entries.StoredRuns, issue 29): each run's entries
named and ordered as the per-run join ordered them, qid then rank then docid in byte order,
whatever order the file had and however its ranks tie."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.io import read_run
from qrelkit.storage import Store

LINES = [  # unsorted; qid "10" sorts before "9" as text; ranks tie within q9 and within q10
    "9 Q0 dB 2 0.5 t",
    "10 Q0 d9 1 3.25 t",
    "9 Q0 dA 2 0.5 t",
    "9 Q0 dC 1 0.75 t",
    "10 Q0 d10 1 3.25 t",
    "10 Q0 d2 3 -1.5 t",
]


@pytest.fixture
def stored(tmp_path):
    (tmp_path / "a.run").write_text("\n".join(LINES) + "\n")
    (tmp_path / "b.run").write_text("".join(f"q{q} Q0 d{d} {d + 1} {10 - d}.0 u\n" for q in range(3) for d in range(4)))
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        store.load_runs([tmp_path / "a.run", tmp_path / "b.run"])
    return tmp_path, db


def test_a_stored_run_comes_back_in_qid_rank_docid_order_with_its_values(stored):
    folder, db = stored
    with Store(db, read_only=True) as store:
        run = store.run("a")
    got = list(zip(*(run.table.column(c).to_pylist() for c in ("qid", "docid", "rank", "score"))))
    want = sorted(((q, d, int(r), float(s)) for q, _, d, r, s, _ in (line.split() for line in LINES)), key=lambda e: (e[0], e[2], e[1]))
    assert got == want
    assert [e[:2] for e in got] == [("10", "d10"), ("10", "d9"), ("10", "d2"), ("9", "dC"), ("9", "dA"), ("9", "dB")]


def test_runs_read_one_at_a_time_equal_the_runs_read_together_and_the_files(stored):
    folder, db = stored
    with Store(db, read_only=True) as store:
        together = store.runs()
        one_by_one = list(store.iter_runs(["b", "a"]))
    assert [r.name for r in one_by_one] == ["b", "a"]
    assert {r.name: r.table for r in together} == {r.name: r.table for r in one_by_one}
    from_file = read_run(folder / "b.run")
    assert from_file.table.equals(one_by_one[0].table)  # the file is sorted already


def test_evaluate_of_stored_runs_equals_evaluate_of_their_files(stored):
    folder, db = stored
    (folder / "q.txt").write_text("9 0 dA 2\n9 0 dC 0\n10 0 d2 1\n10 0 d9 2\nq1 0 d3 1\nq2 0 d0 2\n")
    common = ["evaluate", "--qrels", str(folder / "q.txt"), "--measure", "nDCG@10", "--measure", "AP", "--json"]
    from_db = CliRunner().invoke(app, [*common, "--db", str(db)])
    from_files = CliRunner().invoke(app, [*common, "--runs", str(folder / "a.run"), "--runs", str(folder / "b.run")])
    assert from_db.exit_code == 0 and from_files.exit_code == 0, from_db.output + from_files.output
    assert json.loads(from_db.output)["runs"] == json.loads(from_files.output)["runs"]
