"""trec_eval's -M and -J on a run, before any measure: `max_per_query` keeps each query's first M
documents in trec_eval's order (score as float32 descending, docid descending), then
`judged_only` drops every document the qrels do not judge (absent, or a negative grade, which
trec_eval reads as "in the pool, not judged"); what is left keeps its order, so ranks close up
(trec_eval's form_res_rels.c). Every measure, computed here or by ir_measures, then sees the cut run."""

from __future__ import annotations

import numpy as np

from qrelkit.evaluate.ranked import JudgedPairs, grades_in_file_order, within_query_ranks
from qrelkit.io import arrays
from qrelkit.io.trec import Run


def cut_run(run: Run, pairs: JudgedPairs, *, judged_only: bool = False, max_per_query: int | None = None) -> Run:
    """``run`` with trec_eval's -M ``max_per_query`` and -J ``judged_only`` applied (the run itself
    when neither is asked for); its entries stay in file order."""
    if not judged_only and max_per_query is None:
        return run
    keep = np.ones(len(run), bool)
    if max_per_query is not None:
        order = run.trec_order()
        codes, _ = run.query_codes()
        keep[order[within_query_ranks(codes[order]) > max_per_query]] = False
    if judged_only:
        keep &= grades_in_file_order(run, pairs) >= 0
    if keep.all():
        return run
    table = run.table.take(arrays.from_numpy(np.flatnonzero(keep)))
    return Run.from_table(run.name, table, tag=run.tag, source=run.source, notes=run.notes)
