"""Estimates of the runs' measures from a judge's labels and a designed sample of human ones.

A judge labels the whole pool; humans label a sample drawn with known inclusion probabilities
(`designs`). The estimators (`pairs` for samples of pairs, `queries` for samples of whole
queries) correct the judge's numbers by what the humans found, so that the estimate is unbiased
for the number full human qrels would give, with intervals whose coverage
`benchmarks/bench_human_budget.py` measures. Plain data in and out (numpy arrays), any leading
axis a set of draws (a simulation runs 1,000 samples at once).
"""
