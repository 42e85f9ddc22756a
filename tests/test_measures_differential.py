"""Every trec_eval measure qrelkit computes, against the reference on generated tracks: pytrec_eval
(trec_eval's C code, at full precision) always, and a trec_eval 9.0.8 binary where one is at hand
(with -c, -M and relevance level 0 too, which pytrec_eval lacks). The generator is seeded and makes
hundreds of small tracks that hit the edges: negative grades, queries whose every judgment is
negative, queries with nothing relevant, scores tied outright and tied only as float32 (1.0 and
1.00000001), documents and queries the qrels lack, queries the run misses (empty for the run).

Every value is equal, but where docs/names.md ("Where qrelkit and trec_eval differ") names the
difference, and the test checks that named value instead:
- a query whose every judgment is negative: pytrec_eval's values depend on the order of the run's
  lines (and judged_only can hang it), so it is never given one; qrelkit gives what trec_eval prints
  for such a query when it gets that far (num_ret the documents retrieved, utility their cost,
  everything else 0), and the binary checks that where it runs;
- with judged_only, a query with nothing judged retrieved: trec_eval's iprec_at_recall and 11pt_avg
  are 0/0 (NaN); qrelkit's are 0.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from trec_eval_tool import BINARY_REASON, trec_eval_binary

from qrelkit.evaluate import evaluate_runs
from qrelkit.evaluate.trec_names import TREC_EVAL_COUNTS, expand_trec_eval, trec_eval_all
from qrelkit.io import read_qrels, read_run

TREC_EVAL = trec_eval_binary()
CASES = 300
# trec_eval's -m spellings; pytrec_eval takes the same and answers under the names trec_eval prints
SPEC = [
    "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P.1,3,5,10", "recall.1,3,10",
    "infAP", "Rprec_mult", "utility", "11pt_avg", "binG", "ndcg", "ndcg_cut.1,3,10", "map_cut.3,10", "relative_P.1,3,10",
    "success.1,3,10", "set_P", "set_recall", "set_F", "set_map", "set_relative_P", "num_nonrel_judged_ret",
]  # fmt: skip
DEFAULT_CUTS = {
    "iprec_at_recall": "iprec_at_recall..0,.1,.2,.3,.4,.5,.6,.7,.8,.9,1",
    "Rprec_mult": "Rprec_mult.0.2,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0",
}
MEASURES = [name for spec in SPEC for name in expand_trec_eval(DEFAULT_CUTS.get(spec, spec))]
SCORES = [3.0, 2.5, 1.0, 1.00000001, 0.5, 0.1, 0.1000000001, 0.0, -1.5, -2.0]  # ties, and ties only as float32


def make_track(seed: int, folder: Path) -> tuple[Path, Path, set[str]]:
    """A qrels and a run file; and the queries whose every judgment is negative."""
    rng = np.random.default_rng(seed)
    queries = [f"{rng.choice(['q', '', 'T'])}{i}" for i in rng.permutation(12)[: rng.integers(2, 7)]]
    docs = [f"d{i}" for i in range(25)]
    qrels, all_negative = [], set()
    for qid in queries:
        judged = rng.choice(docs, size=rng.integers(1, 12), replace=False)
        kind = rng.random()
        if kind < 0.15:  # every judgment negative
            grades = rng.integers(-2, 0, size=len(judged))
        elif kind < 0.3:  # judged, nothing relevant
            grades = rng.integers(-1, 1, size=len(judged))
        else:
            grades = rng.integers(-1, 4, size=len(judged))
        if grades.max() < 0:
            all_negative.add(qid)
        qrels += [f"{qid} 0 {doc} {grade}\n" for doc, grade in zip(judged, grades)]
    run = []
    for qid in [*queries, "zz-not-judged"]:
        if rng.random() < 0.2:
            continue  # a query the run misses
        retrieved = rng.choice(docs, size=rng.integers(1, 15), replace=False)
        run += [f"{qid} Q0 {doc} {rank} {float(rng.choice(SCORES))!r} r\n" for rank, doc in enumerate(retrieved, start=1)]
    if not run:
        run = [f"{queries[0]} Q0 d0 1 1.0 r\n"]
    rng.shuffle(run)  # the line order must not matter
    (folder / f"{seed}.qrels").write_text("".join(qrels))
    (folder / f"{seed}.run").write_text("".join(run))
    return folder / f"{seed}.qrels", folder / f"{seed}.run", all_negative


def pytrec_values(qrels: Path, run: Path, level: int, judged_only: bool, left_out: set[str]) -> dict[str, dict[str, float]]:
    grades: dict[str, dict[str, int]] = {}
    for line in qrels.read_text().splitlines():
        qid, _, doc, grade = line.split()
        if qid not in left_out:
            grades.setdefault(qid, {})[doc] = int(grade)
    scores: dict[str, dict[str, float]] = {}
    for line in run.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        if qid in grades:
            scores.setdefault(qid, {})[doc] = float(np.float32(float(score)))
    evaluator = pytrec_eval.RelevanceEvaluator(grades, set(SPEC), relevance_level=level, judged_docs_only_flag=int(judged_only))
    return evaluator.evaluate(scores)


def named_value(measure: str, retrieved: int) -> float:
    """What qrelkit gives a query whose every judgment is negative (docs/names.md)."""
    return {"num_ret": retrieved, "utility": -retrieved}.get(measure, 0.0)


@pytest.mark.parametrize("chunk", range(6))
def test_every_value_equals_pytrec_eval_on_generated_tracks(tmp_path, chunk):
    compared = 0
    for seed in range(chunk * CASES // 6, (chunk + 1) * CASES // 6):
        qrels_path, run_path, all_negative = make_track(seed, tmp_path)
        level, judged_only = (1, 2)[seed % 2], seed % 3 == 0
        evaluation = evaluate_runs(read_qrels(qrels_path), [read_run(run_path)], MEASURES, rel_level=level, judged_only=judged_only)
        expected = pytrec_values(qrels_path, run_path, level, judged_only, all_negative)
        (run,) = evaluation.runs
        retrieved = evaluate_runs(read_qrels(qrels_path), [read_run(run_path)], ["num_ret"], judged_only=judged_only).values[run]
        for i, qid in enumerate(evaluation.queries):
            if not evaluation.covers(run)[i]:
                continue
            for measure in MEASURES:
                ours = float(evaluation.values[run][measure][i])
                if qid in all_negative:
                    theirs = named_value(measure, int(retrieved["num_ret"][i]))
                else:
                    theirs = expected[qid][measure]
                    if math.isnan(theirs) and judged_only and measure.startswith(("iprec_at_recall", "11pt_avg")):
                        theirs = 0.0  # trec_eval's 0/0 with nothing judged retrieved (docs/names.md)
                assert ours == pytest.approx(theirs, abs=1e-12), (seed, qid, measure, ours, theirs)
                compared += 1
    assert compared > 7000  # 50 tracks' queries × 73 measures (52,554 values over the 6 chunks)


def trec_eval_lines(binary: Path, options: list[str], qrels: Path, run: Path) -> dict[tuple[str, str], str] | None:
    """trec_eval's lines by (measure, query); None where it stops on a run that shares no query with the qrels."""
    given = [item for spec in SPEC for item in ("-m", DEFAULT_CUTS.get(spec, spec))]
    done = subprocess.run([str(binary), "-q", *options, *given, str(qrels), str(run)], capture_output=True, text=True, timeout=30)
    if done.returncode == 7:
        return None
    assert done.returncode == 0, done.stderr
    return {(m.strip(), q): v for m, q, v in (line.split("\t") for line in done.stdout.splitlines())}


@pytest.mark.skipif(TREC_EVAL is None, reason=BINARY_REASON)
def test_every_value_and_all_line_equals_trec_eval_on_generated_tracks(tmp_path):
    """With -c, -M, -J and levels 0 to 2, as trec_eval prints them (4 decimals). trec_eval itself
    stops (exit 4) when a query whose grades are all negative comes first in its qid order, and
    crashes (a memset of -1 bytes) on a query whose grades are all -2 or lower: its tracks get grade
    -1 for -2, and a first query."""
    compared = 0
    for seed in range(CASES):
        qrels_path, run_path, all_negative = make_track(seed, tmp_path)
        qrels_path.write_text(qrels_path.read_text().replace(" -2\n", " -1\n"))
        if all_negative:  # a query that sorts before every other, judged and retrieved, keeps trec_eval running
            qrels_path.write_text("!first 0 d0 1\n" + qrels_path.read_text())
            run_path.write_text("!first Q0 d0 1 1.0 r\n" + run_path.read_text())
        level, complete, judged_only, depth = seed % 3, seed % 2 == 0, seed % 5 == 0, (None, 3, 8)[seed % 3]
        options = [f"-l{level}", *(["-c"] if complete else []), *(["-J"] if judged_only else []), *([f"-M{depth}"] if depth else [])]
        theirs = trec_eval_lines(TREC_EVAL, options, qrels_path, run_path)
        evaluation = evaluate_runs(
            read_qrels(qrels_path),
            [read_run(run_path)],
            MEASURES,
            average="qrels" if complete else "run",
            rel_level=level,
            judged_only=judged_only,
            max_per_query=depth,
        )
        (run,) = evaluation.runs
        if theirs is None:  # `evaluate` refuses such a run too (test_trec_eval_edges.py)
            assert not evaluation.covers(run).any()
            continue
        for measure in MEASURES:
            values = {q: float(v) for q, v, c in zip(evaluation.queries, evaluation.values[run][measure], evaluation.covers(run)) if c}
            values["all"] = trec_eval_all(evaluation, run, measure)
            for qid, value in values.items():
                printed = str(int(round(value))) if measure in TREC_EVAL_COUNTS else f"{value:.4f}"
                expected = theirs[(measure, qid)].strip()
                if expected in ("-nan", "nan") and judged_only and measure.startswith(("iprec_at_recall", "11pt_avg")):
                    continue  # trec_eval's 0/0 (docs/names.md)
                assert printed == expected, (seed, options, qid, measure, printed, expected)
                compared += 1
    assert compared > 70000  # 77,568 values, `all` lines included
