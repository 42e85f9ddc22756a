"""qrelkit: make relevance judgments with models, and audit them.

The Python API, plain data in and out (every result has ``to_dict()``, tabular ones ``to_pandas()``)::

    import qrelkit
    qrels = qrelkit.read_qrels("qrels.txt")
    runs = qrelkit.read_runs(["runs/"])
    evaluation = qrelkit.evaluate_runs(qrels, runs, ["nDCG@10", "AP(rel=2)"])  # per-query values
    audit = qrelkit.audit(qrelkit.read_qrels("model.qrels"), qrels, runs)   # κ, τ, Relative Δ (BCa intervals)
    cut, how = qrelkit.sparsify_qrels(qrels, 1, seed=0)                     # at most 1 relevant per query
    which = qrelkit.compare(judges=["a.qrels", "b.qrels"], reference="qrels.txt", runs=["runs/"])  # .to_pandas()
    table3 = qrelkit.correlate(qrels=["qrels.txt"], runs=["runs/"], measures=["nDCG@10", "RR(rel=2)"])
    report = qrelkit.run_job(qrelkit.load_job("job.yaml"))                  # judge what is missing
    graded = qrelkit.grade_scores(scores, name="mine", method="quantile", per_topic=True)

Names are imported on first use, so `import qrelkit` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> (module, attribute)
_API = {
    # reading the field's formats
    "read_run": ("qrelkit.io", "read_run"),
    "read_runs": ("qrelkit.io", "read_runs"),
    "read_qrels": ("qrelkit.io", "read_qrels"),
    "read_topics": ("qrelkit.io", "read_topics"),
    "read_documents": ("qrelkit.io", "read_documents"),
    "write_qrels": ("qrelkit.io", "write_qrels"),
    "Run": ("qrelkit.io", "Run"),
    "Qrels": ("qrelkit.io", "Qrels"),
    # evaluation and audit (pure)
    "evaluate_runs": ("qrelkit.evaluate.metrics", "evaluate_runs"),
    "Evaluation": ("qrelkit.evaluate.metrics", "Evaluation"),
    "audit": ("qrelkit.evaluate.audit", "audit"),
    "Audit": ("qrelkit.evaluate.audit", "Audit"),
    "label_agreement": ("qrelkit.evaluate.labels", "label_agreement"),
    "correlate_systems": ("qrelkit.evaluate.agreement", "correlate_systems"),
    "group_bias": ("qrelkit.evaluate.bias", "group_bias"),
    "frechet_distance": ("qrelkit.evaluate.fd", "frechet_distance"),
    "fd_of_runs": ("qrelkit.evaluate.fd", "fd_of_runs"),
    "FDSettings": ("qrelkit.evaluate.fd", "FDSettings"),
    "nrg": ("qrelkit.evaluate.nrg", "nrg"),
    "restrain": ("qrelkit.evaluate.interex", "restrain"),
    "resttest": ("qrelkit.evaluate.interex", "resttest"),
    "label_overlap": ("qrelkit.evaluate.interex", "label_overlap"),
    "rank_correlations": ("qrelkit.evaluate.correlate", "rank_correlations"),
    "sparsify_qrels": ("qrelkit.evaluate.sparsify", "sparsify_qrels"),
    "bootstrap_interval": ("qrelkit.evaluate.bootstrap", "bootstrap_interval"),
    "paired_intervals": ("qrelkit.evaluate.bootstrap", "paired_intervals"),
    # the same from files and databases, as the command line does it
    "agree": ("qrelkit.commands.agree", "agree"),
    "evaluate_files": ("qrelkit.commands.data", "evaluate"),  # `qrelkit evaluate`: files or stored names, --max-rel
    "correlate": ("qrelkit.commands.correlate", "correlate"),
    "compare": ("qrelkit.commands.compare", "compare"),  # several judges against one reference, paired differences
    "CompareRequest": ("qrelkit.commands.compare", "CompareRequest"),
    "compare_judges": ("qrelkit.evaluate.compare", "compare_judges"),
    # judging
    "load_job": ("qrelkit.jobs", "load_job"),
    "run_job": ("qrelkit.jobs", "run_job"),
    "grade_scores": ("qrelkit.jobs", "grade_scores"),
    "grade_judge_run": ("qrelkit.jobs", "grade_judge_run"),
    "GradingSpec": ("qrelkit.jobs", "GradingSpec"),
    "create_judge": ("qrelkit.judges", "create_judge"),
    "load_template": ("qrelkit.prompts", "load_template"),
    "Store": ("qrelkit.storage", "Store"),
}

__all__ = ["__version__", *sorted(_API)]


def __getattr__(name: str) -> Any:
    if name in _API:
        module, attribute = _API[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'qrelkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
