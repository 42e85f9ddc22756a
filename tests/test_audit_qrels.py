"""Which qrels an audit reads, and that it says so (issue 23, points 1 and 7; issue 28's names):
`--judge-run X` is the set X's job graded, never the newest by accident; `--model-qrels NAME` picks
one of X's sets; names never pass for ids; the output names each side's set, judge run and grading.
On the bundled toy collection, judged for real by the MiniLM judge (int8 ONNX)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from hostile import one_error, qrelkit
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import QrelkitError
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run

pytest.importorskip("onnxruntime", reason="the ONNX backend is not installed (pip install 'qrelkit[onnx]')")
DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
RUNS = [str(DEMO / "runs")]
runner = CliRunner()


def invoke(*args: str) -> str:
    result = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def refused(*args: str) -> str:
    """The one message of a command refused as bad input (exit code 2 from the real command line)."""
    result = runner.invoke(app, [str(a) for a in args])
    assert isinstance(result.exception, QrelkitError), result.output
    return str(result.exception)


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    """The demo job judged (its grading: per-topic quantiles into `minilm`), then graded again by hand
    into `other` (fixed cut points) after the job's set: the newest set is not the job's."""
    folder = tmp_path_factory.mktemp("audit-qrels")
    job = DEMO / ".audit-qrels-test-job.yaml"  # beside the demo's files: the job's paths are relative to it
    job.write_text((DEMO / "job.yaml").read_text().replace("database: demo.duckdb", f"database: {folder / 'toy.duckdb'}"))
    try:
        first = invoke("judge", job, "--quiet")
    finally:
        job.unlink()
    run_id = first.split("judge run ", 1)[1].split(":", 1)[0]
    db = str(folder / "toy.duckdb")
    invoke("grade", "--judge-run", run_id, "--db", db, "--name", "other", "--thresholds", "0.4,0.6")
    return {"db": db, "run_id": run_id, "folder": folder}


def agree_json(toy: dict, *args: str) -> dict:
    return json.loads(
        invoke("agree", "--db", toy["db"], "--reference-qrels", "human", "--runs", *RUNS, "--resamples", "0", "--json", *args)
    )


def test_judge_run_means_the_set_its_job_graded_not_the_newest(toy):
    payload = agree_json(toy, "--judge-run", toy["run_id"][:8])
    assert payload["model"] == "minilm"  # `other` was graded after it: the newest, and not the job's
    model = payload["sources"]["model"]
    assert model["origin"] == "graded" and model["judge_run"]["id"] == toy["run_id"]
    assert (model["grading"]["method"], model["grading"]["per_topic"], model["grading"]["ties"]) == ("quantile", True, "midrank")
    assert payload["sources"]["reference"] == {
        "name": "human",
        "origin": "loaded",
        "path": str(DEMO / "qrels.txt"),
        "judge_run": None,
        "grading": None,
    }


def test_model_qrels_with_judge_run_picks_that_set_and_refuses_one_the_run_did_not_grade(toy):
    other = agree_json(toy, "--judge-run", toy["run_id"], "--model-qrels", "other")
    assert other["model"] == "other" and other["sources"]["model"]["grading"]["thresholds"] == {"*": [0.4, 0.6]}
    assert other["labels"] != agree_json(toy, "--judge-run", toy["run_id"])["labels"]  # another set, other numbers
    message = refused("agree", "--db", toy["db"], "--judge-run", toy["run_id"], "--model-qrels", "human", "--reference-qrels", "human")
    assert "must name a qrels set graded from judge run" in message and "'human' is loaded from" in message
    assert "sets graded from it: minilm, other" in message
    qrels_file = str(DEMO / "qrels.txt")
    message = refused("agree", "--db", toy["db"], "--judge-run", toy["run_id"], "--model-qrels", qrels_file, "--reference-qrels", "human")
    assert f"{qrels_file!r} is a file" in message


def test_model_qrels_by_name_alone_is_the_same_audit_and_names_its_judge_run(toy):
    by_name = agree_json(toy, "--model-qrels", "other")
    by_run = agree_json(toy, "--judge-run", toy["run_id"], "--model-qrels", "other")
    assert by_name["labels"] == by_run["labels"] and by_name["systems"] == by_run["systems"]
    assert by_name["sources"]["model"]["judge_run"]["id"] == toy["run_id"]


def test_several_graded_sets_none_the_jobs_stop_the_audit_and_are_listed(toy, tmp_path):
    """Imported scores have no job: graded twice, `--judge-run` alone cannot know which set is meant."""
    scores = tmp_path / "scores.tsv"
    scores.write_text(
        "".join(f"{line.split()[0]}\t{line.split()[2]}\t{line.split()[3]}\n" for line in (DEMO / "qrels.txt").read_text().splitlines())
    )
    db = str(tmp_path / "imported.duckdb")
    invoke("import", "scores", scores, "--name", "colleague", "--db", db)
    invoke("load", "qrels", DEMO / "qrels.txt", "--name", "human", "--db", db)
    invoke("grade", "--judge-run", "colleague", "--method", "identity", "--name", "as-is", "--db", db)
    only = json.loads(
        invoke("agree", "--judge-run", "colleague", "--db", db, "--reference-qrels", "human", "--runs", *RUNS, "--resamples", "0", "--json")
    )
    assert only["model"] == "as-is"  # one graded set: that one
    invoke("grade", "--judge-run", "colleague", "--map", "3:2,2:2,1:1,0:0", "--name", "mapped", "--db", db)
    line = one_error(qrelkit("agree", "--judge-run", "colleague", "--db", db, "--reference-qrels", "human", "--runs", *RUNS), 2)
    assert line.startswith("error: judge run ") and line.endswith(
        "has 2 graded qrels sets and none is its job's: as-is, mapped; name one with --model-qrels NAME"
    )
    # the same rule for everything that reads a judge run's qrels
    assert "none is its job's" in refused("export", "qrels", str(tmp_path / "x.qrels"), "--judge-run", "colleague", "--db", db)


def test_report_of_a_judge_runs_other_set_names_it_its_judge_run_and_its_grading(toy):
    page_path = toy["folder"] / "other.html"
    invoke(
        "report", "--judge-run", toy["run_id"], "--model-qrels", "other", "--db", toy["db"], "--reference-qrels", "human",
        "--runs", *RUNS, "--resamples", "0", "--out", page_path,
    )  # fmt: skip
    page = page_path.read_text(encoding="utf-8")
    box = html.unescape(page[page.index("<section class=summary") : page.index("</section>")])
    model = re.search(r'data-summary="model-qrels">(.*?)</span>', box).group(1)
    assert model == f"other, graded from judge run {toy['run_id']} by cut points 0.4, 0.6"
    assert re.search(r'data-summary="reference-qrels">human, loaded from ', box)
    grading = html.unescape(page[page.index("<h2>Grading") : page.index("<footer")])
    assert "Graded 120 scores by cut points 0.4, 0.6." in grading and "<th>method</th><td>thresholds</td>" in grading


def test_report_of_a_graded_set_named_alone_shows_its_judge_run(toy):
    page_path = toy["folder"] / "by-name.html"
    invoke(
        "report",
        "--model-qrels",
        "minilm",
        "--db",
        toy["db"],
        "--reference-qrels",
        "human",
        "--runs",
        *RUNS,
        "--resamples",
        "0",
        "--out",
        page_path,
    )
    page = page_path.read_text(encoding="utf-8")
    assert "<h2>Judge</h2>" in page and toy["run_id"] in page
    grading = html.unescape(page[page.index("<h2>Grading") : page.index("<footer")])
    assert "Graded 120 scores by per-topic quantiles [0.5, 0.75] over 12 topics, ties: midrank." in grading
    assert "{" not in grading and "'" not in grading  # a sentence and tables, never a Python dict
    cells = re.findall(r"<td>(d\d\d)</td><td class=n>([^<]+)</td><td class=n>([^<]+)</td>", grading)
    assert len(cells) == 12 and all(re.fullmatch(r"0: [\d.]+, 1: [\d.]+, 2: [\d.]+", lowest) for _, _, lowest in cells)


def test_a_reference_file_is_named_by_its_folder_and_file_or_by_reference_name_never_its_stem(toy):
    reference = str(DEMO / "qrels.txt")
    options = ["--model-qrels", "minilm", "--db", toy["db"], "--reference-qrels", reference, "--runs", *RUNS, "--resamples", "0"]
    assert invoke("agree", *options).startswith("minilm ranks 4 runs as demo/qrels.txt does")
    page_path = toy["folder"] / "named.html"
    invoke("report", *options, "--reference-name", "NIST-style human", "--group", "good=^good", "--out", page_path)
    page = page_path.read_text(encoding="utf-8")
    assert "<title>Audit of minilm against NIST-style human</title>" in page
    box = html.unescape(page[page.index("<section class=summary") : page.index("</section>")])
    assert f'data-summary="reference-qrels">NIST-style human, the file {reference}</span>' in box
    payload = json.loads(invoke("agree", *options, "--reference-name", "NIST-style human", "--json"))
    assert payload["reference"] == "NIST-style human" and payload["sources"]["reference"]["path"] == reference


def test_the_relative_delta_legend_names_each_side_not_qrels_qrels():
    from qrelkit.evaluate.bias import GroupBias
    from qrelkit.report.plots.audit import plot_relative_delta

    bias = {
        "g": {"nDCG@10": GroupBias("g", "nDCG@10", ["a"], 2, 10.0, 12.0, (1.1, 1.0), (1.2, 1.0), (8.0, 12.0), (9.0, 14.0), (-5.0, 1.0))}
    }
    figure = plot_relative_delta(bias, reference_name="qrels", model_name="minilm")
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["qrels (reference)", "minilm (model)"]


# -- names and ids (issue 23, point 7) ------------------------------------------------------------


def test_an_import_name_that_is_or_begins_a_judge_run_id_is_refused(toy, tmp_path):
    scores = tmp_path / "s.tsv"
    scores.write_text("d01\tp0101\t1\n")
    for name in (toy["run_id"], toy["run_id"][:6]):
        message = refused("import", "scores", scores, "--name", name, "--db", toy["db"])
        assert f"--name {name!r} " in message and f"the id of judge run {toy['run_id']}" in message
    with Store(toy["db"], read_only=True) as store:
        assert store.con.execute("SELECT count(*) FROM judge_runs").fetchone() == (1,)  # nothing imported


def test_judge_run_says_when_it_matched_by_name_and_refuses_a_name_that_is_also_an_id_prefix(tmp_path):
    scores = tmp_path / "s.tsv"
    scores.write_text(
        "".join(f"{line.split()[0]}\t{line.split()[2]}\t{line.split()[3]}\n" for line in (DEMO / "qrels.txt").read_text().splitlines())
    )
    db = str(tmp_path / "names.duckdb")
    invoke("import", "scores", scores, "--name", "beef", "--db", db)
    invoke("load", "qrels", DEMO / "qrels.txt", "--name", "human", "--db", db)
    result = runner.invoke(app, ["grade", "--judge-run", "beef", "--method", "identity", "--db", db], catch_exceptions=False)
    assert result.exit_code == 0 and "note: --judge-run beef matched the judge run named 'beef' (id " in result.stderr
    heading = invoke("agree", "--judge-run", "beef", "--db", db, "--reference-qrels", "human", "--runs", *RUNS, "--resamples", "0")
    assert re.search(r"model qrels: graded-\w+, graded from judge run \w+ \('beef', matched by name\)", heading)
    with Store(db) as store:  # a judge run made after the name, whose id happens to begin with it
        ensure_judge_run(store, JudgeRunInfo("beef0123456789ab", "embedding", {}, None, None, None, None))
    message = refused("grade", "--judge-run", "beef", "--method", "identity", "--db", db)
    assert "'beef' matches more than one judge run" in message
    assert "beef0123456789ab (by id prefix)" in message and "(by name)" in message
