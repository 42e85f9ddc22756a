"""The edges of what trec_eval reads, where qrelkit answered by the order of a file's lines, hung,
aborted the process or printed a traceback (issue 45): each now gives trec_eval 9.0.8's value or one
line and exit 2. The expected values are trec_eval's output on the same input (stored here, with
the command that printed them); where a trec_eval binary is at hand it is run as well."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from judge_tracks import write_track
from trec_eval_tool import BINARY_REASON, SUITE_REASON, suite_folder, trec_eval_binary
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import QrelkitError
from qrelkit.evaluate import evaluate_runs, parse_measures
from qrelkit.io import read_qrels, read_run

runner = CliRunner()
TREC_EVAL = trec_eval_binary()
# the issue's example: query 1's every judgment is negative ("in the pool, not judged" to trec_eval)
ALL_NEGATIVE_QRELS = "1 0 a -1\n1 0 b -1\n2 0 c 1\n2 0 d 0\n"
RUN_LINES = ["1 Q0 a 1 2.0 r\n", "1 Q0 b 2 1.0 r\n", "2 Q0 c 1 2.0 r\n", "2 Q0 d 2 1.0 r\n"]
# graded qrels where levels matter: query 3 is judged but not retrieved
GRADED_QRELS = "1 0 a 2\n1 0 b 1\n1 0 c 0\n2 0 d 2\n2 0 e 1\n3 0 f 1\n3 0 g 2\n3 0 h 2\n"
GRADED_RUN = "1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n2 Q0 e 1 2.0 r\n"


def cli(*args: object, timeout: float = 120) -> subprocess.CompletedProcess:
    """A whole process: an abort (SIGABRT) or a hang shows as what it is, not as a test runner's failure."""
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", *map(str, args)], capture_output=True, text=True, timeout=timeout)


def write(folder: Path, name: str, text: str) -> Path:
    (folder / name).write_text(text)
    return folder / name


@pytest.fixture
def negative(tmp_path) -> dict[str, Path]:
    return {
        "qrels": write(tmp_path, "negative.qrels", ALL_NEGATIVE_QRELS),
        "forward": write(tmp_path, "forward.run", "".join(RUN_LINES)),
        "backward": write(tmp_path, "backward.run", "".join(RUN_LINES[2:] + RUN_LINES[:2])),
    }


def test_an_all_negative_query_gets_trec_eval_values_in_either_line_order(negative):
    # trec_eval 9.0.8 itself stops on this qrels (exit 4: its C code finds no judged level for query 1);
    # with query 1 renamed 3, so that it comes after query 2, `trec_eval -q -m num_ret -m num_rel -m
    # num_rel_ret -m P.1 -m bpref -m infAP -m ndcg` prints these values
    expected = {
        "num_ret": [2, 2],
        "num_rel": [0, 1],
        "num_rel_ret": [0, 1],
        "P_1": [0.0, 1.0],
        "bpref": [0.0, 1.0],
        "infAP": [0.0, 1.0],
        "ndcg": [0.0, 1.0],
    }
    qrels = read_qrels(negative["qrels"])
    for order in ("forward", "backward"):
        evaluation = evaluate_runs(qrels, [read_run(negative[order])], list(expected))
        assert {m: evaluation.values[order][m].tolist() for m in expected} == expected, order


def test_measures_through_ir_measures_never_see_an_all_negative_query(negative):
    """ERR, RR@k and nDCG with exponential gains still go to ir_measures' providers; the all-negative
    query is kept from them and scores 0 (it has nothing relevant), the other query keeps its value,
    whatever the line order (a guard of that route: none of these providers is pytrec_eval)."""
    measures = ["ERR@10", "RR@10", "nDCG(dcg='exp-log2')@10"]
    qrels = read_qrels(negative["qrels"])
    found = {order: evaluate_runs(qrels, [read_run(negative[order])], measures).values[order] for order in ("forward", "backward")}
    for measure in measures:
        assert found["forward"][measure].tolist() == found["backward"][measure].tolist()
        assert found["forward"][measure][0] == 0.0 and found["forward"][measure][1] > 0, measure


def test_judged_only_on_an_all_negative_query_finishes_in_seconds(negative, tmp_path):
    """It hung past 30 s inside pytrec_eval, from the command line and from Python."""
    measures = ["nDCG(judged_only=True)", "P(judged_only=True)@1", "infAP", "NumRet"]
    started = time.monotonic()
    done = cli("evaluate", "--qrels", negative["qrels"], "--runs", negative["backward"], "--runs", negative["forward"], "-J",
               *[item for m in measures for item in ("--measure", m)], "--json", timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    means = json.loads(done.stdout)["runs"]
    expected = {"nDCG(judged_only=True)": 0.5, "P(judged_only=True)@1": 0.5, "infAP": 0.5, "NumRet": 1.0}  # query 1: nothing judged
    assert means["forward"] == means["backward"] == expected
    script = (
        "import qrelkit; from qrelkit.io import read_qrels, read_run; "
        f"e = qrelkit.evaluate_runs(read_qrels({str(negative['qrels'])!r}), [read_run({str(negative['backward'])!r})], {measures!r}); "
        "print(e.means())"
    )
    python = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert python.returncode == 0, python.stderr
    assert time.monotonic() - started < 40  # two interpreters' start-up on a loaded machine; the hang never returned


def test_relevance_level_zero_gives_trec_eval_l0_values(tmp_path):
    """`Rprec(rel=0)` and `bpref_rel0` raised pytrec_eval's TypeError; trec_eval -l0 takes level 0.
    Expected: `trec_eval -q -l0 -m Rprec -m bpref -m map` on these files."""
    qrels, run = write(tmp_path, "graded.qrels", GRADED_QRELS), write(tmp_path, "r.run", GRADED_RUN)
    evaluation = evaluate_runs(read_qrels(qrels), [read_run(run)], ["Rprec(rel=0)", "bpref_rel0", "AP(rel=0)"], average="run")
    values = {m: evaluation.values["r"][m][:2].round(4).tolist() for m in evaluation.measures}
    assert values == {"Rprec(rel=0)": [0.6667, 0.5], "bpref_rel0": [0.6667, 0.5], "AP(rel=0)": [0.6667, 0.5]}


def test_iprec_at_recall_zero_and_one_are_trec_eval_ones(tmp_path):
    """`IPrec@0` and `IPrec@1` raised ir_measures' AssertionError. Expected: `trec_eval -q -m
    iprec_at_recall.0,1` on these files (query 1: 1.0 and 1.0; query 2: 1.0 and 0.0)."""
    qrels, run = write(tmp_path, "graded.qrels", GRADED_QRELS), write(tmp_path, "r.run", GRADED_RUN)
    names = ["IPrec@0", "IPrec@1", "iprec_at_recall_0.00", "iprec_at_recall_1.00"]
    evaluation = evaluate_runs(read_qrels(qrels), [read_run(run)], names)
    values = {m: evaluation.values["r"][m].tolist() for m in names}
    assert values["IPrec@0"] == values["iprec_at_recall_0.00"] == [1.0, 1.0, 0.0]
    assert values["IPrec@1"] == values["iprec_at_recall_1.00"] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("measure", ["P@0", "nDCG@0", "R@0", "ndcg_cut_0", "P.0", "Success@0", "ERR@0"])
def test_a_cut_off_of_zero_is_one_line_and_exit_2_not_an_abort(tmp_path, measure):
    """pytrec_eval aborted the process (SIGABRT, exit 134) on it; trec_eval refuses it."""
    qrels, run = write(tmp_path, "graded.qrels", GRADED_QRELS), write(tmp_path, "r.run", GRADED_RUN)
    done = cli("evaluate", "--qrels", qrels, "--runs", run, "--measure", measure)
    assert done.returncode == 2, done.stderr
    assert "a cut-off must be at least 1" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_compare_refuses_a_judge_measure_with_cut_off_zero(tmp_path):
    track = write_track(tmp_path / "track")
    done = cli("compare", "--judge", track["binary"], "--reference-qrels", track["qrels"], "--runs", track["runs"],
               "--measure", "P@5", "--judge-measure", "P@0", "--resamples", "0")  # fmt: skip
    assert done.returncode == 2 and "a cut-off must be at least 1" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(TREC_EVAL is None, reason=BINARY_REASON)
def test_a_trec_eval_command_line_translates_word_for_word(tmp_path):
    """`trec_eval -q -c -l2 -J -M2 -m ...` and `qrelkit evaluate -l 2 -J -M 2 -m ... --format trec`
    print the same bytes."""
    track = write_track(tmp_path / "track")
    run = sorted(track["runs"].iterdir())[1]
    measures = ["runid", "num_q", "num_ret", "num_rel", "map", "P.1,3", "ndcg", "bpref", "Rprec", "iprec_at_recall.0,.5", "set_F"]
    given = [item for m in measures for item in ("-m", m)]
    theirs = subprocess.run([str(TREC_EVAL), "-q", "-c", "-l2", "-J", "-M2", *given, track["qrels"], run], capture_output=True, text=True)
    ours = cli("evaluate", "--qrels", track["qrels"], "--runs", run, "-l", "2", "-J", "-M", "2", *given, "--format", "trec")
    assert theirs.returncode == 0 and ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout


def test_num_rel_all_line_under_c_counts_grades_above_zero_as_trec_eval_does(tmp_path):
    """Under -c trec_eval's `num_rel all` counts every judgment with grade > 0 whatever -l is
    (m_num_rel.c), not the per-query counts at the level: `trec_eval -q -c -l2 -m runid -m num_q -m
    num_ret -m num_rel -m num_rel_ret -m map` on these files prints exactly this."""
    expected = (
        "num_ret               \t1\t2\nnum_rel               \t1\t1\nnum_rel_ret           \t1\t1\nmap                   \t1\t1.0000\n"
        "num_ret               \t2\t1\nnum_rel               \t2\t1\nnum_rel_ret           \t2\t0\nmap                   \t2\t0.0000\n"
        "runid                 \tall\tr\nnum_q                 \tall\t3\nnum_ret               \tall\t3\n"
        "num_rel               \tall\t7\nnum_rel_ret           \tall\t1\nmap                   \tall\t0.3333\n"
    )
    qrels, run = write(tmp_path, "graded.qrels", GRADED_QRELS), write(tmp_path, "r.run", GRADED_RUN)
    measures = [item for m in ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map"] for item in ("-m", m)]
    result = runner.invoke(app, ["evaluate", "--qrels", str(qrels), "--runs", str(run), "-l", "2", *measures, "--format", "trec"])
    assert result.exit_code == 0, result.output
    assert result.stdout == expected


def test_a_run_that_shares_no_query_with_the_qrels_is_one_line_and_exit_2(tmp_path):
    """trec_eval stops too ("No queries with both results and relevance info", exit 7); qrelkit printed
    zeros and exited 0."""
    qrels = write(tmp_path, "graded.qrels", GRADED_QRELS)
    elsewhere = write(tmp_path, "other-track.run", "701 Q0 x 1 1.0 r\n702 Q0 y 1 1.0 r\n")
    for extra in ([], ["--average", "run"], ["--json"]):
        done = cli("evaluate", "--qrels", qrels, "--runs", elsewhere, *extra)
        assert done.returncode == 2, done.stdout
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "shares no query with the qrels" in lines[0] and str(elsewhere) in lines[0]
        assert done.stdout == ""


def test_a_run_with_more_than_six_columns_scores_with_a_note(tmp_path):
    qrels = write(tmp_path, "graded.qrels", GRADED_QRELS)
    run = write(tmp_path, "long.run", GRADED_RUN.replace(" r\n", " r junk at the end\n"))
    done = cli("evaluate", "--qrels", qrels, "--runs", run, "--measure", "P@2", "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["runs"]["long"]["P@2"] == pytest.approx(0.5)  # P@2: 1.0, 0.5 and 0 (query 3, missed) over 3 queries
    assert payload["notes"] == [f"{run}: 3 lines with more than 6 columns (the first: line 1; up to 10): " + NOTE_TAIL]


NOTE_TAIL = "what follows the 6th column (the tag) is ignored, as trec_eval ignores it"


@pytest.mark.skipif(suite_folder() is None, reason=SUITE_REASON)
def test_trec_eval_results_trunc_loads_with_a_note_and_scores_as_trec_eval(tmp_path):
    """trec_eval's own test/results.trunc (lines of 6 to 9 columns) was refused; `trec_eval -q -c` on
    it is test/out.test.aqc. Loaded into a database and from the file alike."""
    suite = suite_folder()
    assert suite is not None
    db = tmp_path / "q.duckdb"
    loaded = cli("load", "runs", suite / "results.trunc", "--db", db)
    assert loaded.returncode == 0, loaded.stderr
    assert f"{suite / 'results.trunc'}: 5 lines with more than 6 columns (the first: line 1; up to 9): {NOTE_TAIL}" in loaded.stdout
    expected = {line.split("\t")[0].strip(): line.split("\t")[2] for line in (suite / "out.test.aqc").read_text().splitlines()}
    for source in (["--runs", suite / "results.trunc"], ["--db", db]):
        done = cli("evaluate", "--qrels", suite / "qrels.test", *source, "-m", "map", "-m", "P.10", "-m", "num_ret", "--json")
        assert done.returncode == 0, done.stderr
        (means,) = json.loads(done.stdout)["runs"].values()
        assert f"{means['map']:.4f}" == expected["map"] and f"{means['P.10']:.4f}" == expected["P_10"]
        assert means["num_ret"] * 3 == int(expected["num_ret"])  # the JSON's mean over 3 queries; trec_eval's sum


@pytest.mark.parametrize(
    ("measure", "why"),
    [
        ("gm_map", "geometric mean over queries"),
        ("gm_bpref", "geometric mean over queries"),
        ("G", "experimental"),
        ("Rndcg", "experimental"),
        ("ndcg_rel", "experimental"),
        ("relstring", "not a number"),
        ("rbp", "trec_eval 10.0's"),
        ("P_avgjg", "multi-assessor"),
        ("prefs_simp", "preference"),
    ],
)
def test_trec_eval_measures_not_computed_are_refused_by_name_with_the_reason(measure, why):
    with pytest.raises(QrelkitError) as refused:
        parse_measures([measure])
    assert f"measure {measure!r} is trec_eval's, and qrelkit does not compute it" in str(refused.value) and why in str(refused.value)


def test_a_refused_measure_is_one_line_and_exit_2(tmp_path):
    qrels, run = write(tmp_path, "graded.qrels", GRADED_QRELS), write(tmp_path, "r.run", GRADED_RUN)
    done = cli("evaluate", "--qrels", qrels, "--runs", run, "--measure", "gm_map")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "geometric mean" in done.stderr


def test_past_float32_each_measure_orders_scores_as_its_reference_does(tmp_path):
    """d9 outscores d1 only beyond float32. trec_eval reads a tie (C floats) and breaks it by docid
    descending; ir_measures (Judged@k) and the compatibility authors' script read the scores as
    written (float64) and break ties by docid ascending: each measure follows its own reference."""
    import ir_measures
    from compat_reference import compatibility as reference_compatibility

    qrels = write(tmp_path, "q.qrels", "q1 0 d9 1\nq1 0 d5 0\n")
    run = write(tmp_path, "r.run", "q1 Q0 d9 1 0.1000000001 r\nq1 Q0 d1 2 0.1 r\n")
    evaluation = evaluate_runs(read_qrels(qrels), [read_run(run)], ["Judged@1", "Compat(p=0.95)", "P@1"])
    means = evaluation.means()["r"]
    judged = ir_measures.calc_aggregate(
        [ir_measures.parse_measure("Judged@1")], {"q1": {"d9": 1, "d5": 0}}, {"q1": {"d9": 0.1000000001, "d1": 0.1}}
    )
    assert means["Judged@1"] == list(judged.values())[0] == 1.0  # float64: d9 first (float32 and ascending docids: d1, 0.0)
    assert means["Compat(p=0.95)"] == pytest.approx(reference_compatibility(qrels, run, p=0.95)[2], abs=1e-12) == 1.0
    assert means["P@1"] == 1.0  # trec_eval: a float32 tie, docid descending puts d9 first too
    tied = write(tmp_path, "t.run", "q1 Q0 d1 1 0.1000000001 r\nq1 Q0 d9 2 0.1 r\n")  # the higher score on the lower docid
    flipped = evaluate_runs(read_qrels(qrels), [read_run(tied)], ["Judged@1", "P@1"]).means()["t"]
    assert flipped == {"Judged@1": 0.0, "P@1": 1.0}  # Judged: d1 first (float64); trec_eval: the float32 tie puts d9 first


def test_a_stored_run_keeps_float32_scores_so_there_judged_and_compat_see_the_tie(tmp_path):
    """The database keeps scores as float32 (docs/names.md): a run loaded there has lost what lay
    beyond float32, so Judged@k and Compat order its near-ties as ties (docid ascending)."""
    qrels = write(tmp_path, "q.qrels", "q1 0 d9 1\nq1 0 d5 0\n")
    run = write(tmp_path, "r.run", "q1 Q0 d9 1 0.1000000001 r\nq1 Q0 d1 2 0.1 r\n")
    db = tmp_path / "q.duckdb"
    assert cli("load", "runs", run, "--db", db).returncode == 0
    done = cli("evaluate", "--qrels", qrels, "--db", db, "--measure", "Judged@1", "--measure", "P@1", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"]["r"] == {"Judged@1": 0.0, "P@1": 1.0}
