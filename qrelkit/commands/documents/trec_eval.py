"""trec_eval -q's output lines of an evaluation (`qrelkit evaluate --format trec`), byte for byte."""

from __future__ import annotations

from typing import Any


def trec_eval_lines(evaluation: Any) -> list[str]:
    """trec_eval -q's output, byte for byte, one block per run: each query the run covers (in
    qid order) with its measures in trec_eval's order, then `runid`, `num_q` and each measure's
    `all` line. Over the qrels' queries (the default) this is `trec_eval -q -c -m runid -m num_q
    -m ...`; with average "run" it is the same without -c. `runid` is the run's tag column (as
    trec_eval prints it; the run's name where it has none). A measure prints under trec_eval's
    name (nDCG@10 as ndcg_cut_10); one trec_eval lacks keeps its own, after the others."""
    from qrelkit.evaluate.trec_names import TREC_EVAL_COUNTS, trec_eval_all, trec_eval_names, trec_eval_sort_key

    printed = trec_eval_names(evaluation.measures)
    order = sorted(evaluation.measures, key=lambda m: trec_eval_sort_key(printed[m]))

    def value(name: str, number: float) -> str:
        return str(int(round(number))) if name in TREC_EVAL_COUNTS else f"{number:.4f}"

    lines = []
    for run in evaluation.runs:
        covered = evaluation.covers(run)
        for i, qid in enumerate(evaluation.queries):
            if covered[i]:
                lines += [f"{printed[m]:<22}\t{qid}\t{value(printed[m], evaluation.values[run][m][i])}" for m in order]
        lines.append(f"{'runid':<22}\tall\t{(evaluation.tags or {}).get(run) or run}")  # trec_eval's runid: the tag column
        lines.append(f"{'num_q':<22}\tall\t{evaluation.num_q(run)}")
        lines += [f"{printed[m]:<22}\tall\t{value(printed[m], trec_eval_all(evaluation, run, m))}" for m in order]
    return lines
