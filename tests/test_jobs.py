"""The resumable runner: judges only what is missing, records failures as failures."""

from __future__ import annotations

import json
from functools import partial

import pytest
import yaml
from fault_judges import OverlapJudge, overlap

from qrelkit.errors import QrelkitError
from qrelkit.jobs import load_job, run_job
from qrelkit.jobs.spec import JobError
from qrelkit.judges import JudgeError
from qrelkit.storage import Store
from qrelkit.storage.judgments import judgment_states, status_counts

# The jobs here name test judges by `module:Class`: the caller allows the import (a job file cannot).
load_job = partial(load_job, allow_import=True)

TOPICS = "q1\tgoldfish grow big\nq2\twifi versus bluetooth\n"
DOCS = [
    ("d1", "goldfish grow big in ponds"),
    ("d2", "goldfish are orange"),
    ("d3", "cats sleep"),
    ("d4", "wifi and bluetooth are radios"),
    ("d5", "bluetooth pairs devices"),
    ("d6", "the versus debate"),
]
QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 d4 2\nq2 0 d5 1\nq2 0 d6 0\nq2 0 d9 0\n"  # d9 is not in the collection


@pytest.fixture
def job(tmp_path):
    (tmp_path / "topics.tsv").write_text(TOPICS)
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"docid": d, "text": t}) + "\n" for d, t in DOCS))
    (tmp_path / "human.qrels").write_text(QRELS)
    OverlapJudge.calls.clear()

    def make(**judge_options):
        spec = {
            "database": "j.duckdb",
            "collection": {"topics": "topics.tsv", "documents": "docs.jsonl", "qrels": {"human": "human.qrels"}},
            "pool": {"qrels": "human"},
            "judge": {"name": "fault_judges:OverlapJudge", "options": judge_options},
            "allow_import": True,  # a test judge loaded by `module:Class`
            "batch_size": 2,
            "flush_seconds": 0.001,
        }
        path = tmp_path / "job.yaml"
        path.write_text(yaml.safe_dump(spec))
        return load_job(path)

    return make


def states(spec, run_id):
    with Store(spec.database, read_only=True) as store:
        return judgment_states(store, run_id)


def test_a_job_judges_every_pair_once_and_records_missing_documents_as_input_errors(job):
    spec = job()
    report = run_job(spec, progress=False)
    assert report.pairs == 7 and report.judged == 7
    assert report.statuses == {"ok": 6, "input_error": 1}
    assert sorted(OverlapJudge.calls) == [("q1", "d1"), ("q1", "d2"), ("q1", "d3"), ("q2", "d4"), ("q2", "d5"), ("q2", "d6")]
    with Store(spec.database, read_only=True) as store:
        row = store.con.execute("SELECT status, score, error FROM judgments WHERE docid = 'd9'").fetchone()
        assert row[0] == "input_error" and row[1] is None and "document 'd9' is not in the collection" in row[2]
        score = store.con.execute("SELECT score FROM judgments WHERE docid = 'd1'").fetchone()[0]
        assert score == pytest.approx(overlap("goldfish grow big", "goldfish grow big in ponds"))


def test_running_again_judges_only_what_is_missing(job):
    spec = job()
    first = run_job(spec, limit=3, progress=False)
    assert first.judged == 3
    OverlapJudge.calls.clear()
    second = run_job(spec, progress=False)
    assert second.to_judge == 4 and second.judged == 4
    assert len(OverlapJudge.calls) == 3  # 4 pending, one of them the input error that never reaches the judge
    third = run_job(spec, progress=False)
    assert third.to_judge == 0 and third.already_ok == 6 and third.already_failed == 1
    assert len(states(spec, first.judge_run_id)) == 7


def test_a_failing_pair_is_a_model_error_and_is_retried_only_when_asked(job):
    spec = job(fail_docids=["d2"])
    report = run_job(spec, progress=False)
    assert report.statuses == {"ok": 5, "model_error": 1, "input_error": 1}
    with Store(spec.database, read_only=True) as store:
        status, score, error = store.con.execute("SELECT status, score, error FROM judgments WHERE docid = 'd2'").fetchone()
    assert (status, score) == ("model_error", None) and "backend crashed on d2" in error
    assert run_job(spec, progress=False).to_judge == 0  # failures stay failures until asked
    retried = run_job(spec, retry_failed=True, progress=False)
    assert retried.to_judge == 2 and states(spec, report.judge_run_id)[("q1", "d2")] == ("model_error", 2)


def test_interrupt_keeps_what_was_judged_and_resume_finishes_without_duplicates(job):
    spec = job(interrupt_after=3)
    report = run_job(spec, progress=False)
    assert report.interrupted
    saved = states(spec, report.judge_run_id)
    assert 1 <= len(saved) < 7
    OverlapJudge.calls.clear()
    resumed = run_job(spec.model_copy(update={"judge": spec.judge.model_copy(update={"options": {}})}), progress=False)
    # the options changed (no interrupt), so this is a different judge run: it judges all 7
    assert resumed.judge_run_id != report.judge_run_id and resumed.judged == 7


def test_interrupted_run_resumes_under_the_same_identity(job, monkeypatch):
    spec = job()
    calls = {"n": 0}
    original = OverlapJudge.judge

    def judge_then_interrupt(self, batch):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return original(self, batch)

    monkeypatch.setattr(OverlapJudge, "judge", judge_then_interrupt)
    first = run_job(spec, progress=False)
    assert first.interrupted and first.judged == 3  # the input error and the first batch of two
    monkeypatch.setattr(OverlapJudge, "judge", original)
    OverlapJudge.calls.clear()
    second = run_job(spec, progress=False)
    assert second.judge_run_id == first.judge_run_id and second.judged == 4
    assert not set(OverlapJudge.calls) & {k for k, v in states(spec, first.judge_run_id).items() if k[1] in ("d1", "d2")}
    assert len(states(spec, first.judge_run_id)) == 7


def test_a_changed_template_is_a_new_judge_run_and_old_judgments_stay(job, tmp_path):
    spec = job()
    spec_a = spec.model_copy(update={"template": "trec-dl-graded"})
    run_a = run_job(spec_a, progress=False)
    changed = yaml.safe_load(open(__import__("qrelkit.prompts.template", fromlist=["x"]).BUILTIN_DIR / "trec-dl-graded.yaml"))
    changed["relevance_instruction"] += "\nBe strict."
    (tmp_path / "strict.yaml").write_text(yaml.safe_dump(changed))
    run_b = run_job(spec.model_copy(update={"template": str(tmp_path / "strict.yaml")}), progress=False)
    assert run_a.judge_run_id != run_b.judge_run_id and run_b.judged == 7
    with Store(spec.database, read_only=True) as store:
        per_run = dict(store.con.execute("SELECT judge_run_id, count(*) FROM judgments GROUP BY 1").fetchall())
    assert per_run == {run_a.judge_run_id: 7, run_b.judge_run_id: 7}


def test_operational_options_resume_the_same_run_and_scoring_options_start_a_new_one(job):
    first = run_job(job(workers=1), limit=3, progress=False)
    tuned = run_job(job(workers=8), progress=False)
    assert tuned.judge_run_id == first.judge_run_id and tuned.already_ok == 3 and tuned.judged == 4
    changed = run_job(job(workers=8, fail_docids=["d1"]), progress=False)
    assert changed.judge_run_id != first.judge_run_id and changed.judged == 7


def test_parse_errors_keep_the_raw_output_and_no_score(job):
    spec = job(unparseable_docids=["d4"]).model_copy(update={"template": "trec-dl-graded"})
    report = run_job(spec, progress=False)
    with Store(spec.database, read_only=True) as store:
        row = store.con.execute("SELECT status, score, raw_output, error FROM judgments WHERE docid = 'd4'").fetchone()
        assert status_counts(store, report.judge_run_id)["parse_error"] == 1
    assert row[:3] == ("parse_error", None, "I cannot decide.") and "no match" in row[3]


def test_dry_run_counts_without_judging(job):
    spec = job()
    run_job(spec, limit=2, progress=False)
    OverlapJudge.calls.clear()
    report = run_job(spec, dry_run=True, progress=False)
    assert (report.pairs, report.already_ok, report.to_judge, report.judged) == (7, 2, 5, 0)
    assert OverlapJudge.calls == []


def test_unknown_judge_and_option_list_the_valid_ones(job):
    spec = job(temperature=0.5)
    valid = "valid options of .*: delay_seconds, fail_docids, fatal_docids, interrupt_after, unparseable_docids, workers"
    with pytest.raises(JudgeError, match="option 'temperature': unknown option\n" + valid):
        run_job(spec, progress=False)
    with pytest.raises(JudgeError, match="option 'worker': unknown option; did you mean 'workers'\\?\n" + valid):
        run_job(job(worker=2), progress=False)
    spec = job().model_copy(update={"judge": job().judge.model_copy(update={"name": "gpt-5-turbo"})})
    with pytest.raises(JudgeError, match="unknown judge 'gpt-5-turbo'; available: .*embedding.*llamacpp"):
        run_job(spec, progress=False)


def test_job_file_errors_name_the_file_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"database": "x.duckdb", "pool": {"depth": 10, "qrels": "h"}, "judge": {"name": "embedding"}}))
    with pytest.raises(JobError, match=f"{path}: pool: set exactly one of"):
        load_job(path)
    path.write_text(yaml.safe_dump({"database": "x.duckdb", "pool": {"qrels": "h"}, "judge": {"name": "embedding"}, "batchsize": 3}))
    with pytest.raises(QrelkitError, match=f"{path}: batchsize: unknown key; did you mean 'batch_size'"):
        load_job(path)
