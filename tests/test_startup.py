"""The command line imports heavy modules only when a command needs them (each costs 0.2-2 s
of startup). Checked in a fresh interpreter: which modules a command left in sys.modules."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ["duckdb", "ir_measures", "matplotlib", "pandas", "scipy", "sklearn", "torch"]

PROBE = """
import json, sys
from typer.testing import CliRunner
from qrelkit.cli import app
result = CliRunner().invoke(app, sys.argv[1:])
assert result.exit_code == 0, result.output
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def modules_after(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_help_imports_no_numerics():
    loaded = modules_after("evaluate", "--help")
    assert loaded.isdisjoint([*HEAVY, "numpy", "pyarrow"]), loaded & {*HEAVY, "numpy", "pyarrow"}


@pytest.mark.parametrize("measures", [["nDCG@10"], ["nDCG@10", "AP(rel=2)", "RR(rel=2)", "P@10", "R@100", "Judged@10"]])
def test_evaluating_files_with_common_measures_imports_none_of_the_heavy_modules(tmp_path, measures):
    (tmp_path / "q.txt").write_text("q1 0 d1 2\nq1 0 d2 0\n")
    (tmp_path / "r.run").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d3 2 1.0 t\n")
    args = ["evaluate", "--qrels", str(tmp_path / "q.txt"), "--runs", str(tmp_path / "r.run"), "--json"]
    loaded = modules_after(*args, *(item for m in measures for item in ("--measure", m)))
    assert loaded.isdisjoint(HEAVY), loaded & set(HEAVY)


def test_a_measure_not_vectorised_still_goes_through_ir_measures(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 d1 2\n")
    (tmp_path / "r.run").write_text("q1 Q0 d1 1 2.0 t\n")
    args = ["evaluate", "--qrels", str(tmp_path / "q.txt"), "--runs", str(tmp_path / "r.run"), "--measure", "ERR@10", "--json"]
    assert "ir_measures" in modules_after(*args)


def test_nrg_with_all_others_as_priors_imports_none_of_the_heavy_modules(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 d1 2\nq1 0 d2 1\n")
    (tmp_path / "runs").mkdir()
    for name, first in (("a", "d1"), ("b", "d2")):
        (tmp_path / "runs" / f"{name}.run").write_text(f"q1 Q0 {first} 1 2.0 t\nq1 Q0 d3 2 1.0 t\n")
    loaded = modules_after("nrg", "--qrels", str(tmp_path / "q.txt"), "--runs", str(tmp_path / "runs"), "--json")
    assert loaded.isdisjoint(HEAVY), loaded & set(HEAVY)
    # Parsing the options does not go through pydantic (typer 0.29 did, at ~0.3 s per command).
    assert "pydantic" not in loaded


def small_audit(tmp_path) -> list[str]:
    """Model and reference qrels and two runs: enough for `agree` and `report` to compute everything."""
    (tmp_path / "ref.txt").write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 1\nq2 0 d3 2\n")
    (tmp_path / "model.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\nq2 0 d3 1\n")
    (tmp_path / "runs").mkdir()
    for name, order in (("a", "d1 d2 d3"), ("b", "d3 d2 d1"), ("c", "d2 d1 d3")):
        lines = [f"{q} Q0 {d} {rank} {10 - rank} {name}\n" for q in ("q1", "q2") for rank, d in enumerate(order.split(), 1)]
        (tmp_path / "runs" / f"{name}.run").write_text("".join(lines))
    return ["--model-qrels", str(tmp_path / "model.txt"), "--reference-qrels", str(tmp_path / "ref.txt"), "--runs", str(tmp_path / "runs")]


def test_agree_imports_none_of_the_heavy_modules(tmp_path):
    # Spearman's ranks are numpy's own: scipy.stats alone was half of `agree`'s 0.98 s on DL19.
    loaded = modules_after("agree", *small_audit(tmp_path), "--measure", "nDCG@10", "--resamples", "50", "--json")
    assert loaded.isdisjoint(HEAVY), loaded & set(HEAVY)


def test_report_imports_matplotlib_to_draw_and_nothing_else_heavy(tmp_path):
    args = ["report", "--out", str(tmp_path / "r.html"), *small_audit(tmp_path), "--measure", "nDCG@10", "--resamples", "50"]
    loaded = modules_after(*args)
    assert (tmp_path / "r.html").stat().st_size > 0
    assert "matplotlib" in loaded  # the page's figures
    heavy = set(HEAVY) - {"matplotlib"}
    assert loaded.isdisjoint(heavy), loaded & heavy


def test_report_help_imports_no_numerics():
    loaded = modules_after("report", "--help")
    assert loaded.isdisjoint([*HEAVY, "numpy", "pyarrow"]), loaded & {*HEAVY, "numpy", "pyarrow"}
