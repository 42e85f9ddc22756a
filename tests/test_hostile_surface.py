"""The rest of the new surface tried as an attacker or a careless user would (issue 36, items 6, 10,
11, 12 and 13): each ends in one clear line (exit 2 for input, 3 for the machine) or is handled,
with nothing sent twice, nothing lost, nothing sent where it was not asked to go."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml
from fake_openai import FakeOpenAI, Reply, judgment_rows, openai_job, write_text_collection
from hostile import ROOT, one_error, qrelkit, snapshot
from test_openai_batch import api, make_job  # noqa: F401 (fixtures: a Batch API on 127.0.0.1, and batch jobs against it)

import qrelkit as api_module
from qrelkit.errors import QrelkitError
from qrelkit.jobs import run_job
from qrelkit.storage import Store

DEMO = ROOT / "qrelkit" / "data" / "demo"


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


# -- 6: the Batch API route after its database's endpoint was changed ---------------------------------------


def move_stored_endpoint(spec, base_url: str) -> None:
    """What the issue did: the endpoint the database records for the open batches, changed."""
    con = duckdb.connect(str(spec.database))
    con.execute("UPDATE batch_submissions SET endpoint = ?", [base_url])
    con.close()


def test_wait_stops_with_the_mismatch_line_when_the_stored_endpoint_was_changed(make_job, api):  # noqa: F811
    spec = make_job()
    assert run_job(spec, progress=False).submitted == 300
    move_stored_endpoint(spec, "http://127.0.0.1:9/v1")
    checks: list[float] = []

    def sleep(seconds: float) -> None:
        checks.append(seconds)
        assert len(checks) < 5, "still waiting: '0/300 pairs' every poll, forever"

    with pytest.raises(QrelkitError) as stopped:
        run_job(spec, progress=False, wait=True, sleep=sleep)
    message = str(stopped.value)
    assert "was sent to http://127.0.0.1:9/v1, the database says; this job reaches " + api.base_url in message
    assert "so nothing was checked or sent" in message and checks == []
    with pytest.raises(QrelkitError, match="the database says; this job reaches"):  # and without --wait: the same line, not silence
        run_job(spec, progress=False)
    assert len(api.batches) == 2  # nothing sent again


def test_a_trailing_slash_on_base_url_is_the_same_endpoint_and_the_same_judge_run(make_job, api):  # noqa: F811
    first = run_job(make_job(), progress=False)
    again = run_job(make_job(base_url=api.base_url + "/"), progress=False)
    assert again.judge_run_id == first.judge_run_id
    assert again.submitted == 0 and len(api.batches) == 2  # the 300 pairs are not paid for a second time
    api.complete()
    collected = run_job(make_job(base_url=api.base_url + "/"), progress=False)
    assert collected.judged == 300  # the first batches are collected through the other spelling


# -- 10 and 13: an endpoint's endless body, its redirect -------------------------------------------------------


def live_job(tmp_path: Path, server: FakeOpenAI, **options) -> Path:
    write_text_collection(tmp_path, {"q1": "boil an egg"}, {"[d1]": "[d1] Eggs boil in ten minutes."}, [("q1", "[d1]")])
    judge = {"model": "fake", "base_url": server.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "max_tries": 1, **options}
    return openai_job(tmp_path, judge)


@pytest.mark.parametrize("reply", [Reply(endless=True), Reply(body="[" * (3 << 20))], ids=["endless chunked", "3 MB"])
def test_an_answers_body_is_read_only_up_to_its_cap(tmp_path, server, monkeypatch, reply):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    server.script("d1", reply)
    job = live_job(tmp_path, server, timeout=4.0)
    done = qrelkit("judge", job, "--quiet", "--no-grade", env={"QRELKIT_MAX_RESPONSE_BYTES": str(1 << 20)})
    assert "Traceback" not in done.stderr
    [row] = judgment_rows(tmp_path / "j.duckdb").values()
    assert row["status"] == "model_error"
    assert row["error"] == "malformed response: the answer's body is larger than 1,048,576 bytes (QRELKIT_MAX_RESPONSE_BYTES); " \
        "not read further (after 1 try)"  # fmt: skip


def test_an_endpoints_redirect_is_not_followed_and_the_prompt_goes_nowhere_else(tmp_path, server, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    with FakeOpenAI() as elsewhere:
        target = f"{elsewhere.base_url}/chat/completions"
        server.script("d1", Reply(status=307, body="", headers={"Location": target}))
        error = one_error(qrelkit("judge", live_job(tmp_path, server), "--quiet", "--no-grade"), 3)
        assert f"the endpoint redirects (HTTP 307) to {target}: prompts are not sent on; set base_url to the endpoint" in error
        assert elsewhere.requests == []  # the prompt never reached the other host


# -- 11: a sweep over the collection ---------------------------------------------------------------------------


def demo_copy(tmp_path: Path, **changes) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    job = yaml.safe_load((folder / "job.yaml").read_text())
    job.pop("grading")
    job["judge"] = {"name": "hostile_judges:LengthJudge"}
    job.update(changes)
    (folder / "job.yaml").write_text(yaml.safe_dump(job))
    return folder / "job.yaml"


def test_a_sweep_over_the_collections_topics_is_refused_before_anything_is_judged(tmp_path):
    job = demo_copy(tmp_path, sweep={"collection.topics": ["topics.tsv", "topics-2.tsv"]})
    shutil.copy(job.parent / "topics.tsv", job.parent / "topics-2.tsv")
    for dry in (["--dry-run"], []):
        error = one_error(qrelkit("judge", job, "--allow-import", "--quiet", *dry), 2)
        assert "sweep.collection.topics: a sweep's cells share one database and so one collection" in error
    assert not (job.parent / "demo.duckdb").exists()  # no cell was judged, nothing was paid


# -- 12: environment knobs, a foreign database ---------------------------------------------------------------


def test_a_bad_job_knob_troubles_no_other_command(tmp_path):
    db = tmp_path / "x.duckdb"
    assert qrelkit("load", "qrels", DEMO / "qrels.txt", "--db", db).returncode == 0
    done = qrelkit("show", "--db", db, env={"QRELKIT_JOB_THREADS": "abc", "QRELKIT_JOB_MEMORY": "lots"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("QRELKIT_JOB_THREADS", "abc", "QRELKIT_JOB_THREADS='abc': expected a whole number of threads from 1 to 4096"),
        ("QRELKIT_JOB_THREADS", "0", "QRELKIT_JOB_THREADS='0': expected a whole number of threads from 1 to 4096"),
        ("QRELKIT_JOB_MEMORY", "lots", "QRELKIT_JOB_MEMORY='lots': expected a size such as 256MB or 1GiB"),
        ("QRELKIT_JOB_MEMORY", "1GB'; ATTACH 'x", "QRELKIT_JOB_MEMORY=\"1GB'; ATTACH 'x\": expected a size such as 256MB or 1GiB"),
    ],
)
def test_a_bad_job_knob_is_one_line_before_anything_is_judged(tmp_path, variable, value, message):
    job = demo_copy(tmp_path)
    error = one_error(qrelkit("judge", job, "--allow-import", "--quiet", env={variable: value}), 2)
    assert error.startswith(f"error: {message}")
    with Store(job.parent / "demo.duckdb", read_only=True) as store:
        assert store.con.execute("SELECT count(*) FROM judgments").fetchone()[0] == 0


def test_a_foreign_duckdb_whose_meta_table_has_no_key_is_one_line(tmp_path):
    db = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE meta (k VARCHAR, v VARCHAR)")
    con.close()
    error = one_error(qrelkit("show", "--db", db), 2)
    assert error == f"error: {db} is a DuckDB database, but not a qrelkit one (its table 'meta' has columns k, v, not key and value); " \
        "name another --db"  # fmt: skip


# -- 13: samples, the Python API, grading, resampling, loading -------------------------------------------------


def test_a_second_sample_with_another_seed_is_refused_and_the_first_stays_described(tmp_path):
    job = demo_copy(tmp_path)
    first = qrelkit("judge", job, "--allow-import", "--sample", "60", "--seed", "1", "--json")
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["judge_run_id"]
    error = one_error(qrelkit("judge", job, "--allow-import", "--sample", "60", "--seed", "2", "--quiet"), 2)
    assert f"judge run {run_id} holds a sample of 60 pairs drawn with seed 1 from a pool of 120 pairs" in error
    assert "keep --seed 1 (a larger --sample extends that sample)" in error
    larger = qrelkit("judge", job, "--allow-import", "--sample", "90", "--seed", "1", "--json")
    assert larger.returncode == 0 and json.loads(larger.stdout)["judged"] == 30, larger.stderr
    with Store(job.parent / "demo.duckdb", read_only=True) as store:
        judged = store.con.execute("SELECT count(*) FROM judgments").fetchone()[0]
        sample = json.loads(store.con.execute("SELECT sample FROM judge_runs").fetchone()[0])
    assert judged == 90 and (sample["pairs"], sample["seed"]) == (90, 1)  # what the audit will say is what was judged


def test_a_sample_after_judging_the_pool_leaves_the_run_not_described_as_that_sample(tmp_path):
    job = demo_copy(tmp_path)
    assert qrelkit("judge", job, "--allow-import", "--limit", "100", "--quiet").returncode == 0  # 100 pairs of the pool, in pool order
    again = qrelkit("judge", job, "--allow-import", "--sample", "60", "--seed", "2", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["judged"] > 0, again.stderr
    with Store(job.parent / "demo.duckdb", read_only=True) as store:
        assert store.con.execute("SELECT count(*) FROM judgments").fetchone()[0] > 100
        assert store.con.execute("SELECT sample FROM judge_runs").fetchone()[0] is None  # not "a sample of 60 (seed 2)"


RUN = {"q1": {"d1": 2.0, "d2": 1.0}}
QRELS = {"q1": {"d1": 1, "d2": 0}}


@pytest.mark.parametrize(
    "qrels, runs, message",
    [
        (QRELS, {"a": {"q1": {"d1": math.nan, "d2": 1.0}}}, "run 'a' (q1, d1): the score nan is not a number finite as a 32-bit float"),
        (QRELS, {"a": {"q1": {"d1": math.inf, "d2": 1.0}}}, "run 'a' (q1, d1): the score inf is not a number finite as a 32-bit float"),
        (QRELS, {"a": {"q1": {"d1": 1e300, "d2": 1.0}}}, "run 'a' (q1, d1): the score 1e+300 is not a number finite as a 32-bit float"),
        (QRELS, pd.DataFrame({"qid": ["q1"], "docid": ["d1"], "score": [1e300]}), "the score of (q1, d1), 1e+300, is not finite"),
        (QRELS, pd.DataFrame({"qid": ["q1"], "docid": ["d1"], "score": [np.inf]}), "the score of (q1, d1), inf, is not finite"),
        (QRELS, {"a": {"q1": {"d1": "high"}}}, "run 'a' (q1, d1): the score 'high' is not a number"),
        ({"q1": {"d1": "x"}}, {"a": RUN}, "qrels (q1, d1): the grade 'x' is not a whole number within 64 bits"),
        ({"q1": {"d1": 1, "d2": "2"}}, {"a": RUN}, "qrels (q1, d2): the grade '2' is not a whole number"),
        ({"q1": {"d1": 2**70}}, {"a": RUN}, "qrels (q1, d1): the grade 1180591620717411303424 is not a whole number within 64 bits"),
        ({"q1": {"d1": {"x": 1}}}, {"a": RUN}, "qrels (q1, d1): the grade {'x': 1} is not a whole number"),
        (pd.DataFrame({"qid": ["q1", 2], "docid": ["d1", "d2"], "grade": [1, 0]}), {"a": RUN}, "the table cannot be read: Expected bytes"),
        (pd.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "grade": [1, "x"]}), {"a": RUN}, "the table cannot be read"),
        (QRELS, pd.DataFrame({"qid": ["q1"], "docid": ["d1"], "score": ["x"]}), "run 'run': scores are numbers"),
        (QRELS, pd.DataFrame({"qid": ["q1"], "docid": ["d1"], "score": [1.0], "rank": [1e30]}), "ranks are whole numbers"),
    ],
)
def test_the_python_api_refuses_what_files_refuse_with_one_message(qrels, runs, message):
    with pytest.raises(QrelkitError) as refused:
        api_module.evaluate(qrels, runs, measures=["nDCG@10"])
    assert message in str(refused.value)


def test_a_run_file_refuses_the_same_scores(tmp_path):
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 1e300 a\n")
    with pytest.raises(QrelkitError, match="is not finite as a 32-bit float"):
        api_module.evaluate(QRELS, tmp_path / "a.run", measures=["nDCG@10"])


def test_grade_refuses_a_repeated_pair_instead_of_returning_it_twice():
    with pytest.raises(QrelkitError, match=r"scores: \(q1, d1\) is given twice; give each pair one score"):
        api_module.grade([("q1", "d1", 1.0), ("q1", "d2", 0.0), ("q1", "d1", 3.0)], method="identity")
    graded = api_module.grade([("q1", "d1", 1.0), ("q1", "d2", 0.0)], method="identity")
    assert [(q.docid, q.grade) for q in graded.qrels.entries] == [("d1", 1), ("d2", 0)]


def test_grade_map_refuses_a_score_mapped_twice_as_agree_does(tmp_path):
    db = tmp_path / "x.duckdb"
    (tmp_path / "s.tsv").write_text("q1\td1\t2\nq1\td2\t1\n")
    assert qrelkit("import", "scores", tmp_path / "s.tsv", "--name", "s", "--db", db).returncode == 0
    error = one_error(qrelkit("grade", "--judge-run", "s", "--method", "map", "--map", "2:2,2:1,1:0", "--db", db), 2)
    assert error == "error: --map '2:2,2:1,1:0': 2 is mapped twice (2 and 1)"


def test_restrain_refuses_an_interpolation_set_larger_than_the_exclusion():
    from qrelkit.evaluate.interex.restrain import restrain

    rng = np.random.default_rng(0)
    train, test = rng.normal(size=(40, 8)), rng.normal(size=(3, 8))
    with pytest.raises(QrelkitError, match=r"I = 5 > E = 3: .* queries ranked 4 to 5 would be in both training sets: use E >= I"):
        restrain(test, train, [f"t{i}" for i in range(40)], interpolation_per_query=5, exclusion_per_query=3)


def test_loading_runs_from_an_empty_folder_is_one_line_not_a_silent_success(tmp_path):
    (tmp_path / "runs").mkdir()
    db = tmp_path / "x.duckdb"
    error = one_error(qrelkit("load", "runs", tmp_path / "runs", "--db", db), 2)
    assert error == f"error: no run file in {tmp_path / 'runs'}: nothing was loaded"
    (tmp_path / "runs" / "README.md").write_text("about these runs\n")
    error = one_error(qrelkit("load", "runs", tmp_path / "runs", "--db", db), 2)
    assert error == f"error: no run file in {tmp_path / 'runs'} (left out: README.md (not a run file (README))): nothing was loaded"
    assert snapshot(db).get("runs", []) == []
