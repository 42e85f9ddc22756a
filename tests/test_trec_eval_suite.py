"""trec_eval 9.0.8's own test suite: every option set of its `make quicktest` whose expected output
its test/ folder keeps and whose measures qrelkit computes, value by value (qrelkit's value,
printed as trec_eval prints it, equals trec_eval's line), and `evaluate --format trec` byte for
byte (trec_eval's file, less the lines of the measures qrelkit refuses).

Left out, each for a reason: out.test.prefs, out.test.qrels_prefs and out.test.qrels_jg read
preference and multi-assessor judgments (formats qrelkit does not read); out.test.aqZ is z-scores
(-Z). Within an option set, the measures qrelkit refuses by name (gm_map, gm_bpref: geometric means
with no per-query value; relstring: not a number; G, Rndcg, ndcg_rel: experimental) are left out,
and the test says how many values it compared.

The suite's files are trec_eval's, not this project's: see tests/trec_eval_tool.py for where they
are looked for; the test skips, naming what to set, without them."""

from __future__ import annotations

import pytest
from trec_eval_tool import SUITE_REASON, suite_folder
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.evaluate import evaluate_runs
from qrelkit.evaluate.trec_names import TREC_EVAL_COUNTS, TREC_EVAL_ORDER, refusal, trec_eval_all, trec_eval_names, trec_eval_sort_key
from qrelkit.io import read_qrels, read_run

SUITE = suite_folder()
pytestmark = pytest.mark.skipif(SUITE is None, reason=SUITE_REASON)
runner = CliRunner()

# trec_eval's Makefile (quicktest): expected output -> (qrels, run, -q, options as `evaluate` spells them)
OPTION_SETS = {
    "out.test": ("qrels.test", "results.test", False, {"average": "run"}),  # trec_eval qrels.test results.test
    "out.test.a": ("qrels.test", "results.test", False, {"average": "run"}),  # -m all_trec
    "out.test.aq": ("qrels.test", "results.test", True, {"average": "run"}),  # -m all_trec -q
    "out.test.aqc": ("qrels.test", "results.trunc", True, {"average": "qrels"}),  # -m all_trec -q -c
    "out.test.aqcM": ("qrels.test", "results.trunc", True, {"average": "qrels", "max_per_query": 100}),  # ... -M100
    "out.test.aql": ("qrels.rel_level", "results.test", True, {"average": "run", "rel_level": 2}),  # -m all_trec -mrelstring.20 -q -l2
    "out.test.meas_params": ("qrels.test", "results.test", True, {"average": "run"}),  # -q -miprec_at_recall..10,.20,... (see the Makefile)
}
# the values compared per option set (every line of the file but those of the refused measures), so
# that a change that silently compares fewer fails: 1,432 in all
EXPECTED_VALUES = {
    "out.test": 29,  # of 30 lines: gm_map refused
    "out.test.a": 89,  # of 94: gm_map, gm_bpref, relstring, G, Rndcg... see refusal()
    "out.test.aq": 350,  # of 367
    "out.test.aqc": 263,  # of 276
    "out.test.aqcM": 263,  # of 276
    "out.test.aql": 350,  # of 367
    "out.test.meas_params": 88,  # of 88
}
FLAGS = {"average": "--average", "max_per_query": "--max-per-query", "rel_level": "--rel-level"}


def lines_of(name: str) -> list[tuple[str, str, str]]:
    """(measure, query, value) of each line of an expected output, as trec_eval printed them."""
    assert SUITE is not None
    return [tuple(field.strip() for field in line.split("\t")) for line in (SUITE / name).read_text().splitlines()]  # type: ignore[misc]


def computed(lines: list[tuple[str, str, str]]) -> list[str]:
    """The measures of an expected output that qrelkit computes (runid and num_q it prints anyway)."""
    return list(dict.fromkeys(m for m, _, _ in lines if m not in ("runid", "num_q") and refusal(m) is None))


def printed(measure: str, value: float) -> str:
    return str(int(round(value))) if measure in TREC_EVAL_COUNTS else f"{value:.4f}"


@pytest.mark.parametrize("name", OPTION_SETS)
def test_every_value_equals_trec_eval_9_0_8(name):
    qrels, run, _, options = OPTION_SETS[name]
    lines = lines_of(name)
    measures = computed(lines)
    assert SUITE is not None
    evaluation = evaluate_runs(read_qrels(SUITE / qrels), [read_run(SUITE / run)], measures, **options)
    names = trec_eval_names(measures)
    assert all(names[m] == m for m in measures)  # every name is read as the measure trec_eval prints under it
    ours: dict[tuple[str, str], float] = {}
    (run_name,) = evaluation.runs
    for measure in measures:
        for i, qid in enumerate(evaluation.queries):
            if evaluation.covers(run_name)[i]:
                ours[(measure, qid)] = float(evaluation.values[run_name][measure][i])
        ours[(measure, "all")] = trec_eval_all(evaluation, run_name, measure)
    compared = 0
    for measure, qid, value in lines:
        if measure == "runid":
            assert evaluation.tags == {run_name: value}
        elif measure == "num_q":
            assert evaluation.num_q(run_name) == int(value)
        elif measure in measures:
            assert printed(measure, ours[(measure, qid)]) == value, (measure, qid)
            assert ours[(measure, qid)] == pytest.approx(float(value), abs=5e-5)
        else:
            continue
        compared += 1
    assert compared == EXPECTED_VALUES[name]


@pytest.mark.parametrize("name", OPTION_SETS)
def test_format_trec_is_trec_eval_byte_for_byte(name):
    qrels, run, per_query, options = OPTION_SETS[name]
    lines = lines_of(name)
    measures = computed(lines)
    assert SUITE is not None
    args = ["evaluate", "--qrels", str(SUITE / qrels), "--runs", str(SUITE / run), "--format", "trec"]
    args += [item for key, value in options.items() for item in (FLAGS[key], str(value))]
    args += [item for measure in measures for item in ("--measure", measure)]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    kept = {"runid", "num_q", *measures}
    expected = [line for line in (SUITE / name).read_text().splitlines() if line.split("\t")[0].strip() in kept]
    got = result.stdout.splitlines()
    if not any(line.startswith("runid") for line in expected):  # trec_eval -m without runid, num_q prints neither
        got = [line for line in got if line.split("\t")[0].strip() not in ("runid", "num_q")]
    if not per_query:  # trec_eval without -q prints only the `all` lines
        got = [line for line in got if line.split("\t")[1] == "all"]
    assert got == expected


def test_the_option_sets_reach_every_trec_eval_measure_qrelkit_computes():
    """Each measure of trec_eval's table (all_trec) that qrelkit does not refuse is compared above."""
    reached = {TREC_EVAL_ORDER[trec_eval_sort_key(m)[0]] for name in OPTION_SETS for m in computed(lines_of(name))}
    computable = {m for m in TREC_EVAL_ORDER if refusal(m) is None} - {"runid", "num_q"}  # compared on their own lines
    assert reached == computable
