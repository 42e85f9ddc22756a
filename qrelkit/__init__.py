"""qrelkit: make relevance judgments with models, and audit them.

The Python API takes what a notebook holds: qrels as a path, a stored name (with ``db=``), a
`Qrels`, a ``{qid: {docid: grade}}`` dict or a pandas/Arrow table (``query_id``, ``doc_id``,
``relevance``); runs as paths, stored names, `Run` objects, dicts or a table. Every result has
``to_dict()``, ``to_pandas()`` and a short repr (docs/python-api.md walks through DL19)::

    import qrelkit
    evaluation = qrelkit.evaluate("qrels.txt", "runs/", ["nDCG@10", "AP(rel=2)"])     # per-query values
    audit = qrelkit.agree("model.qrels", "qrels.txt", "runs/")                       # κ, τ, Relative Δ (jackknife intervals)
    graded = qrelkit.grade(db="lab.duckdb", judge_run="minilm", method="quantile")  # scores into 0/1/2 qrels
    table = qrelkit.judgments("lab.duckdb", "minilm").to_pandas()                   # every stored field
    which = qrelkit.compare(judges=["a.qrels", "b.qrels"], reference="qrels.txt", runs=["runs/"])  # .to_pandas()
    fooled = qrelkit.probe("job.yaml", ["query-term-injection"], sample=200)         # gullibility probes
    report = qrelkit.judge("job.yaml")                                               # judge what is missing
    store = qrelkit.Store("lab.duckdb")  # holds no connection between calls: the command line still runs

Names are imported on first use, so `import qrelkit` stays light.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from qrelkit.version import __version__

# public name -> (module, attribute)
_API = {
    # the use cases, taking every form of qrels and runs (qrelkit.api)
    "agree": ("qrelkit.api", "agree"),
    "compare": ("qrelkit.api", "compare"),  # several judges against one reference, paired differences
    "audit": ("qrelkit.api", "audit"),
    "correlate": ("qrelkit.api", "correlate"),
    "nrg": ("qrelkit.api", "nrg"),
    "fd": ("qrelkit.api", "fd"),
    "grade": ("qrelkit.api", "grade"),
    "judge": ("qrelkit.api", "judge"),
    "judgments": ("qrelkit.api", "judgments"),
    "probe": ("qrelkit.api", "probe"),  # gullibility probes of a job's judge (docs/probes.md)
    "data_path": ("qrelkit.api", "data_path"),
    "estimate": ("qrelkit.api", "estimate"),  # runs' measures from a judge and a designed human sample (docs/human-budget.md)
    "assess_plan": ("qrelkit.api", "assess_plan"),
    "assess_load": ("qrelkit.api", "assess_load"),
    "Store": ("qrelkit.storage.brief", "BriefStore"),
    # reading the field's formats
    "read_run": ("qrelkit.io", "read_run"),
    "read_runs": ("qrelkit.io", "read_runs"),
    "read_qrels": ("qrelkit.io", "read_qrels"),
    "read_topics": ("qrelkit.io", "read_topics"),
    "read_documents": ("qrelkit.io", "read_documents"),
    "write_qrels": ("qrelkit.io", "write_qrels"),
    "Run": ("qrelkit.io", "Run"),
    "Qrels": ("qrelkit.io", "Qrels"),
    # the pure functions underneath (plain data in and out)
    "evaluate_runs": ("qrelkit.evaluate.metrics", "evaluate_runs"),
    "Evaluation": ("qrelkit.evaluate.metrics", "Evaluation"),
    "Audit": ("qrelkit.evaluate.audit", "Audit"),
    "label_agreement": ("qrelkit.evaluate.labels", "label_agreement"),
    "correlate_systems": ("qrelkit.evaluate.agreement", "correlate_systems"),
    "group_bias": ("qrelkit.evaluate.bias", "group_bias"),
    "frechet_distance": ("qrelkit.evaluate.fd", "frechet_distance"),
    "fd_of_runs": ("qrelkit.evaluate.fd", "fd_of_runs"),
    "FDSettings": ("qrelkit.evaluate.fd", "FDSettings"),
    "restrain": ("qrelkit.evaluate.interex", "restrain"),
    "resttest": ("qrelkit.evaluate.interex", "resttest"),
    "label_overlap": ("qrelkit.evaluate.interex", "label_overlap"),
    "rank_correlations": ("qrelkit.evaluate.correlate", "rank_correlations"),
    "sparsify_qrels": ("qrelkit.evaluate.sparsify", "sparsify_qrels"),
    "bootstrap_interval": ("qrelkit.evaluate.bootstrap", "bootstrap_interval"),
    "paired_intervals": ("qrelkit.evaluate.bootstrap", "paired_intervals"),
    "CompareRequest": ("qrelkit.commands.requests", "CompareRequest"),
    "compare_judges": ("qrelkit.evaluate.compare", "compare_judges"),
    "ProbeRequest": ("qrelkit.commands.requests", "ProbeRequest"),
    "probe_shift": ("qrelkit.evaluate.probes", "probe_shift"),
    "load_probe": ("qrelkit.probes", "load_probe"),
    # judging
    "load_job": ("qrelkit.jobs", "load_job"),
    "run_job": ("qrelkit.jobs", "run_job"),
    "grade_scores": ("qrelkit.jobs", "grade_scores"),
    "grade_judge_run": ("qrelkit.jobs", "grade_judge_run"),
    "GradingSpec": ("qrelkit.jobs", "GradingSpec"),
    "create_judge": ("qrelkit.judges", "create_judge"),
    "load_template": ("qrelkit.prompts", "load_template"),
}

__all__ = ["__version__", "evaluate", *sorted(_API)]


class _CallableEvaluate(types.ModuleType):
    """The subpackage `qrelkit.evaluate`, which is also the function `qrelkit.evaluate(qrels, runs,
    measures)`: Python binds a subpackage to its parent's attribute of the same name when it is
    first imported, so the function cannot simply sit beside it; the module answers the call."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from qrelkit.api import evaluate

        return evaluate(*args, **kwargs)

    @property
    def __signature__(self) -> Any:
        """The function's parameters (`inspect.signature(qrelkit.evaluate)`)."""
        import inspect

        from qrelkit.api import evaluate

        return inspect.signature(evaluate)


class _Package(types.ModuleType):
    """This module: whenever the import system binds the subpackage `evaluate`, it is made callable."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "evaluate" and type(value) is types.ModuleType:
            value.__class__ = _CallableEvaluate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        return importlib.import_module("qrelkit.evaluate")  # binding it here makes it callable (_Package)
    if name in _API:
        module, attribute = _API[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'qrelkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
