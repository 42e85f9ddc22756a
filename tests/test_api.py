"""The public Python API: every name resolves, results are plain data with to_dict() and to_pandas()."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import qrelkit

DEMO = qrelkit.__file__.replace("__init__.py", "data/demo")


def test_every_public_name_resolves():
    for name in qrelkit.__all__:
        assert getattr(qrelkit, name) is not None, name


def test_import_qrelkit_is_light():
    heavy = "('numpy', 'duckdb', 'scipy', 'ir_measures', 'torch')"
    code = f"import sys, qrelkit; print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)))"
    result = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == []


def test_results_are_plain_data_with_to_dict_and_to_pandas():
    pd = pytest.importorskip("pandas")
    qrels = qrelkit.read_qrels(f"{DEMO}/qrels.txt")
    runs = qrelkit.read_runs([f"{DEMO}/runs"])
    evaluation = qrelkit.evaluate_runs(qrels, runs, ["nDCG@10"])
    frame = evaluation.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(runs) * len(evaluation.queries)
    means = frame.groupby("run")["value"].mean().to_dict()
    assert means == pytest.approx({run: v["nDCG@10"] for run, v in evaluation.to_dict()["runs"].items()})
    audit = qrelkit.audit(qrels, qrels, runs, resamples=0)
    assert json.loads(json.dumps(audit.to_dict()))["labels"]["cohen_kappa"] == pytest.approx(1.0)
    assert (audit.to_pandas()["model"] == audit.to_pandas()["reference"]).all()
    result = qrelkit.nrg(qrels, runs)
    assert set(result.to_pandas()["run"]) == {r.name for r in runs} and result.to_dict()["queries"] == len(result.queries)
    graded = qrelkit.grade_scores([("q", "a", 0.1), ("q", "b", 0.9)], name="g")
    assert graded.to_pandas()["grade"].tolist() == [0, 2] and graded.to_dict()["method"] == "quantile"
