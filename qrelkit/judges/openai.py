"""`openai`: GPT-4V / GPT-4o and any OpenAI-compatible chat endpoint (vLLM's `vllm serve`,
llama.cpp's server, others) through the official `openai` client.

One judgment is one Chat Completions request (its wire format: `chat_completions`, shared with the
`vllm` judge's batch route). A batch's requests run concurrently on the judge's own asyncio loop,
at most `concurrency` at a time and within the `rpm`/`tpm` limits; each is tried up to `max_tries`
times (tenacity; see `http.py` for what is retried). The runner's `batch_size` should be at least
`concurrency` (a few times it is best), or the slots are never all used.

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
import logging
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import JsonDict

from qrelkit.io.files import open_under_root
from qrelkit.io.limits import limits
from qrelkit.judges.base import BaseJudge, FatalJudgeError, JudgeConfig, JudgeError, Judgment, Pair
from qrelkit.judges.batch_api import (
    MAX_BYTES_PER_FILE,
    MAX_REQUESTS_PER_FILE,
    OPENAI_BASE_URL,
    BatchClient,
    BatchEndpoint,
    BatchLine,
    BatchSettings,
)
from qrelkit.judges.bodies import bounded_client
from qrelkit.judges.chat_completions import SERVER_FIELDS, ChatOptions, ChatRoute
from qrelkit.judges.http import (
    BackoffWait,
    DeadlineExceeded,
    RateLimiter,
    classify_error,
    normalized_endpoint,
    redact,
)
from qrelkit.prompts import ImagePart, PromptTemplate, RenderedPrompt, TemplateError, TextPart

log = logging.getLogger(__name__)
T = TypeVar("T")

OPENAI_TOP_LOGPROBS = 20  # the most alternatives per position OpenAI's API gives
LOCAL_PLACEHOLDER_KEY = "no-key-needed"  # local servers without --api-key accept any bearer token
KEY_FIX = "export the API key there (or set `base_url` for a local server, or `api_key_env` to another variable)"
# How the judge runs, not what it judges: a change should resume the same judge run. The runner
# can leave these out of the run's identity (see docs/openai-judge.md).
OPERATIONAL: JsonDict = {"identity": False}


def operational(default: T, **options: Any) -> T:
    """A field of how the judge runs (`OPERATIONAL`)."""
    return Field(default, json_schema_extra=OPERATIONAL, **options)


IMAGE_TOKENS_LOW, IMAGE_TOKENS_BASE, IMAGE_TOKENS_PER_TILE = 85, 85, 170
UNKNOWN_IMAGE_SIZE = (1024, 1024)


class Prices(JudgeConfig):
    input_per_million: float = Field(ge=0, description="USD per million prompt tokens.")
    output_per_million: float = Field(ge=0, description="USD per million completion tokens.")


class OpenAIConfig(JudgeConfig):
    model: str = Field("gpt-4o", description="Model name as the endpoint knows it (gpt-4o, gpt-4-vision-preview, ...).")
    base_url: str | None = Field(None, description="An OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.")
    api_key_env: str = operational("OPENAI_API_KEY", description="Name of the environment variable holding the key.")
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
    concurrency: int = operational(4, ge=1, le=256, description="Requests in flight (keep batch_size >= this).")
    rpm: int | None = operational(None, ge=1, description="Requests-per-minute limit.")
    tpm: int | None = operational(None, ge=1, description="Tokens-per-minute limit (estimated prompt + max_tokens).")
    timeout: float = operational(60.0, gt=0, description="Seconds per HTTP try, a deadline for the whole answer (not idle time).")
    max_tries: int = operational(6, ge=1, description="HTTP tries per pair (first try included).")
    initial_backoff: float = operational(1.0, ge=0, description="First retry wait in seconds (doubles).")
    max_backoff: float = operational(60.0, ge=0, description="Longest wait, Retry-After included.")
    prices: Prices | None = operational(None, description="{input_per_million, output_per_million} in USD, for cost.")
    # The Batch API (docs/openai-batch.md): the same requests, answered within 24 hours at half the price.
    mode: Literal["sync", "batch"] = operational(
        "sync", description="sync: a live request per pair; batch: the Batch API (see docs/openai-batch.md)."
    )
    batch_prices: Prices | None = operational(None, description="USD per million tokens in batch mode (default: half of `prices`).")
    batch_max_requests: int = operational(MAX_REQUESTS_PER_FILE, ge=1, le=MAX_REQUESTS_PER_FILE, description="Requests per batch file.")
    batch_max_bytes: int = operational(MAX_BYTES_PER_FILE, ge=1, le=MAX_BYTES_PER_FILE, description="Bytes per batch file.")
    batch_poll: float = operational(30.0, gt=0, description="First wait in seconds between checks with --wait (doubles).")
    batch_poll_max: float = operational(600.0, gt=0, description="Longest wait between checks with --wait.")

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


def priced(judgment: Judgment, prices: Prices | None) -> Judgment:
    """The judgment with the cost of its tokens (billed whatever its status)."""
    judgment.cost = cost_of(judgment.tokens_in, judgment.tokens_out, prices)
    return judgment


BATCH_DISCOUNT = 0.5  # OpenAI's Batch API: "50% lower costs" than the same requests made live


def batch_prices(config: OpenAIConfig) -> Prices | None:
    if config.batch_prices is not None or config.prices is None:
        return config.batch_prices
    return Prices(
        input_per_million=config.prices.input_per_million * BATCH_DISCOUNT,
        output_per_million=config.prices.output_per_million * BATCH_DISCOUNT,
    )


# -- the judge ---------------------------------------------------------------------------------


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

        key = None if config.base_url else unset_variable(config.api_key_env, cls.name, KEY_FIX)
        return [p for p in (missing_module("openai", cls.name, "pip install openai"), key) if p]

    @classmethod
    def endpoint_problem(cls, config: OpenAIConfig) -> str | None:
        from qrelkit.judges.startup import endpoint_problem

        key = os.environ.get(config.api_key_env) or LOCAL_PLACEHOLDER_KEY
        url = (config.base_url or OPENAI_BASE_URL).rstrip("/") + "/models"
        return endpoint_problem(url, {"Authorization": f"Bearer {key}"}, cls.name, timeout=min(config.timeout, 10.0))

    def __init__(self, config: OpenAIConfig, template: PromptTemplate | None, context=None):
        super().__init__(config, template, context)
        from openai import AsyncOpenAI

        key = os.environ.get(config.api_key_env) or (LOCAL_PLACEHOLDER_KEY if config.base_url else None)
        if key is None:
            raise JudgeError(f"judge 'openai': the environment variable {config.api_key_env} is not set; {KEY_FIX}")
        self._secrets = [key]
        self._base_url = config.base_url or OPENAI_BASE_URL
        self.route = ChatRoute(ChatOptions.of(config), self.template, self.model_id, self._secrets)
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

    async def _judge_pair(self, pair: Pair) -> Judgment:
        prepared = self.route.request(pair)
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
            retry=retry_if_exception(lambda exc: isinstance(exc, Exception) and classify_error(exc).action == "retry"),
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
                fix = "; check `model` and `base_url`" if verdict.status == 404 else f"; check the key in ${c.api_key_env}"
                raise FatalJudgeError(f"judge 'openai' at {self._base_url}: {message}{'' if redirected else fix}") from None
            return Judgment.failed(
                pair,
                "model_error",
                f"{message} (after {attempts} {'try' if attempts == 1 else 'tries'})",
                attempts=attempts,
                model_id=self.model_id,
                latency_ms=latency_ms,
            )
        return priced(self.route.answer(*pair.key, body, attempts, latency_ms), c.prices)

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

    def batch_endpoint(self) -> BatchEndpoint:
        return BatchEndpoint.remote(self.config.base_url, self.config.api_key_env)

    def batch_request(self, pair: Pair) -> dict[str, Any] | Judgment:
        """The request body a batch line carries: the very request the live route sends, images included."""
        return self.route.body(pair)

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
        """A batch's answer for one pair (`ChatRoute.batch_judgment`), at the batch price."""
        judgment = self.route.batch_judgment(qid, docid, line)
        return None if judgment is None else priced(judgment, batch_prices(self.config))

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
