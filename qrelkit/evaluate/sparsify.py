"""Balanced sparsification of qrels (seed 000, section 5; seed 001, Table 2): at most M relevant
items per query. One definition for FD@k's relevant side (`qrelkit fd --max-rel`) and for the
measures under cut qrels (`qrelkit evaluate --max-rel`, `qrelkit correlate --max-rel`).

Which relevant items a query keeps is a choice, and it is stated with every result:

- ``top-grade`` (the default, seed 000's procedure): the highest grade first, at random within a
  grade ("we first randomly select from the most relevant level … then move on");
- ``random``: uniformly at random among all relevant items, whatever their grade (seed 001's
  Table 2 speaks of "randomly selecting" relevant judgments).

Both are seeded and independent of the file's order. A cut qrels holds only the kept relevant
items (sparse labels): seed 001's Table 2 on DL19 (τ 0.796 / 0.784 / 0.594 at M = 10 / 5 / 1)
is matched by this reading (0.799 / 0.745 / 0.571 with `--keep random --seed 0`), not by one
that keeps the grade-1 judgments, which still give nDCG gain (τ -0.117 at M = 1, seed 0).
"""

from __future__ import annotations

import numpy as np

from qrelkit.errors import QrelkitError
from qrelkit.evaluate.choices import check_keep
from qrelkit.io import Qrel, Qrels, arrays


def default_relevance_level(qrels: Qrels) -> int:
    """2 for graded qrels (some grade above 1, as TREC DL), 1 for binary ones."""
    grades = arrays.numbers(qrels.table.column("grade"))
    return 2 if len(grades) and grades.max() >= 2 else 1


def relevant_items(
    qrels: Qrels, *, rel_level: int | None = None, max_rel: int | None = None, seed: int = 0, keep: str = "top-grade"
) -> dict[str, list[str]]:
    """qid -> relevant docids (grade ≥ rel_level), for queries with at least one.

    With ``max_rel`` = m a query keeps at most m, chosen as ``keep`` says (module docstring).
    """
    level = default_relevance_level(qrels) if rel_level is None else rel_level
    if max_rel is not None and max_rel < 1:
        raise QrelkitError(f"--max-rel must be at least 1 (got {max_rel})")
    check_keep(keep)
    rng = np.random.default_rng(seed)
    out: dict[str, list[str]] = {}
    for qid, grades in sorted(qrels.grades.items()):
        relevant = sorted((docid for docid, grade in grades.items() if grade >= level), key=lambda d: (-grades[d], d))
        if not relevant:
            continue
        if max_rel is not None and keep == "random":
            relevant = [relevant[i] for i in rng.permutation(len(relevant))][:max_rel]
        elif max_rel is not None:
            chosen: list[str] = []
            for grade in sorted({grades[d] for d in relevant}, reverse=True):
                if len(chosen) >= max_rel:
                    break
                tier = [d for d in relevant if grades[d] == grade]
                chosen += [tier[i] for i in rng.permutation(len(tier))][: max_rel - len(chosen)]
            relevant = chosen
        out[qid] = relevant
    if not out:
        raise QrelkitError(f"no query of qrels {qrels.name!r} has an item with grade >= {level}; try a lower --rel-level")
    return out


def describe_cut(max_rel: int, level: int, keep: str, seed: int) -> str:
    """How a cut was made, in words every output carries."""
    how = "highest grade first, at random within a grade" if keep == "top-grade" else "at random whatever their grade"
    return (
        f"at most {max_rel} relevant (grade >= {level}) per query, kept {how} (--keep {keep}, seed {seed}); "
        "no other judgment kept, as in sparse labels"
    )


def sparsify_qrels(
    qrels: Qrels, max_rel: int, *, rel_level: int | None = None, seed: int = 0, keep: str = "top-grade"
) -> tuple[Qrels, str]:
    """(qrels of at most ``max_rel`` relevant items per query, the sentence that says how).

    The kept items are :func:`relevant_items`' (FD@k's relevant side with the same options), with
    their grades; every other judgment is dropped, as in sparse labels (MS MARCO's ~1 relevant per
    query): the judgments below the level would otherwise still give gain (a TREC DL grade 1 under
    nDCG) and the cut would not be one of relevant items. A query with no relevant item has no
    judgment left, so means under the cut run over the queries that have one."""
    level = default_relevance_level(qrels) if rel_level is None else rel_level
    kept = relevant_items(qrels, rel_level=level, max_rel=max_rel, seed=seed, keep=keep)
    grades = qrels.grades
    entries = [Qrel(qid, docid, grades[qid][docid]) for qid, docids in kept.items() for docid in sorted(docids)]
    name = f"{qrels.name} (max-rel {max_rel}, {keep}, seed {seed})"
    return Qrels(name, entries, source=qrels.source), describe_cut(max_rel, level, keep, seed)
