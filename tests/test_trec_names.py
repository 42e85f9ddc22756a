"""trec_eval's measure names and its `-q` output layout: the same numbers as ir_measures' names,
and, when a trec_eval 9.0.8 binary is at hand (benchmarks/bench_evaluate.py builds one), the
same per-query values as trec_eval itself."""

from __future__ import annotations

import json
import subprocess

import pytest
from trec_eval_tool import BINARY_REASON, trec_eval_binary
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.evaluate.trec_names import from_trec_eval

runner = CliRunner()
TREC_EVAL = trec_eval_binary()


@pytest.mark.parametrize(
    ("trec", "ours"),
    [
        ("ndcg_cut_10", "nDCG@10"),
        ("ndcg_cut.10", "nDCG@10"),
        ("ndcg", "nDCG"),
        ("map", "AP"),
        ("map_rel2", "AP(rel=2)"),
        ("recip_rank", "RR"),
        ("P_5", "P@5"),
        ("P.10_rel2", "P(rel=2)@10"),
        ("recall_1000", "R@1000"),
        ("bpref", "Bpref"),
        ("Rprec", "Rprec"),
        ("success_10", "Success@10"),
        ("num_rel_ret", "NumRelRet"),
    ],
)
def test_trec_eval_names_read_as_the_measures_they_are(trec, ours):
    assert from_trec_eval(trec) == ours


@pytest.mark.parametrize("name", ["nDCG@10", "AP(rel=2)", "ndcg_cut", "map.5x", "foo_10"])
def test_other_names_are_not_taken_for_trec_eval_ones(name):
    assert from_trec_eval(name) is None


def evaluate(*args: str) -> str:
    result = runner.invoke(app, ["evaluate", *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout  # --format trec says on stderr what its means run over


def test_trec_eval_names_give_the_same_values_as_ir_measures_names(dl19):
    common = ["--qrels", dl19 / "qrels.txt", "--runs", dl19 / "runs", "--json"]
    trec = json.loads(
        evaluate(*common, "--measure", "ndcg_cut_10", "--measure", "map", "--measure", "recip_rank_rel2", "--measure", "P_10")
    )
    ours = json.loads(evaluate(*common, "--measure", "nDCG@10", "--measure", "AP", "--measure", "RR(rel=2)", "--measure", "P@10"))
    for run, values in ours["runs"].items():
        assert [values[m] for m in ("nDCG@10", "AP", "RR(rel=2)", "P@10")] == pytest.approx(
            [trec["runs"][run][m] for m in ("ndcg_cut_10", "map", "recip_rank_rel2", "P_10")], abs=1e-12
        )


def parse_trec(text: str) -> dict[tuple[str, str], float]:
    out = {}
    for line in text.splitlines():
        measure, qid, value = (field.strip() for field in line.split("\t"))
        if measure != "runid":
            out[(measure, qid)] = float(value)
    return out


def test_format_trec_is_trec_eval_q_layout_with_the_means_of_the_json(dl19):
    run = dl19 / "runs" / "bm25base_p.run"
    text = evaluate("--qrels", dl19 / "qrels.txt", "--runs", run, "--measure", "ndcg_cut_10", "--format", "trec")
    # trec_eval's place for runid: after the per-query lines, first of the `all` block
    assert text.splitlines()[43].split("\t") == ["runid".ljust(22), "all", "bm25base_p"]
    values = parse_trec(text)
    assert len([k for k in values if k[1] != "all"]) == 43  # one line per query of the qrels
    official = json.loads((dl19 / "official-nist.json").read_text())["bm25base_p"]["ndcg_cut_10"]
    assert values[("ndcg_cut_10", "all")] == pytest.approx(official, abs=5e-5)


@pytest.mark.skipif(TREC_EVAL is None, reason=BINARY_REASON)
def test_format_trec_equals_trec_eval_itself_per_query(dl19):
    run = dl19 / "runs" / "bm25base_p.run"
    printed = parse_trec(
        evaluate("--qrels", dl19 / "qrels.txt", "--runs", run, "--measure", "ndcg_cut_10", "--measure", "P_10", "--format", "trec")
    )
    # both print num_q as trec_eval does; compared separately below
    ours = {k: v for k, v in printed.items() if k[0] in ("ndcg_cut_10", "P_10")}
    done = subprocess.run(
        [str(TREC_EVAL), "-q", "-c", "-m", "ndcg_cut.10", "-m", "P.10", "-m", "num_q"] + [str(dl19 / "qrels.txt"), str(run)],
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = {k: v for k, v in parse_trec(done.stdout).items() if k[0] in ("ndcg_cut_10", "P_10")}
    assert theirs and set(theirs) == set(ours)
    assert all(ours[k] == pytest.approx(theirs[k], abs=5e-5) for k in theirs)
    assert printed[("num_q", "all")] == parse_trec(done.stdout)[("num_q", "all")]
