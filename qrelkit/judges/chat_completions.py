"""The OpenAI Chat Completions wire format, for every backend that speaks it: the `openai` judge (live,
or its Batch API lines) and the `vllm` judge's `mode: batch` (vLLM's run_batch answers the same lines).
How a pair becomes a request body, and how a response body (live, or a batch output line's) becomes
the answer, its token log-probabilities and usage, then a judgment under the one scoring rule
(`judges.scoring`), is said here once; nothing here sends. vLLM's chat API also continues an
assistant message (``continue_final_message``), which an ``answer_prefix`` asks for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from qrelkit.errors import PairInputError
from qrelkit.judges.base import Judgment, Pair
from qrelkit.judges.batch_api import BatchLine
from qrelkit.judges.chat import build_messages
from qrelkit.judges.http import MalformedResponse, classify_status, redact
from qrelkit.judges.scoring import ScoreMode, TokenPositions, answer_candidates, first_line, judgment_from_answer
from qrelkit.prompts import PromptTemplate, RenderedPrompt, TemplateError

# Request fields of vLLM's chat API beyond OpenAI's: the openai client sends them as `extra_body`.
SERVER_FIELDS = ("continue_final_message", "add_generation_prompt")


@dataclass(frozen=True)
class ChatOptions:
    """What a request asks, and how its answer is scored (the `openai` judge's options of these names)."""

    model: str
    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int = 16
    logprobs: bool = False
    top_logprobs: int = 5
    answer_prefix: str | None = None
    score: ScoreMode = "parsed"
    detail: str = "auto"
    image_urls: bool = False
    image_url_hosts: Sequence[str] = ()

    @classmethod
    def of(cls, config: Any) -> ChatOptions:
        return cls(**{field.name: getattr(config, field.name) for field in fields(cls)})

    def body(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The request body for ``messages``: the same live and in a batch line."""
        if self.answer_prefix is not None:
            # the answer continues an assistant message holding the prefix, as vLLM's chat API allows
            messages = [*messages, {"role": "assistant", "content": self.answer_prefix}]
        request: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        request["max_tokens"] = self.max_tokens
        if self.seed is not None:
            request["seed"] = self.seed
        if self.logprobs:
            request.update(logprobs=True, top_logprobs=self.top_logprobs)
        if self.answer_prefix is not None:
            request.update(continue_final_message=True, add_generation_prompt=False)
        return request


# -- responses ---------------------------------------------------------------------------------


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


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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


# -- a judge's requests and answers --------------------------------------------------------------


class ChatRoute:
    """A judge's requests in this format and the judgments of their answers. It holds no client and
    no key: the judge sends the bodies (live, or as batch lines) and hands back what came; ``secrets``
    are scrubbed from whatever is kept of an answer."""

    def __init__(self, options: ChatOptions, template: PromptTemplate, model_id: str, secrets: Sequence[str] = ()):
        self.options, self.template, self.model_id, self.secrets = options, template, model_id, list(secrets)

    def request(self, pair: Pair) -> tuple[dict[str, Any], RenderedPrompt] | Judgment:
        """The pair's request body (and its rendered prompt), or its input_error."""
        o = self.options
        try:
            rendered = self.template.render(pair.topic, pair.document)
            messages = build_messages(
                rendered, detail=o.detail, image_urls=o.image_urls, image_root=pair.document.image_root, url_hosts=o.image_url_hosts
            )
        except (TemplateError, PairInputError) as exc:
            return Judgment.failed(pair, "input_error", str(exc), model_id=self.model_id)
        return o.body(messages), rendered

    def body(self, pair: Pair) -> dict[str, Any] | Judgment:
        """The pair's request body alone (what a batch line carries), or its input_error."""
        prepared = self.request(pair)
        return prepared if isinstance(prepared, Judgment) else prepared[0]

    def judgment(self, qid: str, docid: str, reply: Reply, attempts: int = 1, latency_ms: float | None = None) -> Judgment:
        """A reply as a judgment under the one scoring rule and status policy (live or from a batch)."""
        o = self.options
        common: dict[str, Any] = dict(
            raw_output=redact(reply.text, self.secrets),
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_ms=latency_ms,
            attempts=attempts,
            model_id=self.model_id,
            system_fingerprint=reply.fingerprint,
        )
        if reply.finish_reason == "content_filter":
            return Judgment(qid, docid, "model_error", error="the answer was withheld by the content filter", **common)
        positions = reply.positions() if o.logprobs else None
        text = reply.text
        if o.answer_prefix is not None and text is not None:
            # the server continued the prefix: the answer is both, its first generated token the answer position
            text = o.answer_prefix + first_line(text)
            common["raw_output"] = redact(text, self.secrets)
        candidates = answer_candidates(positions, template=self.template, forced=o.answer_prefix is not None)
        return judgment_from_answer(qid, docid, text=text, template=self.template, mode=o.score, candidates=candidates, **common)

    def answer(self, qid: str, docid: str, body: str, attempts: int | None = None, latency_ms: float | None = None) -> Judgment:
        """The judgment of an answer's body (a live response's, or a batch line's). Never raises:
        whatever goes wrong reading it, the raw body is kept as a model error's raw output, so the
        pair is never sent again because of a problem after its answer came back. ``attempts``: the
        live tries it took (a batch's are its driver's to count)."""
        try:
            return self.judgment(qid, docid, read_reply(body, logprobs=self.options.logprobs), attempts or 1, latency_ms)
        except Exception as exc:  # noqa: BLE001 - a malformed body, or a bug reading an odd one
            what = (
                f"malformed response: {exc}"
                if isinstance(exc, MalformedResponse)
                else f"could not read the answer: {type(exc).__name__}: {exc}"
            )
            error = redact(what + ("" if attempts is None else f" (after {attempts} {'try' if attempts == 1 else 'tries'})"), self.secrets)
            return Judgment(
                qid,
                docid,
                "model_error",
                error=error,
                raw_output=redact(body, self.secrets),
                attempts=attempts or 1,
                model_id=self.model_id,
                latency_ms=latency_ms,
            )

    def batch_judgment(self, qid: str, docid: str, line: BatchLine | None) -> Judgment | None:
        """A batch's answer for one pair, by the live route's reader and rules; None when the request
        never ran or failed in a way a later batch can fix (expired, cancelled, 429, 5xx)."""
        if line is None or line.status_code is None:
            return None
        if line.status_code == 200:
            return self.answer(qid, docid, line.body or "")
        try:
            error_body: Any = json.loads(line.body) if line.body else None
        except ValueError:
            error_body = line.body
        verdict = classify_status(line.status_code, error_body)
        if verdict.action == "retry":
            return None
        return Judgment(qid, docid, "model_error", error=redact(verdict.message, self.secrets), model_id=self.model_id)
