"""Pools as queries over the compact tables: the same pairs as the per-run definition
(`Run.ranking`: trec_eval order, score descending, ties by docid descending) read from the files,
and a judge run's state on its pool."""

from __future__ import annotations

import numpy as np
import pytest

from qrelkit.io import read_run
from qrelkit.judges.base import Judgment
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, write_judgments
from qrelkit.storage.pools import depth_pool, pool_state, qrels_pool

# docids whose byte order differs from any numeric or case-blind order, so ties are broken visibly
DOCIDS = ["9", "10", "a", "B", "é", "z", "Z0", "doc-1", "doc-10", "doc-2", *[f"p{i}" for i in range(20)]]


@pytest.fixture(scope="module")
def track(tmp_path_factory):
    """Three runs over five queries, scores with one decimal (many ties), written as files."""
    folder = tmp_path_factory.mktemp("pools")
    rng = np.random.default_rng(7)
    files = []
    for r in range(3):
        lines = []
        for q in range(5):
            docids = rng.choice(DOCIDS, size=int(rng.integers(5, len(DOCIDS))), replace=False)
            scores = np.round(rng.uniform(0, 2, len(docids)), 1)
            lines += [f"q{q} Q0 {d} {i} {s:.1f} run{r}" for i, (d, s) in enumerate(zip(docids, scores), start=1)]
        path = folder / f"run{r}.run"
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
    (folder / "h.qrels").write_text("q0 0 é 1\nq0 0 10 0\nq3 0 Z0 2\n")
    db = folder / "pools.duckdb"
    with Store(db) as store:
        store.load_runs(files)
        store.load_qrels(folder / "h.qrels")
    return db, files


def pool_by_hand(files, depth: int) -> list[tuple[str, str]]:
    pairs = set()
    for path in files:
        for qid, docids in read_run(path).ranking(depth=depth).items():
            pairs |= {(qid, docid) for docid in docids}
    return sorted(pairs)


@pytest.mark.parametrize("depth", [1, 2, 5, 1000])
def test_the_depth_pool_is_the_union_of_each_run_top_in_trec_eval_order(track, depth):
    db, files = track
    with Store(db, read_only=True) as store:
        assert depth_pool(store, depth) == pool_by_hand(files, depth)
        assert depth_pool(store, depth, ["run2", "run0"]) == pool_by_hand([files[0], files[2]], depth)


def test_ties_at_the_cut_are_broken_by_docid_descending(tmp_path):
    (tmp_path / "t.run").write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 c 3 1.0 t\nq1 Q0 d 4 0.5 t\n")
    with Store(tmp_path / "t.duckdb") as store:
        store.load_run(tmp_path / "t.run")
        assert depth_pool(store, 2) == [("q1", "b"), ("q1", "c")]  # c, b, a at 1.0: the file's ranks do not count
        assert depth_pool(store, 0) == []


def test_the_qrels_pool_is_the_set_pairs_sorted(track):
    db, _ = track
    with Store(db, read_only=True) as store:
        assert qrels_pool(store, "h") == [("q0", "10"), ("q0", "é"), ("q3", "Z0")]


def test_pool_state_counts_what_is_judged_and_leaves_the_rest_to_do(tmp_path, track):
    db, _ = track
    work = tmp_path / "state.duckdb"
    work.write_bytes(db.read_bytes())
    with Store(work) as store:
        pairs = depth_pool(store, 2)
        ensure_judge_run(store, JudgeRunInfo("jr1", "fixture", {}, None, None, None, None))
        write_judgments(
            store,
            "jr1",
            [
                Judgment(pairs[0][0], pairs[0][1], "ok", score=1.0),
                Judgment(pairs[1][0], pairs[1][1], "model_error", error="timeout", attempts=3),
                Judgment("q9", "elsewhere", "ok", score=0.0),  # not in the pool: not counted
            ],
        )
        state = pool_state(store, "jr1", pairs)
        assert (state.ok, state.failed) == (1, 1)
        assert state.judged == {pairs[0]: ("ok", 1), pairs[1]: ("model_error", 3)}
        assert state.todo == pairs[2:]
        assert pool_state(store, "jr1", pairs, retry_failed=True).todo == pairs[1:]
        assert pool_state(store, "nobody", pairs).todo == pairs
