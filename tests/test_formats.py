"""Every malformed input is an error that names the file and the line."""

from __future__ import annotations

import gzip
import json

import pytest
from input_files import RUN_OK, error_of, write

from qrelkit.io import (
    Qrels,
    read_documents,
    read_qrels,
    read_run,
    read_runs,
    read_topics,
    run_name_from_path,
    write_qrels,
    write_run,
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("q1 Q0 d3 3 0.5", "expected 6 columns `qid Q0 docid rank score tag`, found 5"),
        ("q1 Q0 d3 third 0.5 tag", "rank (column 4) must be an integer, found 'third'"),
        ("q1 Q0 d3 3 high tag", "score (column 5) must be a number, found 'high'"),
        ("q1 Q0 d3 3 nan tag", "score (column 5) is not finite"),
        ("q1 Q0 d1 3 0.5 tag", "duplicate run entry for qid 'q1', docid 'd1' (first on line 1)"),
    ],
)
def test_malformed_run_line_names_file_and_line(tmp_path, line, expected):
    path = write(tmp_path, "bad.run", RUN_OK + line + "\n")
    message = error_of(lambda: read_run(path))
    assert f"{path}:3: " in message
    assert expected in message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("q1 0 d3", "expected 4 columns `qid iter docid grade`, found 3"),
        ("q1 0 d3 relevant", "grade (column 4) must be an integer, found 'relevant'"),
        ("q1 0 d1 2", "duplicate judgment for qid 'q1', docid 'd1' (first on line 1)"),
    ],
)
def test_malformed_qrels_line_names_file_and_line(tmp_path, line, expected):
    path = write(tmp_path, "bad.qrels", "q1 0 d1 1\nq1 0 d2 0\n" + line + "\n")
    message = error_of(lambda: read_qrels(path))
    assert f"{path}:3: {expected}" in message


def test_non_utf8_byte_is_reported_with_line_and_column(tmp_path):
    path = write(tmp_path, "latin1.run", RUN_OK.encode() + b"q1 Q0 caf\xe9 3 0.5 tag\n")
    assert f"{path}:3: invalid UTF-8 byte 0xe9 at column 10" in error_of(lambda: read_run(path))


def test_every_bad_line_is_listed_not_only_the_first(tmp_path):
    path = write(tmp_path, "bad.qrels", "q1 0 d1 x\nq1 0 d2 1\nq1 0 d3\n")
    message = error_of(lambda: read_qrels(path))
    assert f"{path}:1:" in message and f"{path}:3:" in message


def test_empty_and_missing_files_are_named(tmp_path):
    empty = write(tmp_path, "empty.run", "\n\n")
    assert "no run entries found" in error_of(lambda: read_run(empty))
    assert "file not found" in error_of(lambda: read_run(tmp_path / "nope.run"))


def test_columns_split_on_any_whitespace(tmp_path):
    path = write(tmp_path, "mixed.run", "q1\tQ0  d1 1\t\t2.5 tag\r\nq1 Q0\td2 2 1.5   tag\n")
    run = read_run(path)
    assert [(e.docid, e.rank, e.score) for e in run.entries] == [("d1", 1, 2.5), ("d2", 2, 1.5)]


def test_run_scores_rank_as_float32_so_near_ties_become_ties(tmp_path):
    # 0.1 + 1e-10 and 0.1 differ as doubles but are the same float32, so trec_eval
    # sees a tie and breaks it by docid descending: d9 before d1 although d1 scores higher.
    # The scores themselves are kept as written (Judged@k and Compat read them so).
    path = write(tmp_path, "tie.run", "q1 Q0 d1 1 0.1000000001 t\nq1 Q0 d9 2 0.1 t\n")
    run = read_run(path)
    assert run.scores32()[0] == run.scores32()[1] and run.entries[0].score == 0.1000000001
    assert run.ranking()["q1"] == ["d9", "d1"]


@pytest.mark.parametrize(
    ("policy", "kept_score"),
    [("first", 2.0), ("last", 1.0), ("max", 3.0)],
)
def test_duplicates_resolved_by_explicit_policy(tmp_path, policy, kept_score):
    path = write(tmp_path, "dup.run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 3.0 t\nq1 Q0 d1 3 1.0 t\n")
    assert read_run(path, on_duplicate=policy).entries[0].score == kept_score


def test_gzip_runs_are_read_and_named_without_extension(tmp_path):
    path = tmp_path / "bm25.run.gz"
    path.write_bytes(gzip.compress(RUN_OK.encode()))
    run = read_run(path)
    assert run.name == "bm25" and len(run) == 2
    assert run_name_from_path("runs/TUW19-p1-f.run") == "TUW19-p1-f"


def test_two_files_with_one_run_name_are_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write(tmp_path, "a/x.run", RUN_OK)
    write(tmp_path, "b/x.txt", RUN_OK)
    assert "run name 'x' also comes from" in error_of(lambda: read_runs([tmp_path / "a", tmp_path / "b"]))


def test_run_and_qrels_round_trip(tmp_path):
    run = read_run(write(tmp_path, "r.run", "q1 Q0 d1 5 1.5 t\nq1 Q0 d2 9 2.5 t\nq2 Q0 d3 1 0.25 t\n"))
    write_run(run, tmp_path / "out.run")
    again = read_run(tmp_path / "out.run", name="r")
    assert again.scores == run.scores
    assert again.ranking() == run.ranking()
    qrels = read_qrels(write(tmp_path, "q.txt", "q1 0 d1 2\nq1 0 d2 0\n"))
    write_qrels(qrels, tmp_path / "out.qrels")
    assert isinstance(qrels, Qrels) and read_qrels(tmp_path / "out.qrels").grades == qrels.grades


# -- topics and documents ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "line", "expected"),
    [
        ("q1\tgoldfish\nq2 no tab here\n", 2, "expected `qid<TAB>query text`"),
        ("q1\tgoldfish\nq1\tagain\n", 2, "duplicate qid 'q1' (first on line 1)"),
    ],
)
def test_malformed_tsv_topics(tmp_path, content, line, expected):
    path = write(tmp_path, "topics.tsv", content)
    assert f"{path}:{line}: {expected}" in error_of(lambda: read_topics(path))


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ('{"qid": "q2", "text": ', "invalid JSON"),
        ('["q2", "text"]', "expected a JSON object per line"),
        ('{"text": "no id"}', "missing `qid`"),
        ('{"qid": "q2"}', "missing `text`"),
    ],
)
def test_malformed_jsonl_topics(tmp_path, record, expected):
    path = write(tmp_path, "topics.jsonl", '{"qid": "q1", "text": "fine"}\n' + record + "\n")
    assert f"{path}:2: {expected}" in error_of(lambda: read_topics(path))


def test_jsonl_topics_keep_extra_fields_for_templates(tmp_path):
    record = {"qid": 7, "text": "Eiffel Tower", "section_title": "History", "section_context": "Built in 1889."}
    path = write(tmp_path, "topics.jsonl", json.dumps(record) + "\n")
    topic = read_topics(path)[0]
    assert topic.qid == "7"
    assert topic.record()["section_title"] == "History" and topic.record()["query"] == "Eiffel Tower"


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ('{"docid": "d2", "text": "a", "image": "b.png"}', "expected exactly one of `text` or `image`"),
        ('{"docid": "d2"}', "expected exactly one of `text` or `image`"),
        ('{"text": "orphan"}', "missing `docid`"),
        ('{"docid": "d2", "image": "../../etc/passwd"}', "escapes the image root"),
        ('{"docid": "d2", "image": "/etc/passwd"}', "escapes the image root"),
        ('{"docid": "d1", "text": "again"}', "duplicate docid 'd1' (first on line 1)"),
    ],
)
def test_malformed_documents(tmp_path, record, expected):
    path = write(tmp_path, "docs.jsonl", '{"docid": "d1", "text": "fine"}\n' + record + "\n")
    assert f"{path}:2: " in (message := error_of(lambda: read_documents(path)))
    assert expected in message


def test_image_documents_resolve_against_the_declared_root(tmp_path):
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "a.png").write_bytes(b"not really a png")
    path = write(tmp_path, "docs.jsonl", '{"docid": "i1", "image": "a.png", "caption": "x"}\n')
    doc = read_documents(path, image_root=tmp_path / "imgs")[0]
    assert doc.modality == "image" and doc.image_path == tmp_path / "imgs" / "a.png"
    assert doc.fields == {"caption": "x"} and len(doc.content_hash()) == 64
