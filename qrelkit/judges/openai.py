"""`openai`: GPT-4V / GPT-4o and any OpenAI-compatible chat endpoint (vLLM's `vllm serve`,
llama.cpp's server, others) through the official `openai` client.

One judgment is one Chat Completions request. A batch's requests run concurrently on the
judge's own asyncio loop, at most `concurrency` at a time and within the `rpm`/`tpm` limits;
each is tried up to `max_tries` times (tenacity; see `_http.py` for what is retried). The
runner's `batch_size` should be at least `concurrency` (a few times it is best), or the
slots are never all used.

The API key is read from the environment variable named by `api_key_env` when the judge is
built. It is never part of the configuration, and any text that is stored or logged
(errors, raw bodies) is scrubbed of it.

Token estimates (for `--dry-run` and the `tpm` limiter) are approximations:
* text: characters / 4, OpenAI's rule of thumb for English ("Tokenizer" page: one token is
  about 4 characters);
* images, from OpenAI's vision guide ("Calculating costs", GPT-4o / GPT-4 Turbo / GPT-4V):
  `low` detail is 85 tokens; `high` fits the image in 2048×2048, shrinks its shortest side
  to 768 px, and costs 85 + 170 per 512-px tile; `auto` is counted as `high` (an upper
  bound). Only shrinking is applied, never enlarging. An image sent by URL has no known
  size and is counted as 1024×1024 (765 tokens at high detail).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import JsonDict

from qrelkit.errors import PairInputError
from qrelkit.io.files import open_under_root
from qrelkit.io.limits import limits
from qrelkit.judges.base import BaseJudge, FatalJudgeError, JudgeConfig, JudgeError, Judgment, Pair
from qrelkit.judges.batch_api import MAX_BYTES_PER_FILE, MAX_REQUESTS_PER_FILE, BatchClient, BatchLine, BatchSettings
from qrelkit.judges.bodies import bounded_client
from qrelkit.judges.chat import build_messages
from qrelkit.judges.http import (
    BackoffWait,
    DeadlineExceeded,
    MalformedResponse,
    RateLimiter,
    classify_error,
    classify_status,
    is_retryable,
    normalized_endpoint,
    redact,
)
from qrelkit.judges.scoring import TokenPositions, answer_candidates, first_line, judgment_from_answer
from qrelkit.prompts import ImagePart, PromptTemplate, RenderedPrompt, TemplateError, TextPart

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_TOP_LOGPROBS = 20  # the most alternatives per position OpenAI's API gives
LOCAL_PLACEHOLDER_KEY = "no-key-needed"  # local servers without --api-key accept any bearer token
# How the judge runs, not what it judges: a change should resume the same judge run. The runner
# can leave these out of the run's identity (see docs/openai-judge.md).
OPERATIONAL: JsonDict = {"identity": False}
IMAGE_TOKENS_LOW, IMAGE_TOKENS_BASE, IMAGE_TOKENS_PER_TILE = 85, 85, 170
UNKNOWN_IMAGE_SIZE = (1024, 1024)


class Prices(JudgeConfig):
    input_per_million: float = Field(ge=0, description="USD per million prompt tokens.")
    output_per_million: float = Field(ge=0, description="USD per million completion tokens.")


class OpenAIConfig(JudgeConfig):
    model: str = Field("gpt-4o", description="Model name as the endpoint knows it (gpt-4o, gpt-4-vision-preview, ...).")
    base_url: str | None = Field(None, description="An OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.")
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Name of the environment variable holding the key.", json_schema_extra=OPERATIONAL
    )
    temperature: float = Field(0.0, ge=0, le=2)
    seed: int | None = Field(0, description="Sampling seed (best effort on OpenAI; see system_fingerprint).")
    max_tokens: int = Field(16, ge=1, description="Completion tokens per answer.")
    detail: Literal["auto", "low", "high"] = Field("auto", description="Image detail (cost and resolution).")
    image_urls: bool = Field(False, description="Send a document's `url` field instead of its image bytes when it has one.")
    image_url_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts image URLs may name over http://, or at a loopback/private address (default: public https:// only).",
        json_schema_extra=OPERATIONAL,
    )
    logprobs: bool = Field(False, description="Ask for token logprobs and store the expected grade.")
    top_logprobs: int = Field(
        5, ge=1, description="Alternatives per position when logprobs is on (OpenAI: at most 20; vLLM: up to its --max-logprobs)."
    )
    score: Literal["parsed", "expected"] = Field("parsed", description="parsed answer, or Σ g·p(g)/Σ p(g) (needs logprobs).")
    answer_prefix: str | None = Field(
        None,
        description="A server that continues an assistant message (vLLM's `continue_final_message`): the answer starts with this "
        "text, so the grade is the first generated token (score: expected with max_tokens: 1 is one forward pass). Not OpenAI's API.",
        json_schema_extra={"identity": "unless-default"},
    )
    concurrency: int = Field(4, ge=1, le=256, description="Requests in flight (keep batch_size >= this).", json_schema_extra=OPERATIONAL)
    rpm: int | None = Field(None, ge=1, description="Requests-per-minute limit.", json_schema_extra=OPERATIONAL)
    tpm: int | None = Field(
        None, ge=1, description="Tokens-per-minute limit (estimated prompt + max_tokens).", json_schema_extra=OPERATIONAL
    )
    timeout: float = Field(
        60.0, gt=0, description="Seconds per HTTP try, a deadline for the whole answer (not idle time).", json_schema_extra=OPERATIONAL
    )
    max_tries: int = Field(6, ge=1, description="HTTP tries per pair (first try included).", json_schema_extra=OPERATIONAL)
    initial_backoff: float = Field(1.0, ge=0, description="First retry wait in seconds (doubles).", json_schema_extra=OPERATIONAL)
    max_backoff: float = Field(60.0, ge=0, description="Longest wait, Retry-After included.", json_schema_extra=OPERATIONAL)
    prices: Prices | None = Field(
        None, description="{input_per_million, output_per_million} in USD, for cost.", json_schema_extra=OPERATIONAL
    )
    # The Batch API (docs/openai-batch.md): the same requests, answered within 24 hours at half the price.
    mode: Literal["sync", "batch"] = Field(
        "sync", description="sync: a live request per pair; batch: the Batch API (see docs/openai-batch.md).", json_schema_extra=OPERATIONAL
    )
    batch_prices: Prices | None = Field(
        None, description="USD per million tokens in batch mode (default: half of `prices`).", json_schema_extra=OPERATIONAL
    )
    batch_max_requests: int = Field(
        MAX_REQUESTS_PER_FILE, ge=1, le=MAX_REQUESTS_PER_FILE, description="Requests per batch file.", json_schema_extra=OPERATIONAL
    )
    batch_max_bytes: int = Field(
        MAX_BYTES_PER_FILE, ge=1, le=MAX_BYTES_PER_FILE, description="Bytes per batch file.", json_schema_extra=OPERATIONAL
    )
    batch_poll: float = Field(
        30.0, gt=0, description="First wait in seconds between checks with --wait (doubles).", json_schema_extra=OPERATIONAL
    )
    batch_poll_max: float = Field(600.0, gt=0, description="Longest wait between checks with --wait.", json_schema_extra=OPERATIONAL)

    @field_validator("base_url")
    @classmethod
    def _one_spelling(cls, value: str | None) -> str | None:
        return None if value is None else normalized_endpoint(value)

    @model_validator(mode="after")
    def _expected_needs_logprobs(self) -> OpenAIConfig:
        if self.score == "expected" and not self.logprobs:
            raise ValueError("score: expected needs logprobs: true")
        if self.base_url is None and self.top_logprobs > OPENAI_TOP_LOGPROBS:
            raise ValueError(f"top_logprobs: OpenAI's API gives at most {OPENAI_TOP_LOGPROBS} (a `base_url` server may give more)")
        if self.base_url is None and self.answer_prefix is not None:
            raise ValueError("answer_prefix needs a server that continues an assistant message (vLLM's); set `base_url`")
        return self


# -- request building ------------------------------------------------------------------------


# Request fields of vLLM's chat API beyond OpenAI's: the openai client sends them as `extra_body`.
SERVER_FIELDS = ("continue_final_message", "add_generation_prompt")


def build_request(config: OpenAIConfig, messages: list[dict[str, Any]]) -> dict[str, Any]:
    if config.answer_prefix is not None:
        # the answer continues an assistant message holding the prefix, as vLLM's chat API allows
        messages = [*messages, {"role": "assistant", "content": config.answer_prefix}]
    request: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
    }
    if config.seed is not None:
        request["seed"] = config.seed
    if config.logprobs:
        request.update(logprobs=True, top_logprobs=config.top_logprobs)
    if config.answer_prefix is not None:
        request.update(continue_final_message=True, add_generation_prompt=False)
    return request


# -- token and cost estimates ------------------------------------------------------------------


def image_tokens(width: int, height: int, detail: str) -> int:
    if detail == "low":
        return IMAGE_TOKENS_LOW
    scale = min(1.0, 2048 / max(width, height))
    fitted_width, fitted_height = width * scale, height * scale
    scale = min(1.0, 768 / min(fitted_width, fitted_height))
    fitted_width, fitted_height = fitted_width * scale, fitted_height * scale
    return IMAGE_TOKENS_BASE + IMAGE_TOKENS_PER_TILE * math.ceil(fitted_width / 512) * math.ceil(fitted_height / 512)


def _image_size(part: ImagePart, image_urls: bool, image_root: str | None = None) -> tuple[int, int]:
    if image_urls and part.url:
        return UNKNOWN_IMAGE_SIZE
    try:
        from PIL import Image

        # a regular file under the root only: a FIFO there must not hang even a dry run
        with open_under_root(part.path, image_root) as handle, Image.open(handle) as image:  # reads the header only
            return image.size
    except Exception:  # noqa: BLE001 - an estimate; the real request reports the problem
        return UNKNOWN_IMAGE_SIZE


def prompt_token_estimate(rendered: RenderedPrompt, detail: str = "auto", image_urls: bool = False, image_root: str | None = None) -> int:
    chars = len(rendered.system or "") + sum(len(p.text) for p in rendered.parts if isinstance(p, TextPart))
    images = [p for p in rendered.parts if isinstance(p, ImagePart)]
    return math.ceil(chars / 4) + sum(image_tokens(*_image_size(p, image_urls, image_root), detail) for p in images)


def cost_of(tokens_in: int | None, tokens_out: int | None, prices: Prices | None) -> float | None:
    if prices is None or tokens_in is None or tokens_out is None:
        return None
    return (tokens_in * prices.input_per_million + tokens_out * prices.output_per_million) / 1e6


BATCH_DISCOUNT = 0.5  # OpenAI's Batch API: "50% lower costs" than the same requests made live


def batch_prices(config: OpenAIConfig) -> Prices | None:
    """The prices of a batch request: `batch_prices` when given, else half of `prices`."""
    if config.batch_prices is not None or config.prices is None:
        return config.batch_prices
    return Prices(
        input_per_million=config.prices.input_per_million * BATCH_DISCOUNT,
        output_per_million=config.prices.output_per_million * BATCH_DISCOUNT,
    )


# -- response reading --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    text: str | None
    finish_reason: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    fingerprint: str | None = None
    # per generated token: (token, its logprob, {alternative token: logprob}); None when the response has no logprobs
    logprobs: list[tuple[str, float, dict[str, float]]] | None = None

    def positions(self) -> TokenPositions | None:
        """Per generated token, its text and every candidate's log-probability, itself included."""
        if self.logprobs is None:
            return None
        return [(token, {**alternatives, token: logprob}) for token, logprob, alternatives in self.logprobs]


def _content_text(content: Any) -> str | None:
    """The answer's text: a string, or the text parts of a list of content parts joined (some
    servers answer so); any other content kept as its JSON, so a paid answer is never lost."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [str(part["text"]) for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)]
        if texts:
            return "".join(texts)
    return json.dumps(content, ensure_ascii=False)


def _positions(logprobs: Any) -> list[tuple[str, float, dict[str, float]]] | None:
    """Per generated token (token, logprob, {alternative: logprob}); None when the field is absent
    or not the documented shape (a malformed field never fails an answer)."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return None
    positions = []
    try:
        for item in logprobs["content"]:
            if isinstance(item, dict) and isinstance(item.get("token"), str):
                alternatives = item.get("top_logprobs") or []
                top = {alt["token"]: float(alt["logprob"]) for alt in alternatives if isinstance(alt, dict) and "token" in alt}
                positions.append((item["token"], float(item.get("logprob", -math.inf)), top))
    except (TypeError, ValueError, KeyError):
        return None
    return positions


def read_reply(body: str, *, logprobs: bool = True) -> Reply:
    """A Chat Completions response body; MalformedResponse when it is not one. ``logprobs``: read the
    token log-probabilities (only when they were asked for)."""
    try:
        data = json.loads(body)
    except ValueError:
        raise MalformedResponse("the body is not JSON", body) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("the body has no choices", body)
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise MalformedResponse("the first choice has no message", body)
    text = _content_text(message.get("content"))
    if text is None and isinstance(message.get("refusal"), str):
        text = message["refusal"]  # kept as the raw output; it will not parse
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    positions = _positions(choices[0].get("logprobs")) if logprobs else None
    return Reply(
        text,
        choices[0].get("finish_reason"),
        _int(usage.get("prompt_tokens")),
        _int(usage.get("completion_tokens")),
        data.get("system_fingerprint"),
        positions,
    )


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# -- the judge ---------------------------------------------------------------------------------


def api_key(config: OpenAIConfig) -> str:
    key = os.environ.get(config.api_key_env)
    if key:
        return key
    if config.base_url:
        return LOCAL_PLACEHOLDER_KEY
    raise JudgeError(
        f"judge 'openai': the environment variable {config.api_key_env} is not set; export the API key there "
        f"(or set `base_url` for a local server, or `api_key_env` to another variable)"
    )


class OpenAIJudge(BaseJudge[OpenAIConfig]):
    """GPT-4V/GPT-4o or any OpenAI-compatible chat endpoint; retries, rate limits, cost."""

    name = "openai"
    Config = OpenAIConfig
    needs_template = True
    config: OpenAIConfig
    template: PromptTemplate

    @classmethod
    def model_id_for(cls, config: OpenAIConfig) -> str:
        return config.model

    @classmethod
    def startup_problems(cls, config: OpenAIConfig) -> list[str]:
        from qrelkit.judges.startup import missing_module, unset_variable

        fix = "export the API key there (or set `base_url` for a local server, or `api_key_env` to another variable)"
        key = None if config.base_url else unset_variable(config.api_key_env, cls.name, fix)
        return [p for p in (missing_module("openai", cls.name, "pip install openai"), key) if p]

    @classmethod
    def endpoint_problem(cls, config: OpenAIConfig) -> str | None:
        from qrelkit.judges.startup import endpoint_problem

        key = os.environ.get(config.api_key_env) or LOCAL_PLACEHOLDER_KEY
        url = (config.base_url or DEFAULT_BASE_URL).rstrip("/") + "/models"
        return endpoint_problem(url, {"Authorization": f"Bearer {key}"}, cls.name, timeout=min(config.timeout, 10.0))

    def __init__(self, config: OpenAIConfig, template: PromptTemplate | None, context=None):
        super().__init__(config, template, context)
        from openai import AsyncOpenAI

        self._secrets = [api_key(config)]
        self._base_url = config.base_url or DEFAULT_BASE_URL
        self._client = AsyncOpenAI(
            api_key=self._secrets[0],
            base_url=self._base_url,
            timeout=config.timeout,
            max_retries=0,
            http_client=bounded_client(config.timeout, limits().max_response_bytes, asynchronous=True),
        )
        self._loop = asyncio.new_event_loop()  # the judge's own: the client's connections belong to one loop
        self._slots = asyncio.Semaphore(config.concurrency)
        self._limiter = RateLimiter(config.rpm, config.tpm) if (config.rpm or config.tpm) else None
        self._wait = BackoffWait(config.initial_backoff, config.max_backoff)
        self._arrived: dict[tuple[str, str], Judgment] = {}

    def judge(self, batch: Sequence[Pair]) -> list[Judgment]:
        task = self._loop.create_task(self._judge_batch(list(batch)))
        try:
            return self._loop.run_until_complete(task)
        except BaseException:
            self._cancel_pending()  # an interrupt or a fatal error leaves requests in flight
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: no "never retrieved" warning
            raise

    def _cancel_pending(self) -> None:
        for _ in range(5):
            pending = [task for task in asyncio.all_tasks(self._loop) if not task.done()]
            if not pending:
                return
            for task in pending:
                task.cancel()
            try:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            except (KeyboardInterrupt, SystemExit):
                pass  # a task passing on the interrupt that stopped the batch; the caller re-raises it

    async def _judge_batch(self, batch: list[Pair]) -> list[Judgment]:
        tasks = [asyncio.ensure_future(self._judge_pair(pair)) for pair in batch]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # Answers that arrived are paid for: keep them for the runner (see `salvage`).
            for task in tasks:
                if task.done() and not task.cancelled() and task.exception() is None:
                    judgment = task.result()
                    self._arrived[(judgment.qid, judgment.docid)] = judgment
            raise
        finally:
            for task in tasks:  # after a fatal error, the other requests stop too
                task.cancel()

    def salvage(self) -> list[Judgment]:
        """Judgments whose answers arrived in a batch that then failed (a fatal error on another
        pair, an interrupt), handed over once, so the runner stores them instead of asking again."""
        arrived, self._arrived = list(self._arrived.values()), {}
        return arrived

    def _prepare(self, pair: Pair) -> tuple[dict[str, Any], RenderedPrompt] | Judgment:
        """The pair's Chat Completions request (and its rendered prompt), or its input_error."""
        c = self.config
        try:
            rendered = self.template.render(pair.topic, pair.document)
            messages = build_messages(
                rendered, detail=c.detail, image_urls=c.image_urls, image_root=pair.document.image_root, url_hosts=c.image_url_hosts
            )
        except (TemplateError, PairInputError) as exc:
            return Judgment.failed(pair, "input_error", str(exc), model_id=self.model_id)
        return build_request(c, messages), rendered

    async def _judge_pair(self, pair: Pair) -> Judgment:
        prepared = self._prepare(pair)
        if isinstance(prepared, Judgment):
            return prepared
        request, rendered = prepared
        c = self.config
        cost_tokens = prompt_token_estimate(rendered, c.detail, c.image_urls, pair.document.image_root) + c.max_tokens
        async with self._slots:
            return await self._send(pair, request, cost_tokens)

    async def _post(self, request: dict[str, Any]) -> str:
        """One try: the whole answer's body within `timeout` seconds, however the server sends it
        (the client's own timeout is per read, so a server trickling bytes would never trip it)."""
        timeout = self.config.timeout
        fields: dict[str, Any] = {key: value for key, value in request.items() if key not in SERVER_FIELDS}
        extra = {key: request[key] for key in SERVER_FIELDS if key in request}
        if extra:
            fields["extra_body"] = extra
        try:
            response = await asyncio.wait_for(self._client.chat.completions.with_raw_response.create(**fields), timeout)
        except TimeoutError:
            raise DeadlineExceeded(timeout) from None
        return response.http_response.text

    async def _send(self, pair: Pair, request: dict[str, Any], cost_tokens: int) -> Judgment:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        c, attempts, latency_ms = self.config, 0, None
        retrying = AsyncRetrying(
            stop=stop_after_attempt(c.max_tries),
            wait=self._wait,
            retry=retry_if_exception(is_retryable),
            before_sleep=lambda state: self._log_retry(pair, state),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    if self._limiter is not None:
                        await self._limiter.acquire(cost_tokens)
                    started = time.perf_counter()
                    body = await self._post(request)
                    latency_ms = (time.perf_counter() - started) * 1000
        except Exception as exc:
            verdict = classify_error(exc)
            message = redact(verdict.message, self._secrets)
            if verdict.action == "fatal":
                redirected = verdict.status is not None and 300 <= verdict.status < 400
                hint = (
                    ""
                    if redirected
                    else "; check `model` and `base_url`"
                    if verdict.status == 404
                    else f"; check the key in ${c.api_key_env}"
                )
                raise FatalJudgeError(f"judge 'openai' at {self._base_url}: {message}{hint}") from None
            return Judgment.failed(
                pair,
                "model_error",
                f"{message} (after {attempts} {'try' if attempts == 1 else 'tries'})",
                attempts=attempts,
                model_id=self.model_id,
                latency_ms=latency_ms,
            )
        return self._answer(pair, body, attempts, latency_ms)

    def _answer(self, pair: Pair, body: str, attempts: int, latency_ms: float | None) -> Judgment:
        """The judgment of an answer that arrived. Never raises: whatever goes wrong reading it, the
        raw body is kept (as the raw output of a model error), so the pair is never sent again
        because of a problem after its answer came back."""
        try:
            return self._judgment(pair, read_reply(body, logprobs=self.config.logprobs), attempts, latency_ms)
        except Exception as exc:  # noqa: BLE001 - a malformed body, or a bug reading an odd one
            what = (
                f"malformed response: {exc}"
                if isinstance(exc, MalformedResponse)
                else f"could not read the answer: {type(exc).__name__}: {exc}"
            )
            return Judgment.failed(
                pair,
                "model_error",
                f"{redact(what, self._secrets)} (after {attempts} {'try' if attempts == 1 else 'tries'})",
                raw_output=redact(body, self._secrets),
                attempts=attempts,
                model_id=self.model_id,
                latency_ms=latency_ms,
            )

    def _judgment(self, pair: Pair, reply: Reply, attempts: int, latency_ms: float | None) -> Judgment:
        """A live reply as a judgment."""
        return self._reply_judgment(*pair.key, reply, attempts, latency_ms, self.config.prices)

    def _reply_judgment(
        self, qid: str, docid: str, reply: Reply, attempts: int, latency_ms: float | None, prices: Prices | None
    ) -> Judgment:
        """A reply as a judgment under the one scoring rule and status policy (live or from a batch)."""
        c = self.config
        common: dict[str, Any] = dict(
            raw_output=redact(reply.text, self._secrets),
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_ms=latency_ms,
            cost=cost_of(reply.tokens_in, reply.tokens_out, prices),
            attempts=attempts,
            model_id=self.model_id,
            system_fingerprint=reply.fingerprint,
        )
        if reply.finish_reason == "content_filter":
            return Judgment(qid, docid, "model_error", error="the answer was withheld by the content filter", **common)
        positions = reply.positions() if c.logprobs else None
        text = reply.text
        if c.answer_prefix is not None and text is not None:
            # the server continued the prefix: the answer is both, its first generated token the answer position
            text = c.answer_prefix + first_line(text)
            common["raw_output"] = redact(text, self._secrets)
        candidates = answer_candidates(positions, template=self.template, forced=c.answer_prefix is not None)
        return judgment_from_answer(qid, docid, text=text, template=self.template, mode=c.score, candidates=candidates, **common)

    def _log_retry(self, pair: Pair, state: Any) -> None:
        exc = state.outcome.exception() if state.outcome else None
        message = redact(classify_error(exc).message if exc else "?", self._secrets)
        log.warning(
            "openai: %s for %s/%s; try %d of %d, next in %.1fs",
            message,
            *pair.key,
            state.attempt_number,
            self.config.max_tries,
            state.next_action.sleep if state.next_action else 0,
        )

    @classmethod
    def estimate(cls, config: OpenAIConfig, template: PromptTemplate, pairs: Sequence[Pair]) -> dict[str, Any]:
        """Tokens and cost of judging `pairs` once, without a request (retries not counted)."""
        requests = tokens_in = images = 0
        for pair in pairs:
            try:
                rendered = template.render(pair.topic, pair.document)
            except TemplateError:
                continue  # will be an input_error, costs nothing
            requests += 1
            images += sum(isinstance(p, ImagePart) for p in rendered.parts)
            tokens_in += prompt_token_estimate(rendered, config.detail, config.image_urls, pair.document.image_root)
        tokens_out = requests * config.max_tokens  # an upper bound: answers stop earlier
        cost = cost_of(tokens_in, tokens_out, config.prices)
        batch_cost = cost_of(tokens_in, tokens_out, batch_prices(config))
        return {
            "requests": requests,
            "images": images,
            "tokens_in": tokens_in,
            "tokens_out_max": tokens_out,
            "cost_usd_max": None if cost is None else round(cost, 6),
            "batch_cost_usd_max": None if batch_cost is None else round(batch_cost, 6),
        }

    # -- batch mode (qrelkit.judges.base.BatchJudge; the job's batch driver does the rest) ---------

    def batch_settings(self) -> BatchSettings:
        c = self.config
        return BatchSettings(c.batch_max_requests, c.batch_max_bytes, c.max_tries, c.batch_poll, c.batch_poll_max)

    def batch_request(self, pair: Pair) -> dict[str, Any] | Judgment:
        """The request body a batch line carries: the very request the live route sends, images included."""
        prepared = self._prepare(pair)
        return prepared if isinstance(prepared, Judgment) else prepared[0]

    def batch_client(self, folder: Path | None = None) -> BatchClient:
        """The endpoint's `/files` and `/batches` (``folder``, where a local runner keeps its batches, is not needed)."""
        c = self.config
        return BatchClient(
            api_key=self._secrets[0],
            base_url=self._base_url,
            key_variable=f"${c.api_key_env}",
            timeout=c.timeout,
            max_tries=c.max_tries,
            initial_backoff=c.initial_backoff,
            max_backoff=c.max_backoff,
        )

    def batch_judgment(self, qid: str, docid: str, line: BatchLine | None) -> Judgment | None:
        """A batch's answer for one pair, by the live route's reader and rules; None when the request
        never ran or failed in a way a later batch can fix (expired, cancelled, 429, 5xx)."""
        if line is None or line.status_code is None:
            return None
        if line.status_code == 200:
            try:
                reply = read_reply(line.body or "", logprobs=self.config.logprobs)
            except MalformedResponse as exc:
                body = (line.body or "")[:2000] or None
                error = f"malformed response: {exc}"
                return Judgment(qid, docid, "model_error", error=error, raw_output=redact(body, self._secrets), model_id=self.model_id)
            return self._reply_judgment(qid, docid, reply, 1, None, batch_prices(self.config))
        try:
            error_body: Any = json.loads(line.body) if line.body else None
        except ValueError:
            error_body = line.body
        verdict = classify_status(line.status_code, error_body)
        if verdict.action == "retry":
            return None
        return Judgment(qid, docid, "model_error", error=redact(verdict.message, self._secrets), model_id=self.model_id)

    def preflight(self) -> None:
        """One `GET /models` before the first batch, with a short deadline and no retries: a dead
        endpoint or a rejected key stops the job at once, naming the URL, instead of costing each
        pair its full round of retries."""
        import urllib.error
        import urllib.request

        url = self._base_url.rstrip("/") + "/models"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self._secrets[0]}"})
        try:
            with urllib.request.urlopen(request, timeout=min(self.config.timeout, 10.0)):
                pass
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise FatalJudgeError(
                    f"judge 'openai' at {self._base_url}: the API key was rejected (HTTP {exc.code}); check ${self.config.api_key_env}"
                ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = redact(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}", self._secrets)
            raise FatalJudgeError(
                f"judge 'openai': cannot reach {self._base_url} ({reason}); is the server running and the URL right?"
            ) from None
        # Any other answer (200, or 404 from servers without a model list) means the endpoint is there.

    def close(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is None or loop.is_closed():
            return
        self._cancel_pending()
        loop.run_until_complete(self._client.close())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
