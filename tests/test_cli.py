"""The command line explains itself and reports bad input without a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer.main
from typer.testing import CliRunner

from qrelkit.cli import app

runner = CliRunner()


def command_paths(group, prefix=()):
    for name, command in group.commands.items():
        path = (*prefix, name)
        yield path
        if hasattr(command, "commands"):
            yield from command_paths(command, path)


ALL_COMMANDS = sorted(command_paths(typer.main.get_command(app)))


def test_top_level_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in ("load", "show", "evaluate"):
        assert name in result.output


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=" ".join)
def test_every_subcommand_explains_itself(path):
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output
    body = result.output.split("Usage:", 1)[1]
    assert len(body.split()) > 12, f"`qrelkit {' '.join(path)} --help` says too little"


def test_bad_input_is_one_clean_message_not_a_traceback(tmp_path):
    (tmp_path / "bad.run").write_text("q1 Q0 d1 1 2.5\n")
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "evaluate", "--qrels", str(tmp_path / "q.txt"), "--runs", str(tmp_path / "bad.run")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{tmp_path / 'bad.run'}:1: expected 6 columns" in result.stderr.replace("\n", "")
