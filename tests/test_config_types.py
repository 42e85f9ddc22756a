"""`--config FILE.yaml` values of the wrong YAML type (issue 36, item 7): a mapping where a number
goes, a list for a single option, true for a path, 1.5 for a whole number, are one line naming the
file and the key, exit 2, for every option of every command that takes --config; never a traceback
from deep in the option parser, never a value quietly turned into another (true into 1, 1.5 into 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
import yaml
from hostile import one_error, qrelkit
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import InputFormatError

COMMANDS = ["agree", "report", "evaluate", "correlate", "fd", "nrg"]
runner = CliRunner()


def options_of(command: str) -> list:
    click_command = typer.main.get_command(app).commands[command]
    return [p for p in click_command.params if p.param_type_name == "option" and p.name != "config"]


def wrong_values(parameter) -> list:
    """Values of a kind the option does not take."""
    kind = str(parameter.type.name).lower()
    wrong: list = [{"a": 1}]
    if parameter.multiple:
        return wrong + [[{"a": 1}], [[1]], [None]]
    wrong.append([1])
    if getattr(parameter, "is_flag", False) or "bool" in kind:
        return wrong + ["yes please", 1]
    if "int" in kind:
        return wrong + [True, 1.5, "many"]
    return wrong + [True]  # a path or a name


CASES = [(command, parameter.name, value) for command in COMMANDS for parameter in options_of(command) for value in wrong_values(parameter)]


def test_the_sweep_covers_every_option_of_every_command_with_config():
    assert len(CASES) > 124  # the issue's ~124 option/value pairs, and more
    assert {command for command, _, _ in CASES} == set(COMMANDS)


@pytest.mark.parametrize("command, option, value", CASES, ids=[f"{c}-{o}-{v!r}" for c, o, v in CASES])
def test_a_value_of_the_wrong_type_is_one_error_naming_the_file_and_key(tmp_path, command, option, value):
    config = tmp_path / "options.yaml"
    config.write_text(yaml.safe_dump({option: value}))
    result = runner.invoke(app, [command, "--config", str(config)])
    assert isinstance(result.exception, InputFormatError), (result.exception, result.output)
    message = str(result.exception)
    assert message.startswith(f"{config}: {option}: ") and " is not " in message and "\n" not in message


@pytest.mark.parametrize(
    "command, text, message",
    [
        ("agree", "resamples: {a: 1}", "resamples: {'a': 1} is not a whole number"),
        ("evaluate", "json: [1]", "json: [1] is not true or false"),
        ("correlate", "db: 1.5", None),  # a number is a fine file name: the database is looked for as `1.5`
        ("report", "out: true", "out: True is not a path"),
        ("fd", "k: [1.5]", "k: [1.5] is not a list of a whole number"),
        ("nrg", "plot: {x: 1}", "plot: {'x': 1} is not a path"),
    ],
)
def test_from_the_command_line_it_is_exit_2_and_one_line(tmp_path, command, text, message):
    config = tmp_path / "c.yaml"
    config.write_text(text + "\n")
    done = qrelkit(command, "--config", config, cwd=tmp_path)
    if message is None:
        assert "Traceback" not in done.stderr and done.returncode == 2, done.stderr
        return
    assert one_error(done, 2) == f"error: {config}: {message}"


def test_values_of_the_right_type_still_reach_the_command(tmp_path):
    qrels = Path(tmp_path / "q.qrels")
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\n")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"qrels": str(qrels), "runs": str(tmp_path / "a.run"), "measure": ["P@1", "nDCG@2"], "json": True}))
    done = qrelkit("evaluate", "--config", config, "--db", tmp_path / "none.duckdb")
    assert done.returncode == 0, done.stderr
    assert '"P@1": 1.0' in done.stdout
