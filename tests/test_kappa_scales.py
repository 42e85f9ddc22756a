"""κ only between grades on one scale, in bounded memory (issues 34 and 36): a judge or a reference whose
grades run 0..20000 (or take the values 0 and ±2^31) makes `agree` and `compare` say in one line that
κ and α are not computed, never build a confusion matrix over the whole range (20001² counts are
3.2 GB) and never end in a MemoryError. Each command runs in its own process under a 768 MiB
address-space limit (interpreter and imports included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qrelkit.evaluate.audit import scale_warning
from qrelkit.evaluate.labels import MAX_KAPPA_LEVELS, kappa_scale_problem, label_agreement, shared_pairs

resource = pytest.importorskip("resource")
LIMIT = 768 << 20
QUERIES, DOCS = [f"q{i}" for i in range(8)], [f"d{j}" for j in range(60)]
LIMITED = "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); sys.argv = sys.argv[1:]; "
LIMITED += "runpy.run_module('qrelkit.cli', run_name='__main__')"


def limited(*args: object) -> subprocess.CompletedProcess:
    environ = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, "-c", LIMITED.format(limit=LIMIT), "qrelkit", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=environ, timeout=600)


def write_qrels(path: Path, grades: np.ndarray) -> Path:
    path.write_text("".join(f"{q} 0 {d} {int(g)}\n" for (q, d), g in zip(((q, d) for q in QUERIES for d in DOCS), grades)))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("scales")
    rng = np.random.default_rng(7)
    n = len(QUERIES) * len(DOCS)
    human = rng.integers(0, 4, n)
    wide = rng.integers(0, 20001, n)
    wide[:2] = [0, 20000]
    extreme = rng.choice([0, -(2**31), 2**31], n)
    out = {
        "human": write_qrels(folder / "human.txt", human),
        "wide": write_qrels(folder / "wide.txt", wide),
        "extreme": write_qrels(folder / "extreme.txt", extreme),
        "noisy": write_qrels(folder / "noisy.txt", np.where(rng.random(n) < 0.3, rng.integers(0, 4, n), human)),
    }
    runs = folder / "runs"
    runs.mkdir()
    for r in range(5):
        lines = [f"{q} Q0 {d} {i + 1} {-i - r * 0.5} run{r}\n" for q in QUERIES for i, d in enumerate(rng.permutation(DOCS))]
        (runs / f"run{r}.run").write_text("".join(lines))
    out["runs"] = runs
    return out


def _one_line_refusal(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr
    assert "MemoryError" not in result.stderr and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if "not computed" in line]
    assert len(lines) == 1 and "κ and α would read each value as a category" in lines[0]


@pytest.mark.parametrize(("model", "reference"), [("wide", "human"), ("human", "wide"), ("extreme", "human"), ("human", "extreme")])
def test_agree_with_a_grade_range_beyond_one_scale_refuses_kappa_in_one_line_in_bounded_memory(files, model, reference):
    result = limited(
        "agree",
        "--model-qrels",
        files[model],
        "--reference-qrels",
        files[reference],
        "--runs",
        files["runs"],
        "--measure",
        "nDCG@10",
        "--resamples",
        "100",
        "--json",
    )
    _one_line_refusal(result)
    labels = json.loads(result.stdout)["labels"]
    assert labels["cohen_kappa"] is None and labels["krippendorff_alpha_ordinal"] is None and labels["confusion"]["matrix"] == []
    assert "more than the 11 of one relevance scale" in labels["not_computed"]
    assert json.loads(result.stdout)["systems"]["nDCG@10"]["kendall_tau"] is not None  # the rankings are still compared


@pytest.mark.parametrize("reference", ["human", "wide", "extreme"])
def test_compare_with_a_judge_of_grades_0_to_20000_runs_in_bounded_memory(files, reference):
    judges = ["--judge", files["wide"], "--judge", files["noisy"], "--judge", files["extreme"]]
    result = limited(
        "compare",
        *judges,
        "--reference-qrels",
        files[reference],
        "--runs",
        files["runs"],
        "--measure",
        "nDCG@10",
        "--resamples",
        "100",
        "--permutations",
        "100",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    assert "MemoryError" not in result.stderr and "Traceback" not in result.stderr
    payload = json.loads(result.stdout)
    audits = {j["name"]: j["audit"] for j in payload["judges"]}
    assert "not computed" in audits["wide"]["labels"]["not_computed"] and audits["wide"]["labels"]["cohen_kappa"] is None
    assert (audits["noisy"]["labels"]["cohen_kappa"] is None) == (reference != "human")  # 0–3 against 0–3: κ as ever
    assert payload["kappa_between_judges"]["wide"]["noisy"] is None
    assert all(d["statistic"] != "cohen_kappa" for d in payload["differences"] if "wide" in (d["first"], d["second"]))


def test_kappa_is_computed_on_scales_that_fit_one_scale_and_refused_beyond(tmp_path):
    """0–5 against 0–3 (an exam method against NIST): 6 values, κ as before with the scale warning;
    1–45 (pairwise-preference wins): refused. The warning's map hint stays one scale long."""
    reference = {"q": {f"d{i}": i % 4 for i in range(40)}}
    exam = {"q": {f"d{i}": i % 6 for i in range(40)}}
    wins = {"q": {f"d{i}": 1 + i for i in range(40)}}
    assert kappa_scale_problem(shared_pairs(exam, reference)) is None
    assert label_agreement(exam, reference).not_computed is None
    refused = label_agreement(wins, reference)
    assert np.isnan(refused.cohen_kappa) and refused.labels == [] and refused.not_computed.startswith("the grades span 41 values")
    assert MAX_KAPPA_LEVELS == 11
    percent = {"q": {f"d{i}": i for i in range(101)}}
    assert "--map-model (model grades onto the reference's scale)" in scale_warning(percent, reference)  # no 101-entry map
