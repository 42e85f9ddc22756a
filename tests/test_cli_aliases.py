"""The options renamed for one vocabulary kept their old spellings as hidden aliases for the 0.1.0
release only (issue 25 removes them): each old spelling is now refused as an unknown option, with
exit code 2 and nothing done, and `--help` shows only the new one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qrelkit.cli import app

DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
runner = CliRunner()

# (command, old spelling, new spelling)
RENAMED = [
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


@pytest.mark.parametrize(("command", "old", "new"), RENAMED)
def test_only_the_new_spelling_is_in_help(command, old, new):
    result = runner.invoke(app, [*command.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", result.output))
    assert new in flags and old not in flags


@pytest.mark.parametrize(("command", "old", "new"), RENAMED)
def test_an_old_spelling_is_refused_as_an_unknown_option(command, old, new, tmp_path):
    args = [*command.split(), old, "1", "--runs", str(DEMO / "runs")]
    if command == "report":
        args += ["--out", str(tmp_path / "page.html")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"No such option: {old}" in result.output
    assert not (tmp_path / "page.html").exists()
