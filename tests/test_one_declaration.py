"""One declaration per use case (issue 35): every command is made from its request class, so its
options, their help and defaults, the `--config` keys and the Python function's parameters are the
request's fields; and the Python API takes every form of qrels and runs in every function."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import qrelkit
import qrelkit.api
from qrelkit.cli import app
from qrelkit.commands.fields import Request, cli_default, declared

DEMO = Path(qrelkit.__file__).parent / "data" / "demo"
runner = CliRunner()


def commands(group=None, prefix=()):
    """(path, click command) of every command, a group's own default command (`qrelkit batches`) too."""
    group = group or typer.main.get_command(app)
    for name, command in group.commands.items():
        path = (*prefix, name)
        if hasattr(command, "commands"):
            if command.callback is not None and command.params:
                yield path, command
            yield from commands(command, path)
        else:
            yield path, command


ALL = sorted(commands(), key=lambda item: item[0])


def request_of(command) -> type:
    return getattr(getattr(command.callback, "__wrapped__", command.callback), "request", None)


@pytest.mark.parametrize(("path", "command"), ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_commands_help_is_its_requests_fields(path, command):
    """The options `--help` lists are exactly the request's declared fields (flag, help, default),
    plus `--db` where the use case reads a database and `--config`; nothing is declared by hand."""
    request = request_of(command)
    assert isinstance(request, type) and issubclass(request, Request), f"`qrelkit {' '.join(path)}` is not made from a request"
    listed = {p.name: p for p in command.params}
    expected = {field.name: (field, flag) for field, flag in declared(request)}
    extra = {"config"} | ({"db"} if request.uses_db else set())
    assert set(listed) == set(expected) | extra
    for name, (field, flag) in expected.items():
        param = listed[name]
        if not flag.argument:
            assert param.help == flag.help, name
            secondary = [flag.secondary] if flag.secondary else []
            assert [*param.opts, *param.secondary_opts] == [flag.flag, *([flag.short] if flag.short else []), *secondary], name
        default = cli_default(field)
        if default is dataclasses.MISSING:
            assert param.required, name
        elif not getattr(param, "multiple", False):
            assert param.default == default, (name, param.default, default)
    shown = runner.invoke(app, [*path, "--help"], terminal_width=200).output
    flags = {f for _, flag in declared(request) if not flag.argument for f in (flag.flag, flag.secondary) if f}
    options = {
        f for pair in re.findall(r"^ +(?:-[A-Za-z], )?(--[a-z][a-z0-9-]*)(?: */ *(--[a-z][a-z0-9-]*))?", shown, re.M) for f in pair if f
    }
    assert flags | {"--config", "--help"} | ({"--db"} if request.uses_db else set()) == options
    words = " ".join(shown.split())
    for _, flag in declared(request):
        assert " ".join(flag.help.split())[:40] in words, flag.flag  # the declaration's help is what --help says


PYTHON = {
    "evaluate": qrelkit.api.evaluate,  # what `qrelkit.evaluate(...)` calls (the name is also the subpackage)
    "agree": qrelkit.agree,
    "compare": qrelkit.compare,
    "correlate": qrelkit.correlate,
    "nrg": qrelkit.nrg,
    "fd": qrelkit.fd,
    "grade": qrelkit.grade,
    "judge": qrelkit.judge,
    "judgments": qrelkit.judgments,
    "data_path": qrelkit.data_path,
}


@pytest.mark.parametrize("name", list(PYTHON))
def test_every_python_function_has_its_requests_parameters(name):
    """`help(qrelkit.compare)` lists real parameters: its request's fields (the command line's own,
    how it prints, aside), the database where the use case reads one, and how progress is shown."""
    function = PYTHON[name]
    request = function.request
    parameters = inspect.signature(function).parameters
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    given = [f.name for f in dataclasses.fields(request) if getattr(f.metadata.get("flag"), "api", True)]
    assert set(parameters) == set(given) | ({"db"} if request.uses_db else set()) | {"progress"}
    used_by_commands = {request_of(c) for _, c in ALL}
    assert request in used_by_commands or name == "judgments"  # the same request as the command's (judgments: Python's alone)


def qrels_forms() -> dict[str, object]:
    pd = pytest.importorskip("pandas")
    import pyarrow as pa

    qrels = qrelkit.read_qrels(DEMO / "qrels.txt")
    grades = {qid: dict(docs) for qid, docs in qrels.grades.items()}
    frame = pd.DataFrame([(q, d, g) for q, docs in grades.items() for d, g in docs.items()], columns=["query_id", "doc_id", "relevance"])
    return {
        "path": str(DEMO / "qrels.txt"),
        "Path": DEMO / "qrels.txt",
        "Qrels": qrels,
        "dict": grades,
        "DataFrame": frame,
        "Arrow": pa.table(frame),
    }


def runs_forms() -> dict[str, object]:
    pd = pytest.importorskip("pandas")
    runs = qrelkit.read_runs([DEMO / "runs"])
    table = pd.DataFrame(
        [(r.name, e.qid, e.docid, e.score) for r in runs for e in r.entries], columns=["run", "query_id", "doc_id", "score"]
    )
    return {
        "folder": str(DEMO / "runs"),
        "files": sorted(map(str, (DEMO / "runs").glob("*.run"))),
        "Run": runs,
        "dict": {r.name: r.scores for r in runs},
        "DataFrame": table,
    }


def row(audit) -> tuple:
    """What a judge's row says: κ and each measure's τ."""
    return (audit.labels.cohen_kappa, *(audit.systems[m].kendall_tau for m in sorted(audit.systems)))


@pytest.mark.parametrize("form", ["path", "Path", "Qrels", "dict", "DataFrame", "Arrow"])
def test_compare_takes_every_form_of_qrels_agree_takes(form):
    """`qrelkit.compare(judges=[...], reference=...)` reads a judge and the reference in every form
    `qrelkit.agree` reads them, and each judge's row is that judge's audit."""
    qrels = qrels_forms()[form]
    alone = qrelkit.agree(qrels, DEMO / "qrels.txt", DEMO / "runs", resamples=20)
    compared = qrelkit.compare(judges=[qrels], reference=DEMO / "qrels.txt", runs=DEMO / "runs", resamples=20, permutations=0)
    (audit,) = compared.comparison.audits.values()
    assert row(audit) == row(alone)
    as_reference = qrelkit.compare(judges=[DEMO / "qrels.txt"], reference=qrels, runs=DEMO / "runs", resamples=20, permutations=0)
    assert row(next(iter(as_reference.comparison.audits.values()))) == row(
        qrelkit.agree(DEMO / "qrels.txt", qrels, DEMO / "runs", resamples=20)
    )


@pytest.mark.parametrize("form", ["folder", "files", "Run", "dict", "DataFrame"])
def test_compare_takes_every_form_of_runs_agree_takes(form):
    runs = runs_forms()[form]
    alone = qrelkit.agree(DEMO / "qrels.txt", DEMO / "qrels.txt", runs, resamples=20)
    compared = qrelkit.compare(judges=[DEMO / "qrels.txt"], reference=DEMO / "qrels.txt", runs=runs, resamples=20, permutations=0)
    assert row(next(iter(compared.comparison.audits.values()))) == row(alone)


def test_two_judges_in_memory_are_told_apart():
    grades = {qid: dict(docs) for qid, docs in qrelkit.read_qrels(DEMO / "qrels.txt").grades.items()}
    compared = qrelkit.compare(judges=[grades, grades], reference=DEMO / "qrels.txt", runs=DEMO / "runs", resamples=0, permutations=0)
    assert compared.comparison.judges == ["qrels #1", "qrels #2"]


def test_a_config_file_takes_the_fields_names_and_the_flags(tmp_path):
    """`--config` keys are the request's fields (`measures`, `reference_map`) or its flags (`measure`,
    `map`), alike."""
    import json

    def agree_json(*args):
        result = runner.invoke(app, ["agree", *args, "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    base = ["--model-qrels", str(DEMO / "qrels.txt"), "--reference-qrels", str(DEMO / "qrels.txt"), "--runs", str(DEMO / "runs")]
    config = tmp_path / "agree.yaml"
    config.write_text("measures: [P@5]\nreference_map: '3:2,2:2,1:1,0:0'\nresamples: 0\n")
    by_fields = agree_json(*base, "--config", str(config))
    config.write_text("measure: [P@5]\nmap: '3:2,2:2,1:1,0:0'\nresamples: 0\n")
    assert agree_json(*base, "--config", str(config)) == by_fields
    assert list(by_fields["systems"]) == ["P@5"] and by_fields["maps"]["reference"] == {"3": 2, "2": 2, "1": 1, "0": 0}


def test_the_python_api_is_a_page_of_declarations():
    """The Python API is the requests' own signatures over `execute`: no function spelled out by hand
    (api.py under 100 lines), and every use case's function is made the same way."""
    source = Path(qrelkit.api.__file__).read_text(encoding="utf-8")
    assert len(source.splitlines()) < 100
    for name, function in PYTHON.items():
        assert function.__module__ == "qrelkit.api" and issubclass(function.request, Request), name
