"""Providers that send odd fields, and servers that never finish (issue 13, classes 4 and 7),
against the scripted OpenAI-compatible server: every answer that arrived is stored (coerced, with
a note), no pair is sent twice, and one try never outlives its deadline."""

from __future__ import annotations

import json
import time

import pytest
from fake_openai import FakeOpenAI, Reply, judgment_rows, openai_job, write_text_collection
from hostile import one_error, qrelkit

from qrelkit.jobs import load_job, run_job
from qrelkit.jobs.report import JobStopped
from qrelkit.storage import Store

N_DOCS = 21


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def job(tmp_path, server, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    docs = {f"d{i:02d}": f"[d{i:02d}] boil an egg for {i} minutes" for i in range(1, N_DOCS + 1)}
    write_text_collection(tmp_path, {"q1": "how long to boil an egg"}, docs, (("q1", d) for d in docs))

    def make(**options):
        judge = {"model": "fake-gpt", "base_url": server.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "concurrency": 3}
        judge.update({"timeout": 2.0, "max_tries": 2, "initial_backoff": 0.01, "max_backoff": 0.1, **options})
        # one batch: an odd answer must not cost its batch-mates
        return openai_job(tmp_path, judge, batch_size=N_DOCS, flush_seconds=60)

    return make


rows = judgment_rows


def odd_completion(answer: str = "Relevance: 1") -> dict:
    """A completion as a misbehaving provider might send it: an object where a string belongs, and a
    token count beyond 32 bits."""
    return {
        "id": "chatcmpl-odd",
        "object": "chat.completion",
        "system_fingerprint": {"region": "eu", "build": 7},
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10**12, "completion_tokens": 3},
    }


def test_an_answer_with_odd_fields_is_stored_with_a_note_and_never_asked_again(job, server):
    server.script("d21", Reply(200, odd_completion()))
    path = job()
    result = qrelkit("judge", path, "--quiet", "--no-grade")
    assert result.returncode == 0, result.stderr
    stored = rows(path.parent / "j.duckdb")
    assert len(stored) == N_DOCS and len(server.requests) == N_DOCS  # 21 answers stored, 21 requests sent
    odd = stored["d21"]
    assert (odd["status"], odd["score"], odd["raw_output"]) == ("ok", 1.0, "Relevance: 1")
    assert json.loads(odd["system_fingerprint"]) == {"region": "eu", "build": 7}
    assert (odd["tokens_in"], odd["tokens_out"]) == (None, 3)
    assert odd["notes"] == (
        "system_fingerprint was a dict, stored as text; tokens_in 1000000000000 dropped (not a whole number from 0 to 2147483647)"
    )
    assert all(r["notes"] is None and r["status"] == "ok" for d, r in stored.items() if d != "d21")
    again = qrelkit("judge", path, "--quiet", "--no-grade")
    assert again.returncode == 0, again.stderr
    assert len(server.requests) == N_DOCS  # a re-run sends none


def test_a_bug_after_an_answer_arrived_keeps_the_raw_answer_and_sends_nothing_twice(job, server, monkeypatch):
    from qrelkit.judges.chat_completions import ChatRoute

    judgment = ChatRoute.judgment

    def buggy(self, qid, docid, reply, attempts=1, latency_ms=None):
        if docid == "d07":
            raise KeyError("a bug reading an answer")
        return judgment(self, qid, docid, reply, attempts, latency_ms)

    monkeypatch.setattr(ChatRoute, "judgment", buggy)
    spec = load_job(job())
    report = run_job(spec, progress=False)
    stored = rows(spec.database)
    assert report.statuses == {"ok": N_DOCS - 1, "model_error": 1} and len(server.requests) == N_DOCS
    bad = stored["d07"]
    assert bad["status"] == "model_error" and bad["raw_output"].startswith("{") and '"Relevance: 3"' in bad["raw_output"]
    assert bad["error"] == "could not read the answer: KeyError: 'a bug reading an answer' (after 1 try)"


def test_answers_that_arrived_before_a_fatal_error_are_kept(job, server):
    # d02 is rejected after a delay, so its batch-mates' answers are in before the job stops
    server.script("d02", Reply(401, {"error": {"code": "invalid_api_key", "message": "no"}}, delay=1.5))
    spec = load_job(job(concurrency=N_DOCS, timeout=15.0))
    with pytest.raises(Exception, match="the API key was rejected"):
        run_job(spec, progress=False)
    stored = rows(spec.database)
    assert set(stored) == {f"d{i:02d}" for i in range(1, N_DOCS + 1)} - {"d02"}
    assert all(r["status"] == "ok" for r in stored.values())
    sent = len(server.requests)
    assert sent == N_DOCS
    run_job(spec, progress=False)  # the key is fixed (the script is used up): only d02 is asked
    assert len(server.requests) == sent + 1 and len(rows(spec.database)) == N_DOCS


def test_a_batch_whose_write_fails_keeps_what_it_can_and_stops_the_job(job, server, monkeypatch):
    from qrelkit.storage import judgments

    coerce = judgments.judgment_row

    def leaky(judgment):  # a coercion bug: one value of the wrong type reaches the database
        row = coerce(judgment)
        if row["docid"] == "d05":
            row["tokens_in"] = {"not": "a number"}
        return row

    monkeypatch.setattr(judgments, "judgment_row", leaky)
    monkeypatch.setattr(judgments, "plain_columns", lambda batch: None)  # every judgment through judgment_row
    spec = load_job(job())
    with pytest.raises(JobStopped) as stopped:
        run_job(spec, progress=False)
    message = str(stopped.value)
    assert "1 judgment(s) could not be stored as given (e.g. q1/d05: ArrowInvalid" in message
    assert "1 kept as model errors with their raw answers" in message and "21 judgments saved by this run" in message
    stored = rows(spec.database)
    assert len(stored) == N_DOCS and len(server.requests) == N_DOCS
    assert stored["d05"]["status"] == "model_error" and stored["d05"]["raw_output"] == "Relevance: 1"
    assert stored["d05"]["error"].startswith("the judgment could not be stored as given: ArrowInvalid")
    monkeypatch.undo()
    run_job(spec, progress=False)
    assert len(server.requests) == N_DOCS  # nothing is sent again, d05's answer included


def test_a_server_trickling_bytes_is_cut_off_at_the_per_try_deadline(job, server):
    # One byte every 0.2 s: never idle for the client's read timeout, about 80 s for the whole body.
    server.script("d03", Reply(trickle=0.2), Reply(trickle=0.2))
    spec = load_job(job(timeout=1.0, max_tries=2))
    started = time.monotonic()
    run_job(spec, progress=False)
    elapsed = time.monotonic() - started
    row = rows(spec.database)["d03"]
    assert (row["status"], row["attempts"], row["error"]) == ("model_error", 2, "request timed out (after 2 tries)")
    assert len(server.requests_for("d03")) == 2
    assert elapsed < 20  # two 1-second tries and a backoff; without the deadline each try takes ~80 s


def test_judge_limit_below_zero_is_refused(job):
    error = one_error(qrelkit("judge", job(), "--limit", "-5"), 2)
    assert error == "error: --limit must be 0 or more, got -5"


def test_every_stored_field_is_coerced_or_dropped_with_a_note(tmp_path, monkeypatch):
    from qrelkit.judges import Judgment
    from qrelkit.storage.judgments import write_judgments

    monkeypatch.setenv("QRELKIT_MAX_ANSWER_CHARS", "1000")
    answer = "A" * 600 + "middle" + "Z" * 600
    odd = Judgment("q1", "d1", "ok", score=2.0, raw_output=answer, error="bad \ud800 text", cost=float("nan"), latency_ms=-3.0)
    odd.model_id = ["not", "a", "string"]  # type: ignore[assignment]
    odd.attempts = 0
    unscored = Judgment("q1", "d2", "ok", score=float("inf"))
    with Store(tmp_path / "x.duckdb") as store:
        assert write_judgments(store, "run", [odd, unscored]) == ["ok", "model_error"]
        rows = store.con.execute(
            "SELECT docid, status, raw_output, error, cost, latency_ms, model_id, attempts, notes FROM judgments"
        ).fetchall()
    by_doc = {r[0]: r[1:] for r in rows}
    status, raw, error, cost, latency, model_id, attempts, notes = by_doc["d1"]
    assert status == "ok" and len(raw) < 1100 and raw.startswith("A" * 500) and raw.endswith("Z" * 500)
    assert "[... 206 characters cut by qrelkit ...]" in raw and "middle" not in raw
    assert (error, cost, latency, model_id, attempts) == ("bad \ufffd text", None, None, '["not", "a", "string"]', 1)
    assert notes.split("; ") == [
        "raw_output cut: 206 characters left out of the middle (QRELKIT_MAX_ANSWER_CHARS)",
        "error had lone surrogates, replaced by U+FFFD",
        "model_id was a list, stored as text",
        "latency_ms -3.0 dropped (not a finite number ≥ 0)",
        "cost nan dropped (not a finite number ≥ 0)",
        "attempts 0 dropped (not a whole number from 1 to 2147483647)",
    ]
    assert by_doc["d2"][:2] == ("model_error", None)  # an ok judgment whose score cannot be kept is not ok
    assert by_doc["d2"][7] == "score inf dropped (not a finite number)"
