"""The `openai` judge in batch mode against a Batch API on 127.0.0.1 (fake_batch_api.py): the
lines, the limits, the judgments (the live route's, at half the price), failures sent again, a
kill at every step, cancel, the key kept out of everything written."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import Counter, deque

import pytest
import yaml
from fake_batch_api import FakeBatchAPI
from fake_openai import (
    COMPLETION_TOKENS,
    FINGERPRINT,
    PROMPT_TOKENS,
    Reply,
    expected_of,
    grade_of,
    judgment_rows,
    openai_job,
    write_text_collection,
)
from PIL import Image
from typer.testing import CliRunner

from qrelkit.cli import app, main
from qrelkit.jobs import load_job, run_job
from qrelkit.judges import FatalJudgeError
from qrelkit.judges.batch_api import (
    BatchApiUnsupported,
    custom_id_for,
    parse_custom_id,
    read_output_line,
    request_line,
    starts_new_file,
)
from qrelkit.storage import Store

PRICES = {"input_per_million": 2.5, "output_per_million": 10.0}
LIVE_COST = (PROMPT_TOKENS * 2.5 + COMPLETION_TOKENS * 10.0) / 1e6  # one answer of the fake server at `PRICES`
DOCS = {f"d{i:03d}": f"[d{i:03d}] A passage about {'eggs' if i % 2 else 'radios'}, number {i}." for i in range(1, 301)}
QID = {d: "q1" if i % 2 else "q2" for i, d in enumerate(DOCS, 1)}
TOPICS = {"q1": "how long to boil an egg", "q2": "how do radios work"}
runner = CliRunner()


def exit_of(capsys, monkeypatch, *args: str) -> tuple[int, str]:
    """`qrelkit ARGS` through the real entry point (its exit codes): (code, stdout + stderr)."""
    monkeypatch.setattr(sys, "argv", ["qrelkit", *args])
    with pytest.raises(SystemExit) as ended:
        main()
    captured = capsys.readouterr()
    return ended.value.code, captured.out + captured.err


# -- lines and files -----------------------------------------------------------------------------


@pytest.mark.parametrize("qid, docid", [("q1", "d1"), ("1:2", "doc/with:colons and spaces"), ("é", "%41")])
def test_a_custom_id_names_the_judge_run_and_the_pair_whatever_their_characters(qid, docid):
    value = custom_id_for("abc123", qid, docid)
    assert value.count(":") == 3 and parse_custom_id(value) == ("abc123", qid, docid)
    assert parse_custom_id("request-7") is None


def file_chunks(sizes: list[int], max_requests: int, max_bytes: int) -> list[range]:
    """Consecutive lines grouped into files of at most ``max_requests`` lines and ``max_bytes`` bytes
    by the route's one rule, `starts_new_file`, as `jobs.batch_api` cuts its input."""
    chunks, start, total = [], 0, 0
    for index, size in enumerate(sizes):
        if starts_new_file(index - start, total, size, max_requests, max_bytes):
            chunks.append(range(start, index))
            start, total = index, 0
        total += size
    if start < len(sizes):
        chunks.append(range(start, len(sizes)))
    return chunks


def test_files_are_cut_at_the_request_limit_and_the_byte_limit():
    assert file_chunks([10] * 7, max_requests=3, max_bytes=1000) == [range(0, 3), range(3, 6), range(6, 7)]
    # 10+20+30 = 60 fits 60 bytes; 40 starts a new file; 40+20 = 60 fits; 5 does not
    assert file_chunks([10, 20, 30, 40, 20, 5], max_requests=10, max_bytes=60) == [range(0, 3), range(3, 5), range(5, 6)]
    assert file_chunks([], 3, 10) == []


def test_request_and_output_lines_have_the_documented_shapes():
    line = json.loads(request_line("qrelkit:r:q1:d1", {"model": "m", "messages": []}))
    assert line == {"custom_id": "qrelkit:r:q1:d1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", "messages": []}}
    ok = read_output_line(
        json.dumps({"id": "batch_req_1", "custom_id": "c", "response": {"status_code": 200, "body": {"choices": []}}, "error": None})
    )
    assert (ok.custom_id, ok.status_code, json.loads(ok.body), ok.error_code) == ("c", 200, {"choices": []}, None)
    expired = read_output_line(
        json.dumps({"id": "batch_req_2", "custom_id": "c", "response": None, "error": {"code": "batch_expired", "message": "late"}})
    )
    assert (expired.status_code, expired.body, expired.error_code, expired.error_message) == (None, None, "batch_expired", "late")
    with pytest.raises(ValueError):
        read_output_line('{"response": {}}')


def test_a_batch_answer_is_read_by_the_live_routes_reader_and_one_it_cannot_read_keeps_its_whole_body():
    from qrelkit.judges.batch_api import BatchLine
    from qrelkit.judges.chat_completions import ChatOptions, ChatRoute
    from qrelkit.prompts import load_template

    route = ChatRoute(ChatOptions("m"), load_template("trec-dl-graded"), "m")
    answer = json.dumps({"choices": [{"message": {"content": "Relevance: 2"}}], "usage": {"prompt_tokens": 9, "completion_tokens": 1}})
    ok = route.batch_judgment("q", "d", BatchLine("c", 200, answer))
    assert (ok.status, ok.score, ok.tokens_in, ok.model_id) == ("ok", 2.0, 9, "m")
    garbled = '{"choices": []}' + " " * 3000
    bad = route.batch_judgment("q", "d", BatchLine("c", 200, garbled))
    assert (bad.status, bad.error, bad.raw_output) == ("model_error", "malformed response: the body has no choices", garbled)
    assert route.batch_judgment("q", "d", BatchLine("c", 503, "{}")) is None  # a later batch may answer it
    assert route.batch_judgment("q", "d", BatchLine("c", 400, "{}")).status == "model_error"


# -- a job against the fake Batch API --------------------------------------------------------------


@pytest.fixture
def api():
    with FakeBatchAPI() as fake:
        yield fake


@pytest.fixture
def make_job(tmp_path, api, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    write_text_collection(tmp_path, TOPICS, DOCS, ((QID[d], d) for d in DOCS))

    def make(name: str = "job", database: str = "b.duckdb", **options):
        judge = {
            "model": "fake-gpt",
            "base_url": api.base_url,
            "api_key_env": "QRELKIT_FAKE_KEY",
            "mode": "batch",
            "batch_max_requests": 200,  # 300 pairs: two files
            "batch_poll": 0.01,
            "batch_poll_max": 0.04,
            "max_tries": 3,
            "initial_backoff": 0.01,
            "prices": PRICES,
            "logprobs": True,
            **options,
        }
        grading = {"method": "identity", "name": "batch-grades"}
        return load_job(openai_job(tmp_path, judge, name=name, database=database, grading=grading))

    return make


def judgments(spec) -> dict[str, dict]:
    return judgment_rows(spec.database)


def submissions(spec) -> list[tuple]:
    with Store(spec.database, read_only=True) as store:
        return store.con.execute("SELECT submission_id, state, batch_id, requests FROM batch_submissions ORDER BY created_at").fetchall()


def test_300_pairs_go_out_in_two_files_and_come_back_judged_as_the_live_route_judges_them(make_job, api):
    spec = make_job()
    first = run_job(spec, progress=False)
    assert (first.submitted, first.judged, first.in_batches, len(api.batches)) == (300, 0, 300, 2)
    assert sorted(len(api.input_lines(b)) for b in api.batches) == [100, 200]
    assert [state for _, state, _, _ in submissions(spec)] == ["submitted", "submitted"]
    with Store(spec.database, read_only=True) as store:  # where each went, as the judge declared it
        assert store.con.execute("SELECT DISTINCT endpoint, key_variable FROM batch_submissions").fetchall() == [
            (api.base_url, "QRELKIT_FAKE_KEY")
        ]
    folder = spec.database.with_name("b.duckdb.batches")
    assert len(list(folder.glob("qrelkit-*.jsonl"))) == 2  # the request files, kept while their batches are open
    sent = {parse_custom_id(line["custom_id"])[1:]: line["body"] for b in api.batches for line in api.input_lines(b)}
    assert set(sent) == {(QID[d], d) for d in DOCS}

    # the same pairs through the live route: the very same request bodies, and the same judgments
    live = make_job("live", database="live.duckdb", mode="sync", concurrency=8)
    assert run_job(live, progress=False).judge_run_id == first.judge_run_id  # the mode is how, not what: one judge run
    assert sorted(json.dumps(b, sort_keys=True) for b in api.live) == sorted(json.dumps(b, sort_keys=True) for b in sent.values())

    assert run_job(spec, progress=False).judged == 0  # not finished: nothing to collect, nothing sent twice
    assert len(api.batches) == 2
    api.complete()
    second = run_job(spec, progress=False)
    assert (second.judged, second.statuses, second.submitted, second.in_batches) == (300, {"ok": 300}, 0, 0)
    batch, sync = judgments(spec), judgments(live)
    for docid, row in batch.items():
        assert row["score"] == grade_of(docid) and row["expected"] == pytest.approx(expected_of(docid))
        assert (row["tokens_in"], row["tokens_out"], row["system_fingerprint"], row["attempts"]) == (
            PROMPT_TOKENS,
            COMPLETION_TOKENS,
            FINGERPRINT,
            1,
        )
        assert row["cost"] == pytest.approx(LIVE_COST / 2) and sync[docid]["cost"] == pytest.approx(LIVE_COST)
        assert row["latency_ms"] is None  # a batch has no per-request latency
        same = ("status", "score", "parsed", "expected", "raw_output", "tokens_in", "tokens_out", "model_id", "system_fingerprint")
        assert {k: row[k] for k in same} == {k: sync[docid][k] for k in same}
    assert not list(folder.glob("*.jsonl"))  # collected: request files removed
    assert api.paid == Counter({line: 1 for line in api.paid}) and len(api.paid) == 300


def test_the_cli_sends_with_mode_batch_collects_and_grades(make_job, api):
    spec = make_job(mode="sync")  # the job file says sync; --mode batch overrides
    job = str(spec.source)
    sent = runner.invoke(app, ["judge", job, "--mode", "batch", "--quiet"], catch_exceptions=False)
    assert sent.exit_code == 0, sent.output
    assert "sent 300 requests to the Batch API" in sent.output and "300 pairs wait in 2 open batches" in sent.output
    assert "graded" not in sent.output  # nothing to grade while pairs are out
    live = runner.invoke(app, ["judge", job, "--quiet"], catch_exceptions=False).output  # the live route holds off
    assert "0 to judge" in live and "300 pairs of the pool are in open Batch API batches" in live and api.live == []
    api.complete()
    collected = runner.invoke(app, ["judge", job, "--mode", "batch", "--json"], catch_exceptions=False)
    report = json.loads(collected.output)
    assert (report["judged"], report["statuses"], report["in_batches"], report["mode"]) == (300, {"ok": 300}, 0, "batch")
    assert report["grading"]["grades"] == {
        str(g): sum(grade_of(d) == g for d in DOCS) for g in range(4) if any(grade_of(d) == g for d in DOCS)
    }
    assert [b["status"] for b in report["batches"]] == ["completed", "completed"]


def test_failed_lines_and_an_expired_batch_go_back_to_pending_and_are_sent_again(make_job, api):
    spec = make_job()
    run_job(spec, progress=False)
    big, small = sorted(api.batches, key=lambda b: -len(api.input_lines(b)))
    docids = [parse_custom_id(line["custom_id"])[2] for line in api.input_lines(big)]
    expired = set(docids[150:])
    retried, too_long, malformed, unparsed = docids[:2], docids[2], docids[3], docids[4]
    api.script(retried[0], Reply(500, {"error": {"message": "overloaded"}}))  # retryable: sent again
    api.script(retried[1], Reply(429, {"error": {"message": "slow down"}}))  # retryable: sent again
    api.script(too_long, Reply(400, {"error": {"code": "context_length_exceeded", "message": "too long"}}))  # final: a model_error
    api.script(malformed, Reply(200, "<html>bad gateway</html>"))  # a 200 that is no completion: a model_error, body kept
    api.script(unparsed, Reply(answer="I would rather not say."))  # a parse_error
    api.complete(big, expire_after=150)  # the last 50 lines of the 200-line file never ran
    api.complete(small)
    first = run_job(spec, progress=False)
    back = expired | set(retried)
    assert first.judged == 300 - len(back) and first.in_batches == len(back) and first.submitted == len(back)
    assert [b["status"] for b in first.batches] == ["expired", "completed", "in_progress"]
    row = judgments(spec)
    assert (row[too_long]["status"], row[too_long]["error"]) == ("model_error", "HTTP 400 context_length_exceeded: too long")
    assert (row[malformed]["status"], row[malformed]["raw_output"]) == ("model_error", "<html>bad gateway</html>")
    assert (row[unparsed]["status"], row[unparsed]["raw_output"]) == ("parse_error", "I would rather not say.")
    (third,) = set(api.batches) - {big, small}
    assert {parse_custom_id(line["custom_id"])[2] for line in api.input_lines(third)} == back

    api.complete()
    second = run_job(spec, progress=False)
    assert (second.judged, second.in_batches, second.submitted) == (len(back), 0, 0)
    row = judgments(spec)
    assert len(row) == 300 and all(row[d]["status"] == "ok" and row[d]["attempts"] == 2 for d in back)
    assert row[docids[5]]["attempts"] == 1
    assert set(api.paid.values()) == {1}  # every answer paid once: the resent pairs had no answer before


def test_a_pair_that_never_gets_an_answer_ends_as_a_model_error_after_max_tries(make_job, api):
    api.script("d010", *[Reply(503, {"error": {"message": "unavailable"}})] * 5)
    spec = make_job(max_tries=2, batch_max_requests=50_000)
    run_job(spec, progress=False)
    api.complete()
    assert run_job(spec, progress=False).in_batches == 1  # d010 goes out again
    api.complete()
    run_job(spec, progress=False)
    row = judgments(spec)["d010"]
    assert (row["status"], row["attempts"]) == ("model_error", 2)
    last = [b for b in api.batches if custom_id_for(row["judge_run_id"], "q2", "d010") in {x["custom_id"] for x in api.input_lines(b)}][-1]
    assert row["error"] == f"HTTP 503 from the batch {last} (in 2 batches)"


def test_wait_polls_with_backoff_and_sends_back_what_expired_until_done(make_job, api):
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:  # the API finishes the batches on the third check; the large one expires in part
            big = max(api.open_batches(), key=lambda b: len(api.input_lines(b)))
            api.complete(big, expire_after=190)
            api.complete()
        elif len(slept) > 3:
            api.complete()

    spec = make_job()
    report = run_job(spec, progress=False, wait=True, sleep=sleep)
    assert (report.judged, report.statuses, report.in_batches, report.submitted) == (300, {"ok": 300}, 0, 310)
    assert slept == [0.01, 0.02, 0.04, 0.01]  # doubling to batch_poll_max, then from the start for the new batch
    assert len(judgments(spec)) == 300


def test_dry_run_shows_the_batch_cost_beside_the_live_cost(make_job, api):
    report = run_job(make_job(), dry_run=True, progress=False)
    assert api.calls == []
    estimate = report.estimate
    assert estimate["batch_cost_usd_max"] == pytest.approx(estimate["cost_usd_max"] / 2, abs=1e-6)
    own = run_job(make_job(batch_prices={"input_per_million": 1.0, "output_per_million": 3.0}), dry_run=True, progress=False).estimate
    assert own["batch_cost_usd_max"] == round((estimate["tokens_in"] * 1.0 + estimate["tokens_out_max"] * 3.0) / 1e6, 6)
    output = runner.invoke(app, ["judge", str(make_job().source), "--dry-run"], catch_exceptions=False).output
    assert f"cost_usd_max {estimate['cost_usd_max']}, batch_cost_usd_max {estimate['batch_cost_usd_max']}" in output


def test_a_lost_response_to_create_or_upload_never_makes_a_second_batch(make_job, api):
    api.fail_after["POST /v1/batches"] = deque([502])  # created, but the answer is lost
    api.fail_after["POST /v1/files"] = deque([500])  # uploaded, but the answer is lost
    spec = make_job()
    report = run_job(spec, progress=False)
    assert report.submitted == 300 and len(api.batches) == 2
    assert len([f for f in api.files.values() if f.purpose == "batch"]) == 2
    recorded = {batch_id for _, _, batch_id, _ in submissions(spec)}
    assert recorded == set(api.batches)
    assert max(api.sent_custom_ids().values()) == 1


def test_an_endpoint_without_the_batch_api_is_named_and_the_job_runs_live_instead(make_job, monkeypatch, capsys):
    with FakeBatchAPI(batch_api=False) as plain:
        spec = make_job(base_url=plain.base_url)
        with pytest.raises(BatchApiUnsupported, match=r"does not implement the Batch API \(HTTP 404 on POST /files\); run the job with"):
            run_job(spec, progress=False)
        assert submissions(spec) == [] and judgments(spec) == {}  # nothing left that would hold its pairs back
        code, output = exit_of(capsys, monkeypatch, "judge", str(spec.source), "--quiet")
        assert code == 3 and "does not implement the Batch API" in output and "Traceback" not in output
        live = run_job(load_job(spec.source, sets=["judge.options.mode=sync"]), progress=False)
        assert live.statuses == {"ok": 300} and len(plain.live) == 300


def test_an_image_job_sends_its_images_in_the_lines(tmp_path, api):
    root = tmp_path / "images"
    root.mkdir()
    Image.new("RGB", (32, 16), (200, 10, 10)).save(root / "red.png")
    (tmp_path / "topics.jsonl").write_text(
        json.dumps({"qid": "q1", "text": "Egg", "page_title": "Egg", "section_title": "Cooking", "section_context": "Boiled [d01]."}) + "\n"
    )
    (tmp_path / "images.jsonl").write_text(json.dumps({"docid": "i1", "image": "red.png"}) + "\n")
    (tmp_path / "pairs.txt").write_text("q1 i1\n")
    options = {"model": "gpt-4o", "base_url": api.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "detail": "low"}
    for name, mode in (("batch", "batch"), ("live", "sync")):
        spec = {
            "database": f"{name}.duckdb",
            "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": "images"},
            "pool": {"pairs": "pairs.txt"},
            "template": "atomic-image-suggestion",
            "judge": {"name": "openai", "options": {**options, "mode": mode}},
        }
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(spec))
        run_job(load_job(tmp_path / f"{name}.yaml"), progress=False)
    (line,) = api.input_lines(next(iter(api.batches)))
    assert line["body"] == api.live[0]
    assert line["body"]["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_a_first_batch_run_with_a_few_input_errors_has_not_mostly_failed(tmp_path, api):
    """Missing images are judged at once (input_error) while the rest go out in a batch: the pairs
    in the batch are undecided, not failed, so the run ends normally (once they failed, it would not)."""
    root = tmp_path / "images"
    root.mkdir()
    for name in ("a", "b", "c"):
        Image.new("RGB", (16, 16), (200, 10, 10)).save(root / f"{name}.png")
    (tmp_path / "topics.jsonl").write_text(
        json.dumps({"qid": "q1", "text": "Egg", "page_title": "Egg", "section_title": "Cooking", "section_context": "Boiled."}) + "\n"
    )
    documents = [{"docid": d, "image": f"{d}.png"} for d in ("a", "b", "c", "gone", "lost")]
    (tmp_path / "images.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    (tmp_path / "pairs.txt").write_text("".join(f"q1 {d['docid']}\n" for d in documents))
    spec = {
        "database": "batch.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": "images"},
        "pool": {"pairs": "pairs.txt"},
        "template": "atomic-image-suggestion",
        "judge": {"name": "openai", "options": {"model": "gpt-4o", "base_url": api.base_url, "api_key_env": "QRELKIT_FAKE_KEY"}},
    }
    (tmp_path / "job.yaml").write_text(
        yaml.safe_dump({**spec, "judge": {**spec["judge"], "options": {**spec["judge"]["options"], "mode": "batch"}}})
    )
    report = run_job(load_job(tmp_path / "job.yaml"), progress=False)
    assert report.statuses == {"input_error": 2} and report.in_batches == 3 and not report.mostly_failed


# -- `qrelkit batches` ---------------------------------------------------------------------------------


def test_qrelkit_batches_collects_without_the_job_file_and_cancel_keeps_what_was_answered(make_job, api, monkeypatch, capsys):
    spec = make_job()
    run_job(spec, progress=False)
    db = str(spec.database)
    at = ["--base-url", api.base_url, "--api-key-env", "QRELKIT_FAKE_KEY"]  # the endpoint the batches were sent to
    listed = json.loads(runner.invoke(app, ["batches", "--db", db, "--json", *at], catch_exceptions=False).output)
    assert [(b["state"], b["status"], b["requests"]) for b in listed] == [
        ("submitted", "in_progress", 200),
        ("submitted", "in_progress", 100),
    ]
    big, small = listed[0]["batch_id"], listed[1]["batch_id"]

    cancelled = runner.invoke(app, ["batches", "cancel", big, "--db", db, "--json", *at], catch_exceptions=False)
    assert json.loads(cancelled.output)["status"] == "cancelling"
    api.complete(big, expire_after=120)  # 120 lines were answered before the cancel took hold
    api.complete(small)
    table = runner.invoke(app, ["batches", "list", "--db", db, *at], catch_exceptions=False).output
    assert big in table and "cancelled" in table and "completed" in table
    listed = json.loads(runner.invoke(app, ["batches", "--db", db, "--json", "--no-check"], catch_exceptions=False).output)
    assert [(b["status"], b["judged"], b["resubmitted"]) for b in listed] == [("cancelled", 120, 80), ("completed", 100, 0)]
    assert len(judgments(spec)) == 220

    code, output = exit_of(capsys, monkeypatch, "batches", "cancel", big, "--db", db, *at)
    assert code == 2 and f"batch {big} is cancelled, not running: nothing to cancel" in output
    code, output = exit_of(capsys, monkeypatch, "batches", "cancel", "batch_nope", "--db", db, *at)
    assert code == 2 and "no batch 'batch_nope'" in output
    assert run_job(spec, progress=False).submitted == 80  # the job sends the cancelled rest again


# -- a kill at every step ---------------------------------------------------------------------------

STEPS = ["batch-after-record", "batch-after-upload", "batch-after-create", "batch-mid-download", "batch-before-collect"]


@pytest.mark.slow
@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_any_step_then_a_rerun_pays_once_and_judges_each_pair_once(make_job, api, step):
    spec = make_job()
    if step in ("batch-mid-download", "batch-before-collect"):
        run_job(spec, progress=False)
        api.complete()
    env = {**os.environ, "QRELKIT_CRASH_AT": step}
    killed = subprocess.run([sys.executable, "-m", "qrelkit.cli", "judge", str(spec.source), "--quiet"], env=env, capture_output=True)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    for _ in range(4):  # re-runs until done (the API finishes whatever is open in between)
        report = run_job(spec, progress=False)
        if report.in_batches == 0 and report.to_judge == 0:
            break
        api.complete()
    row = judgments(spec)
    assert len(row) == 300 and {r["status"] for r in row.values()} == {"ok"}
    assert set(api.paid.values()) == {1} and len(api.paid) == 300  # each pair answered (and billed) once
    assert max(api.sent_custom_ids().values()) == 1  # no pair in two batches
    per_submission = Counter(b["metadata"]["qrelkit_submission_id"] for b in api.batches.values())
    assert max(per_submission.values()) == 1
    assert {state for _, state, _, _ in submissions(spec)} == {"collected"}


# -- the key ---------------------------------------------------------------------------------------------


def test_the_api_key_is_in_no_request_file_database_column_log_or_report(make_job, api, monkeypatch, caplog, tmp_path):
    key = "sk-test-" + os.urandom(12).hex()
    monkeypatch.setenv("QRELKIT_FAKE_KEY", key)
    caplog.set_level(logging.DEBUG)
    api.script("d007", Reply(400, {"error": {"message": f"bad request from Bearer {key}"}}))  # a proxy echoing the header
    api.script("d008", Reply(answer=f"Relevance: 2 (key {key})"))
    spec = make_job()
    outputs = [runner.invoke(app, ["judge", str(spec.source), "--json"], catch_exceptions=False).output]
    request_files = {str(p): p.read_text() for p in spec.database.with_name("b.duckdb.batches").glob("*.jsonl")}
    assert len(request_files) == 2
    api.complete()
    outputs.append(runner.invoke(app, ["judge", str(spec.source)], catch_exceptions=False).output)
    at = ["--base-url", api.base_url, "--api-key-env", "QRELKIT_FAKE_KEY"]
    outputs.append(runner.invoke(app, ["batches", "--db", str(spec.database), "--json", *at], catch_exceptions=False).output)

    assert {c.headers["authorization"] for c in api.calls} == {f"Bearer {key}"}  # the key was really used
    row = judgments(spec)
    assert row["d007"]["error"] == "HTTP 400: bad request from Bearer [redacted]"
    assert row["d008"]["raw_output"] == "Relevance: 2 (key [redacted])"
    texts = {"logs": caplog.text, **{f"output {i}": o for i, o in enumerate(outputs)}, **request_files}
    assert "HTTP Request: POST" in caplog.text  # the logs were really captured
    with Store(spec.database, read_only=True) as store:
        for table, column in store.con.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE data_type IN ('VARCHAR', 'JSON')"
        ).fetchall():
            texts[f"{table}.{column}"] = " ".join(str(v) for (v,) in store.con.execute(f'SELECT "{column}" FROM "{table}"').fetchall())
    assert "batch_submissions.options" in texts and "judgments.raw_output" in texts
    for path in tmp_path.rglob("*"):
        if path.is_file():
            texts[str(path)] = path.read_bytes().decode("latin-1")
    leaks = [name for name, text in texts.items() if key in text or key[8:] in text]
    assert leaks == []


def test_a_rejected_key_on_the_batch_api_stops_the_job_and_holds_nothing_back(make_job, api):
    api.refuse["POST /v1/files"] = deque([401])
    spec = make_job()
    with pytest.raises(FatalJudgeError, match=r"the API key was rejected .* on POST /files; check the key in \$QRELKIT_FAKE_KEY"):
        run_job(spec, progress=False)
    assert submissions(spec) == []
    assert run_job(spec, progress=False).submitted == 300


def test_a_batch_job_writes_its_status_for_qrelkit_status(make_job, api):
    """A batch job says what it sent and what waits at the API in the status beside its database:
    `qrelkit status` answers while it waits (state judging, its open batches), after a run that only
    sent (submitted) and after the run that collected everything (finished); no partial file."""
    from hostile import qrelkit as cli

    from qrelkit.io.job_status import partial_path, read_status

    spec = make_job()
    seen: list[dict] = []

    def sleep(seconds: float) -> None:
        seen.append(read_status(spec.database))
        api.complete()

    run_job(spec, progress=False)  # sends, does not wait
    status = read_status(spec.database)
    assert (status["state"], status["mode"], status["batches"], status["pending"]) == ("submitted", "batch", {"open": 2, "pairs": 300}, 300)
    done = cli("status", "--db", spec.database)
    assert done.returncode == 0 and "submitted" in done.stdout and "300 of them in 2 open batch(es) at the API" in done.stdout, done.stdout
    report = run_job(spec, progress=False, wait=True, sleep=sleep)
    assert report.judged == 300
    assert seen and seen[0]["state"] == "judging" and seen[0]["batches"] == {"open": 2, "pairs": 300}
    status = read_status(spec.database)
    ended = (status["state"], status["batches"], status["statuses"], status["pending"])
    assert ended == ("finished", {"open": 0, "pairs": 0}, {"ok": 300}, 0)
    assert status["pairs_per_second"] is None and not partial_path(spec.database).exists()
