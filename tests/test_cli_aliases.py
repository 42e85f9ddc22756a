"""Every renamed option still answers to its old spelling (a hidden alias): the old spelling gives
the same result as the new one, and `--help` shows only the new one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qrelkit.cli import app

DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
runner = CliRunner()

# (command, old spelling, new spelling)
ALIASES = [
    ("agree", "--qrels", "--model-qrels"),
    ("agree", "--reference", "--reference-qrels"),
    ("agree", "--group-by", "--groups"),
    ("agree", "--binarize", "--rel-level"),
    ("agree", "--bootstrap", "--resamples"),
    ("report", "--qrels", "--model-qrels"),
    ("report", "--reference", "--reference-qrels"),
    ("report", "--group-by", "--groups"),
    ("report", "--binarize", "--rel-level"),
    ("report", "--bootstrap", "--resamples"),
    ("fd", "--bootstrap", "--resamples"),
    ("nrg", "--model", "--browsing-model"),
    ("resample evaluate", "--bootstrap", "--resamples"),
]


@pytest.mark.parametrize(("command", "old", "new"), ALIASES)
def test_old_spellings_are_hidden_from_help(command, old, new):
    result = runner.invoke(app, [*command.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", result.output))
    assert new in flags and old not in flags


@pytest.fixture(scope="module")
def audit_files(tmp_path_factory) -> dict[str, str]:
    """Model qrels that disagree with the demo's human qrels on every third pair, and a groups file."""
    folder = tmp_path_factory.mktemp("aliases")
    lines = []
    for number, line in enumerate((DEMO / "qrels.txt").read_text().splitlines(), start=1):
        qid, iteration, docid, grade = line.split()
        lines.append(f"{qid} {iteration} {docid} {(int(grade) + 1) % 3 if number % 3 == 0 else grade}")
    (folder / "model.qrels").write_text("\n".join(lines) + "\n")
    (folder / "groups.tsv").write_text("run\tfamily\ngood\tneural\nlexical\tlexical\nmixed\tneural\nshuffled\tlexical\n")
    return {"model": str(folder / "model.qrels"), "reference": str(DEMO / "qrels.txt"), "groups": str(folder / "groups.tsv")}


def agree_json(*args: str) -> dict:
    result = runner.invoke(app, ["agree", "--runs", str(DEMO / "runs"), "--json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_agree_old_spellings_give_the_same_result(audit_files):
    model, reference, groups = audit_files["model"], audit_files["reference"], audit_files["groups"]
    new = agree_json(
        "--model-qrels", model, "--reference-qrels", reference, "--groups", f"{groups}:family", "--rel-level", "2", "--resamples", "30"
    )
    old = agree_json(
        "--qrels", model, "--reference", reference, "--groups", groups, "--group-by", "family", "--binarize", "2", "--bootstrap", "30"
    )
    assert old == new
    # Each option took effect: the binarised κ, the groups' Relative Δ, 30 resamples' intervals.
    assert new["labels"]["rel_level"] == 2 and "cohen_kappa_binary" in new["labels"]
    assert new["bias"] and new["model"] == "model"
    plain = agree_json("--model-qrels", model, "--reference-qrels", reference, "--resamples", "0")
    assert "cohen_kappa_binary" not in plain["labels"] and not plain["bias"]
    assert new["systems"]["nDCG@10"]["kendall_tau_ci95"] != plain["systems"]["nDCG@10"].get("kendall_tau_ci95")


def test_report_old_spellings_write_the_same_page(audit_files, tmp_path):
    model, reference, groups = audit_files["model"], audit_files["reference"], audit_files["groups"]
    common = ["report", "--runs", str(DEMO / "runs")]
    new = [*common, "--model-qrels", model, "--reference-qrels", reference, "--groups", f"{groups}:family", "--rel-level", "2"]
    old = [*common, "--qrels", model, "--reference", reference, "--groups", groups, "--group-by", "family", "--binarize", "2"]
    pages = []
    for name, args in (("new", new + ["--resamples", "20"]), ("old", old + ["--bootstrap", "20"])):
        result = runner.invoke(app, [*args, "--out", str(tmp_path / f"{name}.html")], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        pages.append((tmp_path / f"{name}.html").read_text())

    def answer(page: str) -> str:
        """The page without its footer (the date and the command line differ by design)."""
        return page[: page.rindex("<footer")] if "<footer" in page else page

    assert answer(pages[0]) == answer(pages[1])
    assert "κ" in pages[0]


def test_nrg_model_is_the_browsing_model():
    def nrg(*args: str) -> dict:
        common = ["nrg", "--qrels", str(DEMO / "qrels.txt"), "--runs", str(DEMO / "runs"), "--json"]
        result = runner.invoke(app, [*common, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    assert nrg("--model", "rr") == nrg("--browsing-model", "rr") != nrg("--browsing-model", "ndcg")


def test_resample_evaluate_bootstrap_is_resamples():
    def evaluate(*args: str) -> dict:
        runs = str(DEMO / "runs")
        common = ["resample", "evaluate", "--qrels", str(DEMO / "qrels.txt"), "--interpolation-runs", runs, "--extrapolation-runs", runs]
        result = runner.invoke(app, [*common, "--json", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    assert evaluate("--bootstrap", "20") == evaluate("--resamples", "20") != evaluate("--resamples", "0")


def test_fd_bootstrap_is_resamples():
    pytest.importorskip("onnxruntime", reason="the ONNX backend is not installed (pip install 'qrelkit[onnx]')")

    def fd(*args: str) -> dict:
        common = ["fd", "--qrels", str(DEMO / "qrels.txt"), "--runs", str(DEMO / "runs"), "--docs", str(DEMO / "passages.jsonl"), "--json"]
        result = runner.invoke(app, [*common, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    assert fd("--bootstrap", "20") == fd("--resamples", "20") != fd("--resamples", "0")
