"""Everything a job can know before judging is checked before its first call (issue 23, point 8):
where its grading writes (never a loaded set, never a set another judge run graded), what it
writes (the database, batch request files), and whether its grading can grade every grade its
template asks for; `--dry-run` lists the checks. A refused job has made no call and written no
judgment (when its database did not exist, it does not exist after)."""

from __future__ import annotations

import json

import pytest
import yaml
from fault_judges import AnswerJudge, OverlapJudge
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import QrelkitError
from qrelkit.storage import Store

runner = CliRunner()
TOPICS = "q1\tgoldfish grow big\nq2\twifi versus bluetooth\n"
DOCS = [("d1", "goldfish grow big in ponds"), ("d2", "goldfish are orange"), ("d3", "wifi and bluetooth"), ("d4", "cats")]
QRELS = "q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 2\nq2 0 d4 0\n"


@pytest.fixture
def job(tmp_path):
    """make(grading, judge=..., template=...) writes a job over a four-pair collection and returns its path."""
    (tmp_path / "topics.tsv").write_text(TOPICS)
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in DOCS))
    (tmp_path / "human.qrels").write_text(QRELS)
    OverlapJudge.calls.clear()
    AnswerJudge.calls.clear()

    def make(grading: dict, judge: dict | None = None, template: str | None = None):
        spec = {
            "database": "j.duckdb",
            "collection": {"topics": "topics.tsv", "documents": "docs.jsonl", "qrels": {"human": "human.qrels"}},
            "pool": {"qrels": "human"},
            "judge": judge or {"name": "fault_judges:OverlapJudge"},
            "grading": grading,
        }
        if template:
            spec["template"] = template
        path = tmp_path / "job.yaml"
        path.write_text(yaml.safe_dump(spec))
        return path

    return make


def refused(*args: str) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert isinstance(result.exception, QrelkitError), result.output
    return str(result.exception)


def judgments(db) -> int:
    with Store(db, read_only=True) as store:
        return store.con.execute("SELECT count(*) FROM judgments").fetchone()[0]


def test_grading_into_a_loaded_set_is_refused_before_the_first_call_and_in_a_dry_run(job, tmp_path):
    path = job({"name": "reference"})
    with Store(tmp_path / "j.duckdb") as store:
        store.load_qrels(tmp_path / "human.qrels", name="reference")
    for args in ([], ["--dry-run"]):
        message = refused("judge", "--allow-import", path, *args)
        assert message == (
            f"{path}: grading.name: 'reference' holds qrels loaded from {tmp_path / 'human.qrels'}; grading into it would overwrite them: "
            "choose another grading.name"
        )
    assert OverlapJudge.calls == [] and judgments(tmp_path / "j.duckdb") == 0


def test_grading_into_a_set_the_job_itself_loads_is_refused_before_the_database_exists(job, tmp_path):
    path = job({"name": "human"})
    message = refused("judge", "--allow-import", path)
    assert message.startswith(f"{path}: grading.name: 'human' is the qrels set the job loads from ")
    assert OverlapJudge.calls == [] and not (tmp_path / "j.duckdb").exists()


def test_grading_into_a_set_another_judge_run_graded_is_refused_before_judging(job, tmp_path):
    path = job({"name": "model"})
    assert runner.invoke(app, ["judge", "--allow-import", str(path), "--quiet"], catch_exceptions=False).exit_code == 0
    before = judgments(tmp_path / "j.duckdb")
    OverlapJudge.calls.clear()
    message = refused(
        "judge", "--allow-import", path, "--set", "judge.options.unparseable_docids=[d4]"
    )  # another option: another judge run
    assert "grading.name: 'model' holds qrels graded from judge run " in message and "not from this job's judge run" in message
    assert OverlapJudge.calls == [] and judgments(tmp_path / "j.duckdb") == before
    # --no-grade leaves the grading out, its check too
    assert (
        runner.invoke(
            app, ["judge", "--allow-import", str(path), "--quiet", "--no-grade", "--set", "judge.options.unparseable_docids=[d4]"]
        ).exit_code
        == 0
    )


@pytest.mark.parametrize(
    ("grading", "problem"),
    [
        ({"method": "identity", "labels": [0, 1, 2]}, "the template 'trec-dl-graded' grades 0-3, but the labels [0, 1, 2] leave out 3"),
        ({"method": "map", "map": {3: 2, 2: 2, 1: 1}}, "the template 'trec-dl-graded' grades 0-3, but the map leaves out 0"),
        ({"method": "identity", "score_from": "expected"}, "method identity grades single scores, but the expected grade"),
    ],
)
def test_a_grading_that_cannot_grade_the_templates_grades_is_refused_before_any_call(job, tmp_path, grading, problem):
    path = job(grading, judge={"name": "fault_judges:AnswerJudge", "options": {"answer": 3}}, template="trec-dl-graded")
    for args in ([], ["--dry-run"]):
        message = refused("judge", "--allow-import", path, *args)
        assert message.startswith(f"{path}: grading: ") and problem in message
    assert AnswerJudge.calls == [] and not (tmp_path / "j.duckdb").exists()


def test_a_grading_that_covers_the_templates_grades_is_listed_by_the_dry_run_and_grades(job, tmp_path):
    path = job(
        {"method": "map", "map": {3: 2, 2: 2, 1: 1, 0: 0}, "name": "mapped"},
        judge={"name": "fault_judges:AnswerJudge"},
        template="trec-dl-graded",
    )
    dry = runner.invoke(app, ["judge", "--allow-import", str(path), "--dry-run"], catch_exceptions=False)
    assert dry.exit_code == 0, dry.output
    checks = [
        line.removeprefix("checked before judging: ") for line in dry.stdout.splitlines() if line.startswith("checked before judging: ")
    ]
    assert checks == [
        f"database {tmp_path / 'j.duckdb'}: can be written",
        "grading.name 'mapped': a new qrels set",
        "template 'trec-dl-graded' grades 0-3: every one is covered by the map",
    ]
    done = runner.invoke(app, ["judge", "--allow-import", str(path), "--json"], catch_exceptions=False)
    assert json.loads(done.stdout)["grading"]["qrels"] == "mapped" and len(AnswerJudge.calls) == 4


def test_batch_request_files_with_nowhere_to_go_are_refused_before_the_judge_is_built(job, tmp_path):
    path = job({"name": "model"}, judge={"name": "openai", "options": {"model": "m", "mode": "batch"}}, template="trec-dl-graded")
    (tmp_path / "j.duckdb.batches").write_text("not a folder")
    message = refused("judge", "--allow-import", path, "--dry-run")
    assert (
        message
        == f"{path}: database: batch mode writes its request files into {tmp_path / 'j.duckdb.batches'}, which is a file, not a folder"
    )
