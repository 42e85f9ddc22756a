"""HTTP plumbing for API judges, free of any model: when to retry, how long to wait, how fast to go,
what may be stored or logged (`redact`) and which image URLs may be forwarded (`checked_image_url`).

`classify_error` retries (429, 408, 409, 5xx, timeouts, connection errors), fails the pair at once
(400, 413, 422, content filter, context too long, a malformed body) or stops the job (401/403 key
rejected, 404 no such model or endpoint, 429 `insufficient_quota`).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from qrelkit.errors import PairInputError
from qrelkit.io.net.urls import local_host_reason

RETRYABLE_STATUS = {408, 409, 429}  # plus every 5xx
FATAL_STATUS = {401: "the API key was rejected", 403: "the API key lacks permission", 404: "no such model or endpoint"}
# Codes OpenAI puts in error bodies: quota is gone until someone pays; retrying cannot help.
FATAL_CODES = {"insufficient_quota": "the account's quota is exhausted"}


class MalformedResponse(ValueError):
    """A 2xx answer that is not a chat completion (not JSON, no choices, no message)."""

    def __init__(self, message: str, body: str | None = None):
        super().__init__(message)
        self.body = body


class ResponseTooLarge(MalformedResponse):
    """An answer whose body is larger than `max_response_bytes` once decoded: not read further (an
    endless body, or a small gzip of a huge one, would otherwise fill the memory before the
    deadline), the pair failed, not retried (`qrelkit.judges.bodies`)."""


class DeadlineExceeded(TimeoutError):
    """One try did not bring a complete answer within its deadline (the judge's `timeout`)."""

    def __init__(self, seconds: float):
        super().__init__(f"no complete answer within {seconds:g} s")
        self.seconds = seconds


def normalized_endpoint(url: str) -> str:
    """An endpoint's base URL in one spelling: scheme and host in lower case, no trailing `/` (the
    client adds it), so `http://Host:8000/v1/` and `http://host:8000/v1` are the same endpoint, the
    same judge run and the same batches. ValueError for a URL that does not parse."""
    parts = urlsplit(url.strip())
    parts.port  # noqa: B018 (a port that is no number raises here)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    user, at, host = parts.netloc.rpartition("@")
    return urlunsplit((parts.scheme.lower(), user + at + host.lower(), parts.path.rstrip("/"), parts.query, parts.fragment))


def retry_after_seconds(headers: Mapping[str, str] | None, *, now: datetime | None = None) -> float | None:
    """Seconds the server asks us to wait, or None: `retry-after-ms` (OpenAI, Azure) wins over
    `Retry-After` as seconds or an HTTP-date (RFC 9110 §10.2.3)."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            value = float(lower[name]) / scale
        except (KeyError, ValueError):
            continue  # absent or no number: `Retry-After` may still be a date
        return value if math.isfinite(value) and value >= 0 else None
    raw = lower.get("retry-after")
    if raw is None:
        return None
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class ErrorVerdict:
    action: Literal["retry", "fail", "fatal"]
    message: str
    retry_after: float | None = None
    status: int | None = None


def classify_status(status: int, body: Any, headers: Mapping[str, str] | None = None) -> ErrorVerdict:
    """What to do about an HTTP error status and its body: the rule for a live request and for a
    line of a Batch API output file alike."""
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]  # an OpenAI-style error body {"error": {"code", "message"}}
    detail = body if isinstance(body, Mapping) else {"message": body}  # a bare body is its message
    code = detail.get("code") or detail.get("type")
    code = str(code) if code else None
    message = str(detail.get("message") or "")[:500]
    text = f"HTTP {status}" + (f" {code}" if code else "") + (f": {message}" if message else "")
    if 300 <= status < 400:
        where = {k.lower(): v for k, v in (headers or {}).items()}.get("location", "elsewhere")
        return ErrorVerdict(
            "fatal",
            f"the endpoint redirects (HTTP {status}) to {where}: prompts are not sent on; set base_url to the endpoint",
            status=status,
        )
    if code in FATAL_CODES:
        return ErrorVerdict("fatal", f"{FATAL_CODES[code]} ({text})", status=status)
    if status in FATAL_STATUS:
        return ErrorVerdict("fatal", f"{FATAL_STATUS[status]} ({text})", status=status)
    if status in RETRYABLE_STATUS or status >= 500:
        return ErrorVerdict("retry", text, retry_after_seconds(headers), status)
    return ErrorVerdict("fail", text, status=status)  # 400 (bad request, content filter, context too long), 413, 422


def classify_error(exc: BaseException) -> ErrorVerdict:
    """What to do about an exception from one HTTP try (openai client exceptions, or ours)."""
    import openai

    if isinstance(exc, (MalformedResponse, json.JSONDecodeError, UnicodeDecodeError)):
        return ErrorVerdict("fail", f"malformed response: {exc}")
    if isinstance(exc, (DeadlineExceeded, openai.APITimeoutError)):
        return ErrorVerdict("retry", "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return ErrorVerdict("retry", f"connection error: {type(cause).__name__ if cause else exc}")
    if isinstance(exc, openai.APIStatusError):
        return classify_status(exc.status_code, exc.body, exc.response.headers)
    return ErrorVerdict("fail", f"{type(exc).__name__}: {exc}")


class BackoffWait:
    """Tenacity wait strategy: the server's Retry-After if it sent one, else
    initial·2^(n−1) plus uniform jitter in [0, initial]; never more than `maximum`."""

    def __init__(self, initial: float, maximum: float, rng: random.Random | None = None):
        self.initial, self.maximum = initial, maximum
        self.rng = rng or random.Random()

    def __call__(self, retry_state: Any) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        after = classify_error(exc).retry_after if exc is not None else None
        if after is not None:
            # a little jitter on top, so requests told the same Retry-After do not return as a herd
            return min(after + self.rng.uniform(0, min(self.initial, 1.0)), self.maximum)
        exponential = self.initial * 2 ** (retry_state.attempt_number - 1)
        return min(exponential + self.rng.uniform(0, self.initial), self.maximum)


class RateLimiter:
    """Requests and tokens per minute as two token buckets that start full and refill
    continuously. A caller reserves its cost at once (a bucket may go negative) and sleeps until
    the debt is repaid, so waiters are served in arrival order and each wait is bounded by the
    demand queued ahead of it. A cost above a bucket's capacity is charged at the capacity,
    so one large request cannot wait forever."""

    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ):
        self.clock, self.sleep = clock, sleep
        self.buckets = [[float(limit), float(limit)] for limit in (rpm, tpm) if limit]  # [capacity, level]
        self.kinds = [kind for kind, limit in (("requests", rpm), ("tokens", tpm)) if limit]
        self.updated = clock()

    def reserve(self, tokens: float) -> float:
        """Take one request and `tokens` from the buckets; the seconds to wait before sending."""
        now = self.clock()
        elapsed, self.updated = now - self.updated, now
        wait = 0.0
        costs = [1.0 if kind == "requests" else float(tokens) for kind in self.kinds]
        for bucket, cost in zip(self.buckets, costs):
            capacity, level = bucket
            level = min(capacity, level + elapsed * capacity / 60.0) - min(cost, capacity)
            bucket[1] = level
            if level < 0:
                wait = max(wait, -level / (capacity / 60.0))
        return wait

    async def acquire(self, tokens: float = 0) -> float:
        wait = self.reserve(tokens)
        if wait > 0:
            await self.sleep(wait)
        return wait


_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,})")


def redact(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """Text with each secret, and anything shaped like an OpenAI key (servers echo masked
    keys: "Incorrect API key provided: sk-ab***yz"), replaced by [redacted]."""
    if text is None:
        return None
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return _KEY_PATTERN.sub("sk-[redacted]", text)


# -- image URLs ------------------------------------------------------------------------------
# The endpoint fetches what it is sent, from where it runs: a `file:` URL, or an `http://` URL of a
# loopback, link-local (169.254.x.x, a cloud's metadata service) or private address (by the address
# written or the addresses a name resolves to) would let a documents file read what the endpoint's
# machine can reach. So only `https://` URLs to public hosts without credentials are forwarded;
# `http://`, and local or private hosts, only when the job lists the host.


class ImageURLRefused(PairInputError):
    """A document's image URL that the job does not allow to be forwarded."""


def checked_image_url(url: str, allowed_hosts: Collection[str] = ()) -> str:
    """``url`` when it may be forwarded; ImageURLRefused saying why not."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
    except ValueError as exc:
        raise ImageURLRefused(f"image URL {url!r} is not a URL: {exc}") from None
    scheme = parts.scheme.lower()
    allowed = {h.lower().rstrip(".") for h in allowed_hosts}
    if scheme not in ("https", "http"):
        raise ImageURLRefused(f"image URL {url!r}: only https:// URLs are forwarded (not {scheme or 'a relative'}: URLs)")
    if not host:
        raise ImageURLRefused(f"image URL {url!r} names no host")
    if parts.username is not None or parts.password is not None:
        shown = url.replace(parts.netloc, parts.netloc.rpartition("@")[2])  # the credentials are not repeated
        raise ImageURLRefused(f"image URL {shown!r} carries credentials (user:password@); they are never forwarded")
    if host.rstrip(".") in allowed:
        return url
    if scheme == "http":
        raise ImageURLRefused(f"image URL {url!r}: http:// only to hosts listed in the judge's `image_url_hosts`")
    reason = local_host_reason(host)
    if reason:
        raise ImageURLRefused(f"image URL {url!r} names {reason}; list {host!r} in `image_url_hosts` to allow it")
    return url
