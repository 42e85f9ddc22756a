"""Interpolation and extrapolation (Zhan et al., CIKM 2022): ReSTrain, ReSTTest, scores in the two
regimes, and how much a test set overlaps its training set. Plain arrays and data in and out;
`qrelkit.commands.resample` reads the files and embeds the queries.

    split = restrain(test_vectors, train_vectors, train_qids, interpolation_per_query=150, exclusion_per_query=2000)
    buckets = resttest(test_vectors, test_qids, train_vectors, train_qids, k=5, seed=0)
    scores = evaluate_resttest(qrels, buckets.test_splits(), runs, ["nDCG@10"])
    table3 = label_overlap(test_qrels, train_qrels, levels=(1, 2, 3))
"""

from qrelkit.evaluate.interex.overlap import DuplicateQuery, LabelOverlap, OverlapRow, duplicate_queries, label_overlap
from qrelkit.evaluate.interex.regimes import (
    BucketQueries,
    RegimeScore,
    ReSTrainEvaluation,
    ReSTTestEvaluation,
    ReSTTestScores,
    check_buckets,
    evaluate_restrain,
    evaluate_resttest,
)
from qrelkit.evaluate.interex.restrain import NearestSimilarity, ReSTrainSplit, restrain
from qrelkit.evaluate.interex.resttest import Bucket, ReSTTestSplit, resttest
from qrelkit.evaluate.interex.similarity import TopK, top_k_similar, unit_rows

__all__ = [
    "Bucket",
    "BucketQueries",
    "DuplicateQuery",
    "LabelOverlap",
    "NearestSimilarity",
    "OverlapRow",
    "ReSTTestEvaluation",
    "ReSTTestScores",
    "ReSTTestSplit",
    "ReSTrainEvaluation",
    "ReSTrainSplit",
    "RegimeScore",
    "TopK",
    "check_buckets",
    "duplicate_queries",
    "evaluate_restrain",
    "evaluate_resttest",
    "label_overlap",
    "restrain",
    "resttest",
    "top_k_similar",
    "unit_rows",
]
