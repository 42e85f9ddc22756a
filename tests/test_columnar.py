"""The columnar reader accepts exactly what the line reader accepts, returns the same columns,
and names the same lines; numbers follow trec_eval's reading (64-bit integers, float32 scores,
ASCII numerals); gzip is streamed; a file's problems are capped."""

from __future__ import annotations

import gzip

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from input_files import RUN_OK, error_of, write

from qrelkit.errors import InputFormatError
from qrelkit.io import OnDuplicate, columnar, lines, read_qrels, read_run
from qrelkit.io.trec_lines import read_qrels_lines, read_run_lines


@pytest.mark.parametrize(
    ("rank", "expected"),
    [
        ("1_000", "rank (column 4) must be an integer, found '1_000'"),
        ("٣", "rank (column 4) must be an integer, found '٣'"),
        ("0x10", "rank (column 4) must be an integer, found '0x10'"),
        ("9223372036854775808", "rank (column 4) is beyond the 64-bit integer range, found '9223372036854775808'"),
        ("-9223372036854775809", "rank (column 4) is beyond the 64-bit integer range"),
    ],
)
def test_ranks_are_ascii_64_bit_integers(tmp_path, rank, expected):
    path = write(tmp_path, "bad.run", RUN_OK + f"q1 Q0 d3 {rank} 0.5 tag\n")
    assert f"{path}:3: {expected}" in error_of(lambda: read_run(path))


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        ("1e39", "score (column 5) is not finite as a 32-bit float (trec_eval reads scores as C floats): '1e39'"),
        ("-3.5e38", "score (column 5) is not finite as a 32-bit float"),
        ("inf", "score (column 5) is not finite: 'inf'"),
        ("1_0.5", "score (column 5) must be a number, found '1_0.5'"),
        ("0x1p3", "score (column 5) must be a number, found '0x1p3'"),
        ("١.٥", "score (column 5) must be a number, found '١.٥'"),
    ],
)
def test_scores_are_ascii_numbers_finite_as_float32(tmp_path, score, expected):
    path = write(tmp_path, "bad.run", RUN_OK + f"q1 Q0 d3 3 {score} tag\n")
    assert f"{path}:3: {expected}" in error_of(lambda: read_run(path))


def test_numbers_trec_eval_reads_are_accepted(tmp_path):
    path = write(tmp_path, "ok.run", "q1 Q0 a +5 +.5e-3 t\nq1 Q0 b -3 5. t\nq1 Q0 c 9223372036854775807 1e-50 t\nq1 Q0 d 0 3.4e38 t\n")
    run = read_run(path)
    assert run.table.column("rank").to_pylist() == [5, -3, 2**63 - 1, 0]
    assert run.table.column("score").to_pylist() == [5e-4, 5.0, 1e-50, 3.4e38]  # as written
    assert run.scores32().tolist() == [pytest.approx(5e-4), 5.0, 0.0, pytest.approx(3.4e38, rel=1e-7)]  # as trec_eval ranks them


@pytest.mark.parametrize(("grade", "ok"), [("-1", True), ("+2", True), ("0x1", False), ("2.0", False), ("99999999999999999999", False)])
def test_grades_are_ascii_64_bit_integers(tmp_path, grade, ok):
    path = write(tmp_path, "q.qrels", f"q1 0 d1 1\nq1 0 d2 {grade}\n")
    if ok:
        assert read_qrels(path).grades["q1"]["d2"] == int(grade)
    else:
        assert f"{path}:2: grade (column 4)" in error_of(lambda: read_qrels(path))


def test_problems_beyond_fifty_are_counted_not_kept(tmp_path):
    path = write(tmp_path, "bad.qrels", "".join(f"q1 0 d{i} high\n" for i in range(120)))
    with pytest.raises(InputFormatError) as info:
        read_qrels(path)
    assert len(info.value.problems) == 50 and info.value.omitted == 70
    assert f"... and 110 more problem(s) in {path}" in str(info.value)


SEPARATORS = {
    "tabs": "q1\tQ0\td1\t1\t2.5\ttag\nq1\tQ0\td2\t2\t1.5\ttag\n",
    "crlf": "q1 Q0 d1 1 2.5 tag\r\nq1 Q0 d2 2 1.5 tag\r\n",
    "no final newline": "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag",
    "bom": "\ufeffq1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\n",
    "doubled and trailing spaces": "q1  Q0 d1 1 2.5 tag \n  q1 Q0 d2 2 1.5   tag\n",
    "blank lines": "\n   \nq1 Q0 d1 1 2.5 tag\n\t\nq1 Q0 d2 2 1.5 tag\n\n",
    "form feed, vertical tab, \\x1c": "q1\x0cQ0 d1 1\x0b2.5 tag\nq1 Q0\x1cd2 2 1.5 tag\n",
    "no-break and ideographic spaces": "q1\u00a0Q0 d1 1 2.5 tag\nq1 Q0 d2\u30002 1.5 tag\n",
    "non-ASCII docids": "q1 Q0 café 1 2.5 tag\nq1 Q0 naïve 2 1.5 tag\n",
}


@pytest.mark.parametrize("content", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_any_whitespace_separates_columns_on_either_route(tmp_path, content):
    path = write(tmp_path, "ws.run", content)
    expected, tags, _ = read_run_lines(path)
    table, fast_tags, _ = columnar.read_run_table(path)
    assert table.equals(expected) and fast_tags == tags == ["tag"]
    assert table.num_rows == 2


@pytest.mark.parametrize("content", [SEPARATORS["tabs"], SEPARATORS["crlf"], RUN_OK])
def test_common_layouts_stay_on_the_fast_route(tmp_path, content):
    path = write(tmp_path, "fast.run", content)
    table = columnar._fast_run(path, OnDuplicate.error).table  # raises _Fallback if it would hand over
    assert table.num_rows == 2


def test_a_lone_carriage_return_separates_columns_as_in_the_line_reader_and_trec_eval(tmp_path):
    # trec_eval splits on isspace, so this is one line of 12 columns: it reads the first 6 and skips the rest
    path = write(tmp_path, "cr.run", "q1 Q0 d1 1 2.5 tag\rq1 Q0 d2 2 1.5 tag\n")
    run = read_run(path)
    assert run.table.column("docid").to_pylist() == ["d1"]
    assert run.notes == (f"{path}: 1 line with more than 6 columns (the first: line 1; up to 12): {IGNORED}",)


IGNORED = "what follows the 6th column (the tag) is ignored, as trec_eval ignores it"


def test_columns_after_the_tag_are_ignored_with_a_note_naming_the_lines(tmp_path):
    path = write(tmp_path, "long.run", "q1 Q0 d1 1 2.5 tag junk\nq1 Q0 d2 2 1.5 tag\nq1 Q0 d3 3 0.5 tag more junk here\n")
    table, tags, notes = columnar.read_run_table(path)
    assert table.column("docid").to_pylist() == ["d1", "d2", "d3"] and tags == ["tag"]
    assert notes == (f"{path}: 2 lines with more than 6 columns (the first: line 1; up to 9): {IGNORED}",)
    assert columnar.read_run_table(write(tmp_path, "six.run", RUN_OK)).notes == ()


def test_qrels_comment_lines_are_skipped_on_either_route_as_trec_eval_10_reads_them(tmp_path):
    content = "# judged by NIST\nq1 0 d1 1\n#second comment, right after a judgment\n# and a third: 4 columns\nq1 0 d2 0\n"
    path = write(tmp_path, "c.qrels", content)
    table = columnar.read_qrels_table(path)
    assert table.equals(read_qrels_lines(path))
    assert table.column("docid").to_pylist() == ["d1", "d2"] and table.column("grade").to_pylist() == [1, 0]


def test_a_hash_not_in_the_first_column_is_no_comment(tmp_path):
    # trec_eval 10.0 looks for '#' in the line's first column only
    path = write(tmp_path, "c.qrels", "q1 0 d1 1\n  # x y z\n")
    assert f"{path}:2: grade (column 4) must be an integer, found 'z'" in error_of(lambda: read_qrels(path))


def test_gzip_is_read_in_blocks_with_lines_numbered_across_them(tmp_path, monkeypatch):
    monkeypatch.setattr(lines, "BLOCK", 64)  # many blocks, lines cut at block edges
    body = "".join(f"q{i % 7} Q0 doc{i} {i} {100 - i * 0.25} tag\n" for i in range(300))
    path = tmp_path / "big.run.gz"
    path.write_bytes(gzip.compress(body.encode()))
    run = read_run(path)
    assert len(run) == 300 and run.table.equals(read_run_lines(path).table)
    bad = tmp_path / "bad.run.gz"
    bad.write_bytes(gzip.compress((body + "q5 Q0 doc5 1 2.0 tag\n").encode()))
    assert f"{bad}:301: duplicate run entry for qid 'q5', docid 'doc5' (first on line 6)" in error_of(lambda: read_run(bad))


def test_a_truncated_gzip_file_is_named(tmp_path):
    path = tmp_path / "cut.run.gz"
    path.write_bytes(gzip.compress(RUN_OK.encode() * 50)[:40])
    assert f"{path}: the gzip data is truncated" in error_of(lambda: read_run(path))


WORDS = st.sampled_from(["q1", "q2", "Q0", "d1", "d2", "d3", "tag", "é"])
INTEGERS = st.sampled_from(["1", "2", "-1", "+3", "007", "0"])
NUMBERS = st.sampled_from(["0.5", "2.5", "-1", "+.5e-3", "5.", "1e-50", "0.1000000001", "0.1"])
BAD = st.sampled_from(["1e39", "nan", "x", "0x1", "1_0", "٣", ""])
SPACES = st.sampled_from([" "] * 4 + ["  ", "\t", "\r", "\x0c", "\x1c", "\u00a0"])


@st.composite
def files(draw, kinds: str, comments: bool = False):
    """Lines of the right kinds of token (``kinds``: w = word, i = integer, n = number), with
    now and then a bad token, a column too many or too few, or an odd separator; with
    ``comments``, now and then a `#` at the start of a line (a qrels comment)."""
    out = []
    for _ in range(draw(st.integers(0, 10))):
        tokens = [draw({"w": WORDS, "i": INTEGERS, "n": NUMBERS}[kind]) for kind in kinds]
        roll = draw(st.integers(0, 7))
        if roll == 0:
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(BAD)
        elif roll == 1:
            tokens.insert(draw(st.integers(0, len(tokens))), draw(WORDS))
        elif roll == 2:
            tokens.pop(draw(st.integers(0, len(tokens) - 1)))
        line = tokens[0] if tokens else ""
        for token in tokens[1:]:
            line += draw(SPACES) + token
        start = draw(st.sampled_from(["", "", " ", "\t", "#", "# "] if comments else ["", "", " ", "\t"]))
        out.append(start + line + draw(st.sampled_from(["", "", " ", "\r"])))
    return "\n".join(out) + draw(st.sampled_from(["", "\n"]))


def same_outcome(fast, slow) -> None:
    try:
        expected = slow()
    except InputFormatError as error:
        assert error_of(fast) == str(error)
        return
    got = fast()
    if isinstance(expected, tuple):
        assert got.table.equals(expected.table) and got.tags == expected.tags and got.notes == expected.notes
    else:
        assert got.equals(expected)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=files("wwwinw"), policy=st.sampled_from(list(OnDuplicate)))
@example(content=" q1 d1 1 2.5 tag\n", policy=OnDuplicate.error)  # an empty first column would fill the gap
@example(content="q1  q1 1 0.5 q1", policy=OnDuplicate.error)  # so would an empty Q0 column
@example(content="q1\tQ0 d1 1 2.5 tag extra\n", policy=OnDuplicate.error)  # a tab inside a comma-less CSV field
@example(content="q1 Q0 d1 1 2.5 tag\rq1 Q0 d2 2 1.5 tag\n", policy=OnDuplicate.error)  # CR is a newline to a CSV parser
def test_run_columns_equal_the_line_readers(tmp_path, content, policy):
    path = write(tmp_path, "h.run", content)
    same_outcome(lambda: columnar.read_run_table(path, policy), lambda: read_run_lines(path, policy))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=files("wwwi", comments=True), policy=st.sampled_from(list(OnDuplicate)))
@example(content="#c\n#d e f g\nq1 0 d1 1\n", policy=OnDuplicate.error)  # comments in a row (trec_eval 10.0 reads the second)
def test_qrels_columns_equal_the_line_readers(tmp_path, content, policy):
    path = write(tmp_path, "h.qrels", content)
    same_outcome(lambda: columnar.read_qrels_table(path, policy), lambda: read_qrels_lines(path, policy))
