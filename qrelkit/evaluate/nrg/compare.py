"""The measures seed 004 compares NRG with, computed on NRG's layout: unique contributions to
the relevant set (section 5), rareness-based precision@k (Türkmen et al.) and TaSC (Arabzadeh et al.).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qrelkit.evaluate.nrg.layout import prepare, segment_sums
from qrelkit.evaluate.nrg.options import Grades, NRGConfig, NRGError, PriorSets
from qrelkit.evaluate.nrg.score import NRGResult, PerQuery, base_scores, prior_index, residual_gain
from qrelkit.io.trec import Qrels, Run


def unique_contributions(
    qrels: Qrels | Grades,
    runs: Sequence[Run],
    priors: PriorSets | None = None,
    *,
    depth: int = 10,
    rel_level: int = 1,
    order: str = "trec_eval",
) -> PerQuery:
    """Relevant items (grade ≥ rel_level) in a run's top ``depth`` that no prior run has in its top ``depth``.

    Section 5's instantiation of NRG: binary gain, seen = 1 to the pool depth K, N = 1; the
    mean is the number of unique contributions to the relevant set per query. (The seed's
    code divides each count by 10, i.e. reports it as precision@10; multiply by K for that.)
    """
    prepared = prepare(qrels, runs, NRGConfig.parse("precision", depth, f"binary:{rel_level}", order))
    residual = residual_gain(prepared, prior_index(prepared.runs, priors))
    counts = segment_sums(residual * prepared.seen, prepared.items.starts)
    return PerQuery(f"unique@{depth}", prepared.runs, prepared.items.queries, counts)


def rareness_precision(
    qrels: Qrels | Grades, runs: Sequence[Run], *, depth: int = 10, alpha: float = 1.0, rel_level: int = 1, order: str = "trec_eval"
) -> PerQuery:
    """Rareness-based precision@k (Türkmen, Lease and Kutlu, ECIR 2023).

    (1/k) Σ_{i≤k} rel(d_i) · (1 + α · (1 − n(d_i)/N)), with n(d) the number of the N runs
    (all runs given, the scored one included) with d in their top k for the query.
    """
    prepared = prepare(qrels, runs, NRGConfig.parse("precision", depth, f"binary:{rel_level}", order))
    in_top = prepared.positions > 0
    rarity = 1.0 - in_top.sum(axis=0) / max(len(runs), 1)
    values = segment_sums(in_top * (1.0 + alpha * rarity)[None, :], prepared.items.starts) / depth
    return PerQuery(f"rareness-P@{depth}(alpha={alpha:g})", prepared.runs, prepared.items.queries, values)


def tasc(
    qrels: Qrels | Grades,
    runs: Sequence[Run],
    priors: PriorSets | None = None,
    *,
    model="ndcg",
    depth=10,
    gain="linear",
    order: str = "trec_eval",
) -> PerQuery:
    """Max-TaSC (Arabzadeh et al., SIGIR 2023): per query (1 − max_{p ∈ priors} M_p(q)) · M_run(q).

    M is the absolute metric (nDCG@10 by default); an empty prior set leaves M unchanged.
    """
    prepared = prepare(qrels, runs, NRGConfig.parse(model, depth, gain, order))
    base = base_scores(prepared)
    best_prior = np.zeros_like(base)
    for t, prior in enumerate(prior_index(prepared.runs, priors)):
        if len(prior):
            best_prior[t] = base[prior].max(axis=0)
    return PerQuery(f"TaSC[{prepared.config.base_label}]", prepared.runs, prepared.items.queries, (1.0 - best_prior) * base)


def comparison_measures(qrels: Qrels | Grades, runs: Sequence[Run], result: NRGResult) -> list[PerQuery]:
    """The measures seed 004 compares NRG with, on ``result``'s prior sets and depth:
    unique contributions to the relevant set, rareness-based precision@K (over all runs) and TaSC."""
    config = result.config
    if config.depth is None:
        raise NRGError("unique contributions, rareness-based precision and TaSC need a depth K (the pool depth), not 'full'")
    level = config.gain.level if config.gain.kind == "binary" else 1
    depth, order = config.depth, config.order
    return [
        unique_contributions(qrels, runs, result.priors, rel_level=level, depth=depth, order=order),
        rareness_precision(qrels, runs, rel_level=level, depth=depth, order=order),
        tasc(qrels, runs, result.priors, model=config.model, gain=config.gain, depth=depth, order=order),
    ]
