"""Hostile input (issue 13, classes 1-3) for topics, documents, scores and the JSON/YAML readers:
numbers that do not fit, compressed and huge input, text that is not text. Each case ends in one
message naming the file and line, the command exits 2, and nothing stored changes. (Runs and
qrels have their own reader and tests.)"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hostile import one_error, qrelkit, snapshot

from qrelkit.errors import InputFormatError
from qrelkit.io.collection import read_documents, read_topics
from qrelkit.io.scores import read_scores
from qrelkit.jobs.spec import JobError, load_job
from qrelkit.prompts import TemplateError, load_template
from qrelkit.storage import Store
from qrelkit.storage.judgments import import_scores


@pytest.fixture
def db(tmp_path) -> Path:
    """A database holding a topic, a document and an imported score set, to show nothing changes."""
    (tmp_path / "good.tsv").write_text("q1\tgoldfish\n")
    (tmp_path / "good.jsonl").write_text(json.dumps({"docid": "d1", "text": "goldfish grow"}) + "\n")
    (tmp_path / "good.scores").write_text("q1 d1 0.5\n")
    path = tmp_path / "x.duckdb"
    with Store(path) as store:
        store.load_topics(tmp_path / "good.tsv")
        store.load_documents(tmp_path / "good.jsonl")
        import_scores(store, read_scores(tmp_path / "good.scores"), name="s")
    return path


def load_refused(db: Path, load) -> str:
    """The message of a load that is refused, after checking that it left the database as it was."""
    before = snapshot(db)
    with Store(db) as store, pytest.raises(InputFormatError) as caught:
        load(store)
    assert snapshot(db) == before
    return str(caught.value)


def refused(call) -> str:
    with pytest.raises(InputFormatError) as caught:
        call()
    return str(caught.value)


# -- 1. numbers that do not fit ----------------------------------------------------------------


@pytest.mark.parametrize(
    "line, message",
    [
        ("q1 d2 1_000", "scores.txt:2: score (column 3) must be a decimal number (ASCII digits), found '1_000'"),
        ("q1 d2 ١٢", "scores.txt:2: score (column 3) must be a decimal number (ASCII digits), found '١٢'"),
        ("q1 d2 ０.５", "scores.txt:2: score (column 3) must be a decimal number (ASCII digits), found '０.５'"),
        ("q1 d2 inf", "scores.txt:2: score (column 3) must be a decimal number (ASCII digits), found 'inf'"),
        # finite in float64 (Python's float takes it) but not as the float32 scores are evaluated at
        ("q1 d2 3.5e38", "scores.txt:2: score (column 3) '3.5e38' is not finite as a 32-bit float"),
    ],
)
def test_a_score_that_does_not_fit_is_refused_with_file_and_line(tmp_path, line, message):
    (tmp_path / "scores.txt").write_text(f"q1 d1 0.5\n{line}\n")
    assert message in refused(lambda: read_scores(tmp_path / "scores.txt"))


def test_the_largest_float32_is_a_score_and_the_next_rounding_step_is_not(tmp_path):
    # 3.4028235e38 rounds to float32's largest value; 3.4028236e38 rounds to infinity
    (tmp_path / "ok.txt").write_text("q1 d1 3.4028235e38\n")
    assert read_scores(tmp_path / "ok.txt").entries == [("q1", "d1", 3.4028235e38)]
    (tmp_path / "over.txt").write_text("q1 d1 3.4028236e38\n")
    assert "over.txt:1: score (column 3) '3.4028236e38' is not finite as a 32-bit float" in refused(
        lambda: read_scores(tmp_path / "over.txt")
    )


def test_a_grade_beyond_64_bits_is_refused_and_nothing_stored_changes(tmp_path, db):
    (tmp_path / "big.qrels").write_text("q1 0 d1 2\nq1 0 d2 99999999999999999999\nq1 0 d3 9223372036854775807\n")
    before = snapshot(db)
    error = one_error(qrelkit("import", "scores", "big.qrels", "--name", "big", "--db", db, cwd=tmp_path), 2)
    assert "big.qrels:2: grade (column 4) '99999999999999999999' is beyond the 64-bit integer range" in error
    assert "big.qrels:3" not in error  # 2**63 - 1 fits
    assert snapshot(db) == before


def test_grading_flags_take_ascii_numbers_only(tmp_path, db):
    for flag, value in (("--quantiles", "0.5,0.７5"), ("--thresholds", "0_5"), ("--labels", "0,١,2")):
        error = one_error(qrelkit("grade", "--judge-run", "s", flag, value, "--db", db, cwd=tmp_path), 2)
        assert f"{flag}: expected comma-separated" in error


def test_a_json_number_beyond_float_range_is_refused(tmp_path):
    (tmp_path / "docs.jsonl").write_text('{"docid": "d1", "text": "x"}\n{"docid": "d2", "text": "y", "rank": 1e400}\n')
    assert "docs.jsonl:2: a number that is not finite (inf) in rank" in refused(lambda: read_documents(tmp_path / "docs.jsonl"))


# -- 2. compressed and huge input --------------------------------------------------------------


def test_a_truncated_gzip_names_file_and_line_and_loads_nothing(tmp_path, db):
    data = gzip.compress("".join(f"q{i}\tquery {i}\n" for i in range(2, 20000)).encode())
    (tmp_path / "topics.tsv.gz").write_bytes(data[: len(data) // 2])
    error = load_refused(db, lambda store: store.load_topics(tmp_path / "topics.tsv.gz", name="good", replace=True))
    assert "topics.tsv.gz:" in error and "the gzip data is truncated" in error
    line = int(error.split("topics.tsv.gz:")[1].split(":")[0])
    assert 1000 < line < 20000  # the line being read when the data ended


def test_a_corrupt_gzip_is_one_message_not_a_zlib_traceback(tmp_path):
    data = bytearray(gzip.compress("".join(f"q{i}\tquery {i}\n" for i in range(20000)).encode()))
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "topics.tsv.gz").write_bytes(bytes(data))
    assert "corrupt gzip data" in refused(lambda: read_topics(tmp_path / "topics.tsv.gz"))


def test_a_gzip_of_several_members_is_read_whole(tmp_path):
    (tmp_path / "topics.tsv.gz").write_bytes(gzip.compress(b"q1\tfirst\n") + gzip.compress(b"q2\tsecond\n"))
    assert [t.qid for t in read_topics(tmp_path / "topics.tsv.gz")] == ["q1", "q2"]


def test_millions_of_bad_lines_keep_the_first_50_and_count_the_rest(tmp_path):
    (tmp_path / "topics.tsv").write_text("no tab here\n" * 200_000)
    with pytest.raises(InputFormatError) as caught:
        read_topics(tmp_path / "topics.tsv")
    assert len(caught.value.problems) == 50 and caught.value.omitted == 199_950
    assert str(caught.value).endswith(f"... and 199990 more problem(s) in {tmp_path / 'topics.tsv'}")  # 10 shown


def test_a_line_beyond_the_cap_is_a_problem_of_its_line_not_a_memory_spike(tmp_path, monkeypatch):
    monkeypatch.setenv("QRELKIT_MAX_LINE_BYTES", "1000")
    (tmp_path / "docs.jsonl").write_text(
        json.dumps({"docid": "d1", "text": "ok"}) + "\n" + json.dumps({"docid": "d2", "text": "x" * 5000}) + "\nnot json\n"
    )
    message = refused(lambda: read_documents(tmp_path / "docs.jsonl"))
    assert "docs.jsonl:2: line longer than 1000 bytes (QRELKIT_MAX_LINE_BYTES)" in message
    assert "docs.jsonl:3: invalid JSON" in message  # the reader went on after the long line


def test_a_plain_file_above_the_size_cap_is_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setenv("QRELKIT_MAX_INPUT_BYTES", "100")
    (tmp_path / "topics.tsv").write_text("q1\tquery\n" * 50)
    assert "topics.tsv: has 450 bytes, more than the limit of 100 bytes (QRELKIT_MAX_INPUT_BYTES)" in refused(
        lambda: read_topics(tmp_path / "topics.tsv")
    )


def test_a_bad_limit_setting_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("QRELKIT_MAX_LINE_BYTES", "lots")
    (tmp_path / "topics.tsv").write_text("q1\tquery\n")
    with pytest.raises(Exception, match="QRELKIT_MAX_LINE_BYTES='lots': expected a whole number"):
        read_topics(tmp_path / "topics.tsv")


def test_a_giant_passage_is_cut_before_tokenizing(monkeypatch):
    pytest.importorskip("onnxruntime")
    from qrelkit.embed.onnx import OnnxMiniLM

    embedder = OnnxMiniLM()
    seen: list[int] = []
    encode_batch = embedder.tokenizer.encode_batch
    monkeypatch.setattr(embedder.tokenizer, "encode_batch", lambda texts: seen.extend(map(len, texts)) or encode_batch(texts))
    giant = "goldfish grow big in ponds " * 400_000  # 10.8 million characters
    vectors = embedder.encode([giant, giant[:100_000]])
    assert seen == [100_000, 100_000]
    assert vectors[0] == pytest.approx(vectors[1])  # the model keeps 256 tokens: the cut changes nothing it sees


# -- 3. text that is not text ------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"docid": "d2", "text": "a\\ud800b"}', "docs.jsonl:2: a lone UTF-16 surrogate (\\ud800) at position 2 in text"),
        ('{"docid": "d2", "text": "a\\u0000b"}', "docs.jsonl:2: a NUL character at position 2 in text"),
        ('{"docid": "d2", "text": "x", "\\udfff": 1}', "docs.jsonl:2: a lone UTF-16 surrogate (\\udfff) at position 1 in \\udfff"),
        ('{"docid": ' + "7" * 5000 + ', "text": "x"}', "docs.jsonl:2: invalid JSON: a number with more than 4300 digits"),
        ('{"docid": "d2", "text": NaN}', "docs.jsonl:2: invalid JSON: NaN is not a JSON number"),
        (
            '{"docid": "d2", "text": "x", "f": ' + "[" * 50_000 + "]" * 50_000 + "}",
            "docs.jsonl:2: invalid JSON: nested more than 100 levels",
        ),
        (
            '{"docid": "d2", "text": "x", "f": ' + "[" * 150 + "]" * 150 + "}",
            "docs.jsonl:2: nested more than 100 levels deep in f (QRELKIT_MAX_NESTING)",
        ),
    ],
)
def test_json_lines_that_are_not_text_name_file_and_line(tmp_path, db, line, message):
    (tmp_path / "docs.jsonl").write_text(json.dumps({"docid": "d1", "text": "fine"}) + "\n" + line + "\n")
    assert message in load_refused(db, lambda store: store.load_documents(tmp_path / "docs.jsonl", replace=True))


def test_the_command_line_says_it_in_one_line_and_exits_2(tmp_path, db):
    (tmp_path / "docs.jsonl").write_text('{"docid": "d1", "text": "fine"}\n{"docid": "d2", "text": "a\\ud800b"}\n')
    before = snapshot(db)
    error = one_error(qrelkit("load", "docs", "docs.jsonl", "--replace", "--db", db, cwd=tmp_path), 2)
    assert error == "error: docs.jsonl:2: a lone UTF-16 surrogate (\\ud800) at position 2 in text"
    assert snapshot(db) == before


def test_nul_bytes_and_bad_utf8_in_tsv_topics_name_line_and_column(tmp_path):
    (tmp_path / "topics.tsv").write_bytes(b"q1\tfine\nq2\tna\x00me\nq3\tbad \xed\xa0\x80 surrogate\n")
    message = refused(lambda: read_topics(tmp_path / "topics.tsv"))
    assert "topics.tsv:2: NUL byte at column 6 (a binary file?)" in message
    assert "topics.tsv:3: invalid UTF-8 byte 0xed at column 8" in message  # a surrogate encoded in UTF-8 is not UTF-8


def job_file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "job.yaml").write_text(text)
    return tmp_path / "job.yaml"


@pytest.mark.parametrize(
    "text, message",
    [
        ("database: x.duckdb\njunk: " + "[" * 30_000 + "]" * 30_000 + "\n", "job.yaml:2: nested more than 100 levels deep"),
        ("database: x.duckdb\nlimit: " + "9" * 5000 + "\n", "job.yaml: not usable YAML: a number with more than 4300 digits"),
        ('database: "x\\0y.duckdb"\n', "job.yaml: a NUL character at position 2 in database"),
        ('database: "x\\ud800.duckdb"\n', "job.yaml: a lone UTF-16 surrogate (\\ud800) at position 2 in database"),
        ("database: x.duckdb\npool: {depth: 1\n", "job.yaml:3: not valid YAML:"),
    ],
)
def test_job_files_that_are_not_text_name_file_and_line(tmp_path, text, message):
    with pytest.raises(JobError) as caught:
        load_job(job_file(tmp_path, text))
    assert str(caught.value).startswith(str(tmp_path / message.split(":")[0])) and message.split(":", 1)[1] in str(caught.value)


def test_yaml_aliases_that_expand_to_billions_of_values_are_refused(tmp_path):
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(levels) + "\n")  # 10**9 values once expanded
    with pytest.raises(TemplateError, match=r"bomb.yaml: more than 1,000,000 values \(YAML aliases expanding\?\)"):
        load_template(path)
    with pytest.raises(JobError, match=r"job.yaml: more than 1,000,000 values"):
        load_job(job_file(tmp_path, path.read_text()))


def test_a_job_file_that_is_a_fifo_is_refused_without_waiting(tmp_path):
    import os

    os.mkfifo(tmp_path / "job.yaml")
    with pytest.raises(JobError, match="job.yaml: is a FIFO"):
        load_job(tmp_path / "job.yaml")
