"""The `openai` judge without a model: request building, response reading, retry and rate
rules as plain functions, then whole jobs against a scripted local server (fake_openai.py)
that fails the way real endpoints do."""

from __future__ import annotations

import base64
import io
import json
import logging
import math
import os
import signal
import time
from datetime import UTC, datetime
from types import SimpleNamespace

import httpx2
import openai
import pytest
import yaml
from fake_openai import (
    COMPLETION_TOKENS,
    FINGERPRINT,
    PROMPT_TOKENS,
    FakeOpenAI,
    Reply,
    expected_of,
    grade_of,
    judgment_rows,
    openai_job,
    write_text_collection,
)
from PIL import Image
from pydantic import TypeAdapter
from rich.console import Console

from qrelkit.commands.documents.judging import job_lines as describe_job
from qrelkit.io import Document, Topic
from qrelkit.io.images import ImageError
from qrelkit.jobs import load_job, run_job
from qrelkit.judges import FatalJudgeError, JudgeError, create_judge, make_config
from qrelkit.judges.chat import build_messages, image_data_url
from qrelkit.judges.chat_completions import ChatOptions, read_reply
from qrelkit.judges.chat_completions import Reply as ChatReply
from qrelkit.judges.http import BackoffWait, MalformedResponse, RateLimiter, classify_error, redact, retry_after_seconds
from qrelkit.judges.openai import OpenAIJudge, image_tokens
from qrelkit.judges.scoring import answer_candidates, expected_grade
from qrelkit.prompts import load_template
from qrelkit.storage import Store

TEMPLATE = load_template("trec-dl-graded")
URL = "http://127.0.0.1:9/v1/chat/completions"

# -- retry rules -----------------------------------------------------------------------------


def test_retry_after_reads_seconds_milliseconds_and_http_dates():
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5  # ms is the finer one
    now = datetime(2015, 10, 21, 7, 27, 30, tzinfo=UTC)
    assert retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=now) == 30.0  # RFC 9110's example
    assert retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:20:00 GMT"}, now=now) == 0.0  # in the past
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({"Retry-After": "-3"}) is None
    assert retry_after_seconds({}) is None


def status_error(status: int, body=None, headers=None) -> openai.APIStatusError:
    response = httpx2.Response(status, headers=headers or {}, request=httpx2.Request("POST", URL))
    return openai.APIStatusError(f"Error code: {status}", response=response, body=body)


@pytest.mark.parametrize(
    "status, body, headers, action, retry_after",
    [
        (429, {"error": {"code": "rate_limit_exceeded", "message": "slow down"}}, {"retry-after": "3"}, "retry", 3.0),
        (429, {"error": {"code": "insufficient_quota", "message": "pay"}}, {}, "fatal", None),
        (500, {"error": {"message": "oops"}}, {}, "retry", None),
        (503, None, {"Retry-After": "2"}, "retry", 2.0),
        (408, None, {}, "retry", None),
        (400, {"error": {"code": "context_length_exceeded", "message": "too long"}}, {}, "fail", None),
        (400, {"error": {"code": "content_filter", "message": "filtered"}}, {}, "fail", None),
        (422, None, {}, "fail", None),
        (401, {"error": {"code": "invalid_api_key", "message": "Incorrect API key provided: sk-ab***yz12"}}, {}, "fatal", None),
        (403, None, {}, "fatal", None),
        (404, {"error": {"code": "model_not_found", "message": "no such model"}}, {}, "fatal", None),
    ],
)
def test_errors_are_retried_failed_or_fatal_by_status_and_code(status, body, headers, action, retry_after):
    verdict = classify_error(status_error(status, body, headers))
    assert (verdict.action, verdict.retry_after, verdict.status) == (action, retry_after, status)
    assert f"HTTP {status}" in verdict.message
    if body:
        assert body["error"]["message"] in verdict.message and body["error"].get("code", "") in verdict.message


def test_timeouts_connection_errors_and_malformed_bodies():
    request = httpx2.Request("POST", URL)
    assert classify_error(openai.APITimeoutError(request)).action == "retry"
    assert classify_error(openai.APIConnectionError(request=request)).action == "retry"
    assert classify_error(MalformedResponse("the body is not JSON")).action == "fail"
    assert classify_error(json.JSONDecodeError("x", "{", 0)).action == "fail"


def retry_state(attempt: int, exc: Exception):
    return SimpleNamespace(attempt_number=attempt, outcome=SimpleNamespace(exception=lambda: exc))


def test_backoff_doubles_with_bounded_jitter_and_honours_retry_after_up_to_the_cap():
    wait = BackoffWait(initial=0.5, maximum=10.0)
    server_error = status_error(500)
    for attempt, base in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0)]:
        assert all(base <= wait(retry_state(attempt, server_error)) <= base + 0.5 for _ in range(50))
    assert wait(retry_state(8, server_error)) == 10.0
    told = status_error(429, headers={"Retry-After": "3"})
    assert all(3.0 <= wait(retry_state(1, told)) <= 3.5 for _ in range(50))
    assert wait(retry_state(1, status_error(429, headers={"Retry-After": "3600"}))) == 10.0


def test_rate_limiter_buckets_start_full_refill_per_minute_and_queue_in_order():
    now = [0.0]
    limiter = RateLimiter(rpm=2, tpm=None, clock=lambda: now[0])
    assert [limiter.reserve(0) for _ in range(4)] == [0.0, 0.0, 30.0, 60.0]
    now[0] = 120.0  # the debt (2 requests) is repaid after 60 s, the bucket is full again after 120 s
    assert [limiter.reserve(0) for _ in range(3)] == [0.0, 0.0, 30.0]

    now[0] = 0.0
    tokens = RateLimiter(rpm=None, tpm=1200, clock=lambda: now[0])  # 20 tokens per second
    assert tokens.reserve(1000) == 0.0
    assert tokens.reserve(600) == pytest.approx(400 / 20)
    assert tokens.reserve(10**6) == pytest.approx((400 + 1200) / 20)  # charged at capacity: bounded


def test_rate_limiter_acquire_sleeps_the_reserved_time():
    import asyncio

    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    limiter = RateLimiter(rpm=60, tpm=600, clock=lambda: 0.0, sleep=fake_sleep)

    async def three():
        for _ in range(3):
            await limiter.acquire(300)

    asyncio.run(three())
    assert slept == [pytest.approx(30.0)]  # the third request waits for 300 tokens at 10 per second


def test_redact_removes_the_key_and_anything_shaped_like_one():
    key = "sk-proj-abcdef0123456789"
    assert redact(f"bad key {key}!", [key]) == "bad key [redacted]!"
    assert redact("Incorrect API key provided: sk-ab***********yz12.", []) == "Incorrect API key provided: sk-[redacted]."
    assert redact("local-secret-99 leaked", ["local-secret-99"]) == "[redacted] leaked"
    assert redact(None, [key]) is None


# -- requests ----------------------------------------------------------------------------------


def topic(**fields) -> Topic:
    return Topic("q1", "how long to boil an egg", fields)


def test_text_prompts_send_content_as_one_string_after_the_system_message():
    rendered = TEMPLATE.render(topic(), Document("d1", "Boil it for six minutes."))
    messages = build_messages(rendered)
    assert messages == [
        {"role": "system", "content": rendered.system},
        {"role": "user", "content": rendered.parts[0].text},
    ]
    assert "Query: how long to boil an egg" in messages[1]["content"] and "Passage: Boil it for six minutes." in messages[1]["content"]


@pytest.fixture
def images(tmp_path):
    root = tmp_path / "images"
    root.mkdir()
    Image.new("RGB", (64, 32), (200, 10, 10)).save(root / "red.png")
    Image.new("RGB", (16, 16), (0, 0, 255)).save(root / "blue.png", format="JPEG")  # a JPEG named .png
    Image.new("RGB", (8, 8), (0, 255, 0)).save(root / "green.bmp")
    (root / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    Image.new("RGB", (8, 8)).save(tmp_path / "outside.png")
    return root


ATOMIC = load_template("atomic-image-suggestion")
ATOMIC_TOPIC = Topic("q1", "Egg", {"page_title": "Egg", "section_title": "Cooking", "section_context": "Eggs are boiled."})


def test_image_prompts_send_documented_content_parts_with_data_urls(images):
    document = Document("i1", image="red.png", image_root=str(images))
    messages = build_messages(ATOMIC.render(ATOMIC_TOPIC, document), detail="low", image_root=str(images))
    assert [m["role"] for m in messages] == ["user"]  # the AToMiC template has no system part
    content = messages[0]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "text"]
    assert content[0]["text"].startswith("Think carefully") and "Egg. Cooking. Eggs are boiled." in content[0]["text"]
    assert content[2]["text"].startswith("Output Instruction:")
    image = content[1]["image_url"]
    assert set(image) == {"url", "detail"} and image["detail"] == "low"
    prefix, encoded = image["url"].split(",", 1)
    assert prefix == "data:image/png;base64"
    assert base64.b64decode(encoded) == (images / "red.png").read_bytes()
    # the shapes the openai package itself declares for content parts and user messages
    from openai.types.chat import ChatCompletionContentPartImageParam, ChatCompletionContentPartTextParam

    TypeAdapter(ChatCompletionContentPartImageParam).validate_python(content[1])
    TypeAdapter(ChatCompletionContentPartTextParam).validate_python(content[0])


def test_image_mime_type_comes_from_the_bytes_and_odd_formats_become_png(images):
    assert image_data_url(images / "blue.png").startswith("data:image/jpeg;base64,")
    green = image_data_url(images / "green.bmp")
    assert green.startswith("data:image/png;base64,")
    assert Image.open(io.BytesIO(base64.b64decode(green.split(",", 1)[1]))).getpixel((0, 0)) == (0, 255, 0)


def test_unreadable_images_are_input_errors(images):
    with pytest.raises(ImageError, match="not found"):
        image_data_url(images / "missing.png")
    with pytest.raises(ImageError, match="broken.jpg is corrupt or truncated"):
        image_data_url(images / "broken.jpg")
    with pytest.raises(ImageError, match="outside the image root"):
        image_data_url(images / ".." / "outside.png", images)


def test_a_documents_url_is_sent_only_when_the_config_allows(images):
    document = Document("i1", image="red.png", image_root=str(images), fields={"url": "https://upload.example/red.png"})
    rendered = ATOMIC.render(ATOMIC_TOPIC, document)
    by_url = build_messages(rendered, image_urls=True)[0]["content"][1]["image_url"]["url"]
    by_bytes = build_messages(rendered, image_urls=False)[0]["content"][1]["image_url"]["url"]
    assert by_url == "https://upload.example/red.png" and by_bytes.startswith("data:image/png;base64,")


def test_requests_carry_the_sampling_options():
    config = make_config("openai", {"model": "gpt-4o", "seed": 7, "max_tokens": 5, "logprobs": True, "top_logprobs": 4})
    assert ChatOptions.of(config).body([{"role": "user", "content": "x"}]) == {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "x"}],
        "temperature": 0.0,
        "max_tokens": 5,
        "seed": 7,
        "logprobs": True,
        "top_logprobs": 4,
    }
    bare = ChatOptions.of(make_config("openai", {"seed": None})).body([])
    assert "seed" not in bare and "logprobs" not in bare


@pytest.mark.parametrize(
    "size, detail, tokens",
    [((1024, 1024), "high", 765), ((2048, 4096), "high", 1105), ((4096, 8192), "low", 85), ((100, 100), "auto", 255)],
)
def test_image_tokens_follow_openais_worked_examples(size, detail, tokens):
    # 1024² high = 765, 2048×4096 high = 1105, low = 85: the examples of OpenAI's vision guide
    assert image_tokens(*size, detail) == tokens


# -- responses ---------------------------------------------------------------------------------


def test_a_completion_gives_text_usage_fingerprint_and_logprobs():
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Relevance: 2"},
                "finish_reason": "stop",
                "logprobs": {
                    "content": [
                        {"token": "Relevance", "logprob": -0.1, "top_logprobs": []},
                        {
                            "token": " 2",
                            "logprob": -0.5,
                            "top_logprobs": [{"token": " 2", "logprob": -0.5}, {"token": " 3", "logprob": -1.2}],
                        },
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 230, "completion_tokens": 4, "total_tokens": 234},
    }
    reply = read_reply(json.dumps(body))
    assert (reply.text, reply.finish_reason, reply.tokens_in, reply.tokens_out, reply.fingerprint) == (
        "Relevance: 2",
        "stop",
        230,
        4,
        "fp_44709d6fcb",
    )
    assert reply.logprobs[1] == (" 2", -0.5, {" 2": -0.5, " 3": -1.2})


@pytest.mark.parametrize(
    "body, problem",
    [
        ("{not json", "not JSON"),
        ("[]", "no choices"),
        ('{"choices": []}', "no choices"),
        ('{"choices": [{"message": null}]}', "no message"),
    ],
)
def test_malformed_bodies_are_refused(body, problem):
    with pytest.raises(MalformedResponse, match=problem):
        read_reply(body)


def test_expected_grade_weights_the_grade_tokens_at_the_answers_position():
    positions = [
        ("Relevance", -0.1, {}),
        (":", -0.1, {}),
        (" 2", math.log(0.5), {" 2": math.log(0.5), "2": math.log(0.1), " 3": math.log(0.2), " maybe": math.log(0.2)}),
    ]

    def expected(tokens):
        reply = ChatReply(text="".join(token for token, _, _ in tokens), logprobs=tokens)
        return expected_grade(answer_candidates(reply.positions(), template=TEMPLATE, forced=False), TEMPLATE.grade_token_list)

    # (2·(0.5+0.1) + 3·0.2) / (0.5+0.1+0.2): variants of a grade add up, other tokens are ignored
    assert expected(positions) == pytest.approx((2 * 0.6 + 3 * 0.2) / 0.8)
    assert expected(positions[:2]) is None  # "Relevance:" holds no grade: no answer position
    # the answer's position (where the parser reads the score), not an earlier grade-looking token
    earlier = [("1", math.log(0.9), {"1": math.log(0.9), "0": math.log(0.1)}), (" ", -0.1, {})] + positions
    assert expected(earlier) == pytest.approx((2 * 0.6 + 3 * 0.2) / 0.8)
    # reasoning first, the answer last: the last match is the answer
    restated = [
        ("Relevance", -0.1, {}),
        (":", -0.1, {}),
        (" 1", math.log(0.7), {" 1": math.log(0.7), " 0": math.log(0.3)}),
        (". ", -0.1, {}),
    ]
    assert expected(restated + positions) == pytest.approx((2 * 0.6 + 3 * 0.2) / 0.8)


# -- configuration and key ---------------------------------------------------------------------


def test_expected_score_needs_logprobs_and_unknown_options_are_errors():
    with pytest.raises(JudgeError, match="score: expected needs logprobs: true"):
        make_config("openai", {"score": "expected"})
    with pytest.raises(JudgeError, match="option 'api_key': unknown option"):
        make_config("openai", {"api_key": "sk-do-not-put-keys-here"})
    assert OpenAIJudge.model_id_for(make_config("openai", {"model": "gpt-4-vision-preview"})) == "gpt-4-vision-preview"


def test_a_missing_key_is_an_error_naming_the_variable_unless_the_server_is_local(monkeypatch):
    monkeypatch.delenv("QRELKIT_TEST_NO_KEY", raising=False)
    with pytest.raises(JudgeError, match="environment variable QRELKIT_TEST_NO_KEY is not set"):
        create_judge("openai", {"api_key_env": "QRELKIT_TEST_NO_KEY"}, TEMPLATE)
    judge = create_judge("openai", {"api_key_env": "QRELKIT_TEST_NO_KEY", "base_url": "http://127.0.0.1:9/v1"}, TEMPLATE)
    judge.close()


# -- jobs against the scripted server ----------------------------------------------------------

DOCS = {f"d{i:02d}": f"[d{i:02d}] A passage about {'eggs' if i <= 4 else 'radios'} number {i}." for i in range(1, 9)}


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def job(tmp_path, server, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    topics = {"q1": "how long to boil an egg", "q2": "how do radios work"}
    write_text_collection(tmp_path, topics, DOCS, (("q1" if int(d[1:]) <= 4 else "q2", d) for d in DOCS))

    def make(**options):
        judge = {
            "model": "fake-gpt",
            "base_url": server.base_url,
            "api_key_env": "QRELKIT_FAKE_KEY",
            "concurrency": 2,
            "timeout": 2.0,
            "max_tries": 3,
            "initial_backoff": 0.01,
            "max_backoff": 2.0,
            **options,
        }
        return load_job(openai_job(tmp_path, judge, batch_size=2, flush_seconds=0.001))

    return make


def rows(spec) -> dict[str, dict]:
    return judgment_rows(spec.database)


def test_a_job_stores_scores_usage_fingerprint_cost_and_expected_grades(job, server):
    spec = job(logprobs=True, top_logprobs=3, prices={"input_per_million": 2.5, "output_per_million": 10.0}, seed=11)
    report = run_job(spec, progress=False)
    assert report.statuses == {"ok": 8}
    judged = rows(spec)
    for docid, row in judged.items():
        assert row["score"] == grade_of(docid) and row["expected"] == pytest.approx(expected_of(docid))
        assert (row["tokens_in"], row["tokens_out"], row["system_fingerprint"], row["attempts"]) == (
            PROMPT_TOKENS,
            COMPLETION_TOKENS,
            FINGERPRINT,
            1,
        )
        assert row["cost"] == pytest.approx((120 * 2.5 + 4 * 10.0) / 1e6) and row["latency_ms"] > 0
        assert row["raw_output"] == f"Relevance: {grade_of(docid)}" and row["model_id"] == "fake-gpt"
    first = server.requests[0]
    assert first.headers["authorization"] == "Bearer no-key-needed"  # no key set, local server
    body = first.body
    assert (body["model"], body["temperature"], body["seed"], body["max_tokens"], body["logprobs"], body["top_logprobs"]) == (
        "fake-gpt",
        0.0,
        11,
        16,
        True,
        3,
    )
    assert isinstance(body["messages"][1]["content"], str) and body["messages"][0]["role"] == "system"


def test_expected_mode_scores_by_probability(job):
    spec = job(logprobs=True, score="expected")
    run_job(spec, progress=False)
    assert {d: r["score"] for d, r in rows(spec).items()} == pytest.approx({d: expected_of(d) for d in DOCS})


def test_429_with_retry_after_is_waited_out_then_succeeds(job, server):
    server.script("d03", Reply(429, {"error": {"code": "rate_limit_exceeded", "message": "slow down"}}, {"Retry-After": "1"}))
    spec = job()
    run_job(spec, progress=False)
    row = rows(spec)["d03"]
    assert (row["status"], row["score"], row["attempts"]) == ("ok", grade_of("d03"), 2)
    tries = server.requests_for("d03")
    assert len(tries) == 2 and 1.0 <= tries[1].at - tries[0].at < 2.5  # backoff alone would be 0.01 s


def test_repeated_500s_end_as_a_model_error_after_the_configured_tries(job, server):
    server.script("d02", *[Reply(500, {"error": {"message": "the engine is overloaded"}})] * 5)
    spec = job(max_tries=3)
    report = run_job(spec, progress=False)
    row = rows(spec)["d02"]
    assert (row["status"], row["score"], row["attempts"]) == ("model_error", None, 3)
    assert row["error"] == "HTTP 500: the engine is overloaded (after 3 tries)"
    assert len(server.requests_for("d02")) == 3 and report.statuses == {"ok": 7, "model_error": 1}


def test_a_hang_ends_in_a_timeout(job, server):
    server.script("d05", Reply(delay=30), Reply(delay=30))
    spec = job(timeout=0.3, max_tries=2)
    started = time.monotonic()
    run_job(spec, progress=False)
    assert time.monotonic() - started < 5
    row = rows(spec)["d05"]
    assert (row["status"], row["attempts"], row["error"]) == ("model_error", 2, "request timed out (after 2 tries)")


@pytest.mark.parametrize("body", ["{not json", '{"choices": []}'])
def test_a_malformed_body_is_a_model_error_without_retry_and_the_body_is_kept(job, server, body):
    server.script("d04", Reply(200, body))
    spec = job()
    run_job(spec, progress=False)
    row = rows(spec)["d04"]
    assert (row["status"], row["attempts"], row["raw_output"]) == ("model_error", 1, body)
    assert row["error"].startswith("malformed response: the body") and len(server.requests_for("d04")) == 1


def test_a_400_is_recorded_at_once_and_not_retried(job, server):
    server.script("d06", Reply(400, {"error": {"code": "context_length_exceeded", "message": "maximum context is 8192 tokens"}}))
    spec = job()
    run_job(spec, progress=False)
    row = rows(spec)["d06"]
    assert (row["status"], row["attempts"]) == ("model_error", 1) and len(server.requests_for("d06")) == 1
    assert row["error"] == "HTTP 400 context_length_exceeded: maximum context is 8192 tokens (after 1 try)"


def test_a_content_filtered_answer_is_a_model_error_and_an_unparseable_one_a_parse_error(job, server):
    server.script("d07", Reply(answer="", finish_reason="content_filter"))
    server.script("d08", Reply(answer="I would rather not say."))
    spec = job()
    run_job(spec, progress=False)
    judged = rows(spec)
    assert (judged["d07"]["status"], judged["d07"]["error"]) == ("model_error", "the answer was withheld by the content filter")
    assert (judged["d08"]["status"], judged["d08"]["raw_output"], judged["d08"]["score"]) == (
        "parse_error",
        "I would rather not say.",
        None,
    )


def test_a_rejected_key_stops_the_job_and_keeps_what_was_judged(job, server):
    server.script("d03", Reply(401, {"error": {"code": "invalid_api_key", "message": "Incorrect API key provided"}}))
    spec = job()
    with pytest.raises(FatalJudgeError, match=r"the API key was rejected .*check the key in \$QRELKIT_FAKE_KEY"):
        run_job(spec, progress=False)
    kept = rows(spec)
    # the first batch, and d04 (d03's batch-mate) if its answer came before the 401: a paid answer is kept
    assert {"d01", "d02"} <= set(kept) <= {"d01", "d02", "d04"} and all(r["status"] == "ok" for r in kept.values())
    assert len(server.requests) <= 4  # nothing after the batch that hit the 401
    before = len(server.requests)
    report = run_job(spec, progress=False)  # key fixed (the script is used up): the job finishes
    assert report.judged == 8 - len(kept) and len(rows(spec)) == 8
    assert len(server.requests) - before == 8 - len(kept)  # nothing kept is asked for again


def sigterm_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # the runner turns SIGTERM into an interrupt, like a scheduler stopping it


FAULTS = {
    "429 then ok": ([Reply(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "300"})], "ok", 2),
    "500s": ([Reply(500)] * 3, "model_error", 3),
    "hang": ([Reply(delay=30)] * 3, "model_error", 3),
    "malformed": ([Reply(200, "<html>bad gateway</html>")], "model_error", 1),
    "400": ([Reply(400, {"error": {"message": "bad request"}})], "model_error", 1),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_an_interrupted_job_resumes_without_losing_or_duplicating_judgments(job, server, fault):
    replies, status, attempts = FAULTS[fault]
    server.script("d03", *replies)  # batch 2 (d03, d04) meets the fault
    server.script("d05", Reply(before=sigterm_self, delay=5))  # batch 3 is interrupted mid-flight
    spec = job(timeout=0.3)
    first = run_job(spec, progress=False)
    assert first.interrupted
    saved = rows(spec)
    # the first two batches, and d06 (d05's batch-mate) if its answer came before the interrupt: a paid answer is kept
    assert {"d01", "d02", "d03", "d04"} <= set(saved) <= {"d01", "d02", "d03", "d04", "d06"}
    assert (saved["d03"]["status"], saved["d03"]["attempts"]) == (status, attempts)
    before = len(server.requests)

    second = run_job(spec, progress=False)
    left = set(DOCS) - set(saved)
    assert second.judge_run_id == first.judge_run_id and not second.interrupted and second.judged == len(left)
    judged = rows(spec)
    assert sorted(judged) == sorted(DOCS) and judged["d03"]["status"] == status
    assert {r.marker for r in server.requests[before:]} == left  # nothing judged twice

    if status != "ok":
        retried = run_job(spec, retry_failed=True, progress=False)
        assert retried.judged == 1 and rows(spec)["d03"]["attempts"] == attempts + 1
        assert rows(spec)["d03"]["status"] == "ok"


def test_an_interrupt_during_a_hanging_request_stops_at_once(job, server):
    server.script("d01", Reply(delay=30))
    server.script("d02", Reply(before=sigterm_self, delay=30))
    spec = job(timeout=20)
    started = time.monotonic()
    report = run_job(spec, progress=False)
    assert report.interrupted and time.monotonic() - started < 3 and rows(spec) == {}
    assert run_job(spec, progress=False).judged == 8


def test_dry_run_estimates_tokens_and_cost_without_a_request(job, server):
    spec = job(max_tokens=8, prices={"input_per_million": 2.5, "output_per_million": 10.0})
    report = run_job(spec, dry_run=True, progress=False)
    assert server.requests == []
    queries = {"q1": "how long to boil an egg", "q2": "how do radios work"}
    chars = []
    for docid, text in DOCS.items():
        qid = "q1" if int(docid[1:]) <= 4 else "q2"
        rendered = TEMPLATE.render(Topic(qid, queries[qid]), Document(docid, text))
        chars.append(len(rendered.system) + len(rendered.parts[0].text))
    tokens_in = sum(math.ceil(c / 4) for c in chars)
    assert report.estimate == {
        "requests": 8,
        "images": 0,
        "tokens_in": tokens_in,
        "tokens_out_max": 64,
        "cost_usd_max": round((tokens_in * 2.5 + 64 * 10.0) / 1e6, 6),
        "batch_cost_usd_max": round((tokens_in * 2.5 + 64 * 10.0) / 2e6, 6),  # the Batch API's half price
    }
    assert f"tokens_in {tokens_in}" in "\n".join(describe_job(report, dry_run=True))


def test_image_jobs_send_each_image_once_and_bad_images_fail_alone(tmp_path, server, images):
    (tmp_path / "topics.jsonl").write_text(
        json.dumps(
            {"qid": "q1", "text": "Egg", "page_title": "Egg", "section_title": "Cooking", "section_context": "Eggs are boiled [d01]."}
        )
        + "\n"
    )
    docs = [("i1", "red.png"), ("i2", "blue.png"), ("i3", "broken.jpg"), ("i4", "link.png")]
    (tmp_path / "images.jsonl").write_text("".join(json.dumps({"docid": d, "image": p}) + "\n" for d, p in docs))
    (tmp_path / "pairs.txt").write_text("".join(f"q1 {d}\n" for d, _ in docs))
    spec = {
        "database": "img.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": "images"},
        "pool": {"pairs": "pairs.txt"},
        "template": "atomic-image-suggestion",
        "batch_size": 4,
        "flush_seconds": 0.001,
        "judge": {
            "name": "openai",
            "options": {"model": "gpt-4o", "base_url": server.base_url, "detail": "high", "api_key_env": "QRELKIT_FAKE_KEY"},
        },
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    loaded = load_job(tmp_path / "job.yaml")
    estimate = run_job(loaded, dry_run=True, progress=False).estimate
    assert estimate["images"] == 4
    run_job(loaded, limit=0, progress=False)  # loads the collection (a dry run writes nothing), judges nothing
    (images / "link.png").symlink_to(tmp_path / "outside.png")  # io refuses such a link at load time; it appears later
    run_job(loaded, progress=False)
    judged = rows(loaded)
    assert {d: r["status"] for d, r in judged.items()} == {"i1": "ok", "i2": "ok", "i3": "input_error", "i4": "input_error"}
    assert "is corrupt or truncated" in judged["i3"]["error"] and "outside the image root" in judged["i4"]["error"]
    sent = [r.body["messages"][0]["content"] for r in server.requests]
    assert len(sent) == 2 and all([p["type"] for p in c] == ["text", "image_url", "text"] for c in sent)
    urls = sorted(c[1]["image_url"]["url"].split(",")[0] for c in sent)
    assert urls == ["data:image/jpeg;base64", "data:image/png;base64"]
    assert all(c[1]["image_url"]["detail"] == "high" for c in sent)


def test_the_api_key_appears_nowhere_it_could_leak(job, server, monkeypatch, caplog, capsys, tmp_path):
    key = "sk-qk-" + os.urandom(12).hex()
    monkeypatch.setenv("QRELKIT_FAKE_KEY", key)
    caplog.set_level(logging.DEBUG)

    server.script("d03", Reply(500, {"error": {"message": "overloaded"}}), Reply(200, "{broken"))
    server.script("d04", Reply(400, {"error": {"message": f"bad request from Bearer {key}"}}))  # a proxy echoing the header
    spec = job()
    report = run_job(spec, progress=False)
    for line in describe_job(report):  # what `qrelkit judge` prints
        Console(stderr=True).print(line, highlight=False)
    judged = rows(spec)
    assert judged["d04"]["error"].startswith("HTTP 400: bad request from Bearer [redacted]")
    assert judged["d03"]["raw_output"] == "{broken"
    server.script("d03", Reply(401, {"error": {"message": f"Incorrect API key provided: {key}"}}))
    with pytest.raises(FatalJudgeError) as fatal:
        run_job(spec, retry_failed=True, progress=False)
    logging.getLogger("test").debug("fatal: %s", fatal.value)

    assert server.requests[0].headers["authorization"] == f"Bearer {key}"  # the key was really used
    captured = capsys.readouterr()
    texts = {"stdout": captured.out, "stderr": captured.err, "logs": caplog.text, "error": str(fatal.value)}
    assert "HTTP 500" in caplog.text  # the retry was logged, so the logs were really captured
    with Store(spec.database, read_only=True) as store:
        for table, column in store.con.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE data_type = 'VARCHAR'"
        ).fetchall():
            texts[f"{table}.{column}"] = " ".join(str(v) for (v,) in store.con.execute(f'SELECT "{column}" FROM "{table}"').fetchall())
    for path in tmp_path.rglob("*"):
        if path.is_file():
            texts[str(path)] = path.read_bytes().decode("latin-1")
    assert any(name.endswith("j.duckdb") for name in texts)
    leaks = [name for name, text in texts.items() if key in text or key[6:] in text]
    assert leaks == []


def test_the_shipped_gpt4v_job_is_valid_and_keeps_no_key():
    from pathlib import Path

    spec = load_job(Path(__file__).resolve().parents[1] / "configs" / "atomic-gpt4v.yaml")
    config = make_config(spec.judge.name, spec.judge.options)
    template = load_template(spec.template)
    assert (spec.judge.name, config.model, template.id) == ("openai", "gpt-4o", "atomic-image-suggestion")
    assert set(template.topic_fields) == {"page_title", "section_title", "section_context"}
    assert config.concurrency <= spec.batch_size and config.prices is not None
    assert "key" not in json.dumps({k: v for k, v in config.model_dump().items() if k != "api_key_env"}).lower()
