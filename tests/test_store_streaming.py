"""Loads that stream: with blocks of 64 bytes a run file arrives as many blocks, staged one by one,
so a bad line or a repeat far from the first block is met after earlier blocks were written to the
stage. The error still names the file and line, and the database is as it was."""

from __future__ import annotations

import pytest

from qrelkit.errors import InputFormatError, StoreError
from qrelkit.io import lines
from qrelkit.io.columnar import iter_run_blocks
from qrelkit.storage import Store


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(lines, "BLOCK", 64)


def run_lines(qid: str, n: int, tag: str = "t") -> list[str]:
    return [f"{qid} Q0 d{i} {i} {100 - i}.5 {tag}" for i in range(1, n + 1)]


def counts(store: Store) -> tuple[int, int, int]:
    tables = ("runs", "run_entries", "loads")
    row = store.con.execute("SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in tables)).fetchone()
    assert row is not None
    return row


def test_a_run_of_many_blocks_reads_back_line_for_line(tmp_path):
    text = run_lines("q1", 40) + run_lines("q2", 40)
    (tmp_path / "big.run").write_text("\n".join(text) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        assert store.load_run(tmp_path / "big.run").rows == 80
        rows = store.run("big").table.to_pylist()
    assert [f"{r['qid']} Q0 {r['docid']} {r['rank']} {r['score']} t" for r in rows] == text
    assert len(list(iter_run_blocks(tmp_path / "big.run"))) > 20  # it came as many blocks


def test_a_bad_line_in_a_late_block_is_named_and_nothing_lands(tmp_path):
    (tmp_path / "good.run").write_text("\n".join(run_lines("q1", 5)) + "\n")
    text = run_lines("q1", 60)
    text[57] = "q1 Q0 d58 58 not-a-score t"
    (tmp_path / "late.run").write_text("\n".join(text) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        store.load_run(tmp_path / "good.run")
        before = counts(store)
        with pytest.raises(InputFormatError, match=r"late.run:58: .*score"):
            store.load_runs([tmp_path / "good.run", tmp_path / "late.run"], replace=True)
        assert counts(store) == before
        assert store.run("good").table.num_rows == 5


def test_a_pair_repeated_blocks_apart_is_named_with_both_lines(tmp_path):
    text = run_lines("q1", 50)
    text.append("q1 Q0 d3 51 0.25 t")  # d3 is line 3, forty-eight lines (many blocks) before
    (tmp_path / "rep.run").write_text("\n".join(text) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises(InputFormatError, match=r"rep.run:51: duplicate .*'q1', docid 'd3' \(first on line 3\)"):
            store.load_run(tmp_path / "rep.run")
        assert counts(store) == (0, 0, 0)
        kept = store.load_run(tmp_path / "rep.run", on_duplicate="last")
        assert kept.rows == 50
        scores = {(r["qid"], r["docid"]): r["score"] for r in store.run("rep").table.to_pylist()}
    assert scores[("q1", "d3")] == 0.25 and len(scores) == 50


def test_tags_from_every_block_are_kept(tmp_path):
    (tmp_path / "tags.run").write_text("\n".join(run_lines("q1", 30, "a") + run_lines("q2", 30, "b")) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        store.load_run(tmp_path / "tags.run")
        assert store.run("tags").tag == "a,b"


def test_a_grade_beyond_32_bits_is_named_with_its_line(tmp_path):
    text = [f"q1 0 d{i} 1" for i in range(40)] + ["q1 0 big 2147483648"]
    (tmp_path / "wide.qrels").write_text("\n".join(text) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises((InputFormatError, StoreError), match=r"wide.qrels:41: .*grade"):
            store.load_qrels(tmp_path / "wide.qrels")
        assert store.qrels_names() == []
