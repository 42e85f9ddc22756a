"""`qrelkit evaluate --format trec` is trec_eval 9.0.8's `-q` output byte for byte: over the qrels'
queries (the default) it is `trec_eval -q -c`, with `--average run` it is `trec_eval -q`.

The expected outputs in tests/data/trec_eval/ are trec_eval's own (see its README), so CI checks
them without the binary; where a trec_eval 9.0.8 binary is at hand, the tests also run it on every
DL19 run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from trec_eval_tool import BINARY_REASON, trec_eval_binary
from typer.testing import CliRunner

from qrelkit.cli import app

runner = CliRunner()
DATA = Path(__file__).resolve().parent / "data" / "trec_eval"
# Measures as qrelkit spells them, and the same for trec_eval at relevance level 2 (-l 2)
OURS = ["nDCG@10", "AP(rel=2)", "RR(rel=2)", "P(rel=2)@10", "P(rel=2)@5", "nDCG"]
THEIRS = ["-l", "2", "-m", "runid", "-m", "num_q", "-m", "ndcg_cut.10", "-m", "map", "-m", "recip_rank", "-m", "P.5,10", "-m", "ndcg"]


TREC_EVAL = trec_eval_binary()
needs_trec_eval = pytest.mark.skipif(TREC_EVAL is None, reason=BINARY_REASON)


def evaluate(*args: object) -> str:
    result = runner.invoke(app, ["evaluate", *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def measures(names: list[str]) -> list[str]:
    return [item for name in names for item in ("--measure", name)]


@pytest.mark.parametrize(("average", "expected"), [("qrels", "synthetic.q-c.l2.txt"), ("run", "synthetic.q.l2.txt")])
def test_synthetic_run_with_missed_queries_and_ties_equals_trec_eval_byte_for_byte(average, expected):
    ours = evaluate(
        "--qrels", DATA / "synthetic.qrels", "--runs", DATA / "synthetic.run", *measures(OURS), "--average", average, "--format", "trec"
    )
    assert ours == (DATA / expected).read_text()


@pytest.mark.parametrize(("average", "expected"), [("qrels", "synthetic.q-c.counts.txt"), ("run", "synthetic.q.counts.txt")])
def test_the_counts_equal_trec_eval_and_under_c_a_missed_query_adds_its_relevant_documents(average, expected):
    """num_rel counts the qrels whatever the run retrieved: with -c trec_eval's `num_rel all` adds
    the relevant documents of the queries the run misses (13 here, 9 in the queries it covers)."""
    ours = evaluate(
        "--qrels", DATA / "synthetic.qrels", "--runs", DATA / "synthetic.run", *measures(["num_rel", "num_ret", "num_rel_ret", "AP"]),
        "--average", average, "--format", "trec",
    )  # fmt: skip
    assert ours == (DATA / expected).read_text()


def test_a_measure_no_installed_provider_computes_is_one_line():
    from hostile import qrelkit

    done = qrelkit("evaluate", "--qrels", DATA / "synthetic.qrels", "--runs", DATA / "synthetic.run", "--measure", "alpha_nDCG@10")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "alpha_nDCG@10" in done.stderr and "no installed ir_measures provider" in done.stderr


def test_averaging_is_what_tells_c_from_no_c():
    """The run misses 2 of the 6 queries: -c divides by 6, plain -q by the 4 it covers."""
    text = {
        a: evaluate(
            "--qrels",
            DATA / "synthetic.qrels",
            "--runs",
            DATA / "synthetic.run",
            "--measure",
            "nDCG@10",
            "--average",
            a,
            "--format",
            "trec",
        )
        for a in ("qrels", "run")
    }
    num_q = {a: [line.split("\t")[2] for line in t.splitlines() if line.startswith("num_q")] for a, t in text.items()}
    assert num_q == {"qrels": ["6"], "run": ["4"]}
    per_query = [line for line in text["qrels"].splitlines() if line.split("\t")[1] != "all"]
    assert [line.split("\t")[1] for line in per_query] == ["q1", "q2", "q3", "q5"]  # only what the run covers, as trec_eval
    alls = {a: float(t.splitlines()[-1].split("\t")[2]) for a, t in text.items()}
    assert alls["qrels"] == pytest.approx(alls["run"] * 4 / 6, abs=1e-4)


def test_dl19_run_equals_the_committed_trec_eval_output(dl19):
    ours = evaluate(
        "--qrels",
        dl19 / "qrels.txt",
        "--runs",
        dl19 / "runs" / "bm25base_p.run",
        *measures(["nDCG@10", "map_rel2", "recip_rank_rel2", "P_10_rel2"]),
        "--format",
        "trec",
    )
    assert ours == (DATA / "dl19-bm25base_p.q-c.l2.txt").read_text()


@needs_trec_eval
@pytest.mark.parametrize("average", ["qrels", "run"])
def test_every_dl19_run_equals_trec_eval_itself(dl19, average):
    runs = sorted((dl19 / "runs").glob("*.run"))
    ours = evaluate("--qrels", dl19 / "qrels.txt", "--runs", dl19 / "runs", *measures(OURS), "--average", average, "--format", "trec")
    complete = ["-c"] if average == "qrels" else []
    theirs = "".join(
        subprocess.run(
            [str(TREC_EVAL), "-q", *complete, *THEIRS, str(dl19 / "qrels.txt"), str(run)], capture_output=True, text=True, check=True
        ).stdout
        for run in runs
    )
    assert ours == theirs


@needs_trec_eval
def test_the_committed_outputs_are_trec_evals(dl19):
    """The expected files are what the binary prints today (so they were not edited by hand)."""
    for complete, expected in (["-c"], "synthetic.q-c.l2.txt"), ([], "synthetic.q.l2.txt"):
        done = subprocess.run(
            [str(TREC_EVAL), "-q", *complete, *THEIRS, str(DATA / "synthetic.qrels"), str(DATA / "synthetic.run")],
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout == (DATA / expected).read_text()


def test_every_format_names_its_averaging():
    args = ["--qrels", DATA / "synthetic.qrels", "--runs", DATA / "synthetic.run", "--measure", "nDCG@10"]
    payload = json.loads(evaluate(*args, "--json"))
    assert payload["average"] == "qrels" and payload["num_q"] == {"synthetic": 6} and "trec_eval -c" in payload["average_over"]
    payload = json.loads(evaluate(*args, "--json", "--average", "run"))
    assert payload["average"] == "run" and payload["num_q"] == {"synthetic": 4}
    assert payload["runs"]["synthetic"]["nDCG@10"] == pytest.approx(0.6575, abs=5e-5)  # trec_eval -q: all 0.6575
    table = " ".join(evaluate(*args).split())
    assert "mean over the 6 queries of the qrels; a query a run misses scores 0 (trec_eval -c)" in table
    table = " ".join(evaluate(*args, "--average", "run").split())
    assert "mean over the queries each run covers" in table and "num_q" in table
    trec = runner.invoke(app, ["evaluate", *map(str, args), "--format", "trec"], catch_exceptions=False)
    assert "over the 6 queries of the qrels" in trec.stderr and "over the" not in trec.stdout


def test_two_measures_trec_eval_would_print_under_one_name_are_refused():
    result = runner.invoke(
        app,
        [
            "evaluate",
            "--qrels",
            str(DATA / "synthetic.qrels"),
            "--runs",
            str(DATA / "synthetic.run"),
            "--measure",
            "AP",
            "--measure",
            "AP(rel=2)",
            "--format",
            "trec",
        ],
    )
    assert result.exit_code != 0 and "both print as trec_eval's 'map'" in str(result.exception)


def test_an_unknown_averaging_is_refused():
    result = runner.invoke(
        app, ["evaluate", "--qrels", str(DATA / "synthetic.qrels"), "--runs", str(DATA / "synthetic.run"), "--average", "all"]
    )
    assert result.exit_code != 0 and "--average 'all'" in str(result.exception)
