"""The OpenAI Batch API, free of any model: request lines, files within the API's limits, output
lines, and a client for `/files` and `/batches` that works against any endpoint implementing them.

The shapes are the documented ones (OpenAI, "Batch API" guide; `POST /v1/files`, `POST /v1/batches`):

* an input line: ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}``;
* an output or error line: ``{"id", "custom_id", "response": {"status_code", "request_id", "body"} | null,
  "error": {"code", "message"} | null}``; the output file holds the requests that ran, the error file
  the ones that failed or never ran (`batch_expired`, `batch_cancelled`);
* a file holds at most 50,000 requests and 200 MB; `completion_window` is `24h`; `metadata` has at
  most 16 keys with values of at most 512 characters.

Creating a batch is the step that spends money, so :meth:`BatchClient.create` never sends a second
create for one submission without first asking the API's own list whether the first one landed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote

from qrelkit.judges.base import FatalJudgeError
from qrelkit.judges.http import ErrorVerdict, classify_error, normalized_endpoint, redact

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"  # an endpoint's base URL when none is given
ENDPOINT: Final = "/v1/chat/completions"
COMPLETION_WINDOW: Final = "24h"
MAX_REQUESTS_PER_FILE = 50_000
MAX_BYTES_PER_FILE = 200_000_000  # "200 MB", read as decimal megabytes: the smaller of the two readings
TERMINAL_STATUSES = frozenset({"completed", "expired", "cancelled", "failed"})
META_JUDGE_RUN, META_SUBMISSION = "qrelkit_judge_run_id", "qrelkit_submission_id"
CUSTOM_ID_PREFIX = "qrelkit"
DOWNLOAD_DEADLINE = 3600.0  # seconds for one output file's content: hundreds of MB on a slow line, not an endless trickle


# -- lines -------------------------------------------------------------------------------------


def custom_id_for(judge_run_id: str, qid: str, docid: str) -> str:
    """``qrelkit:<judge run>:<qid>:<docid>`` with qid and docid percent-encoded (any character is safe)."""
    return ":".join([CUSTOM_ID_PREFIX, judge_run_id, quote(qid, safe=""), quote(docid, safe="")])


def parse_custom_id(value: str) -> tuple[str, str, str] | None:
    """(judge run id, qid, docid), or None for an id qrelkit did not write."""
    parts = value.split(":") if isinstance(value, str) else []
    if len(parts) != 4 or parts[0] != CUSTOM_ID_PREFIX:
        return None
    return parts[1], unquote(parts[2]), unquote(parts[3])


def request_line(custom_id: str, body: dict[str, Any]) -> bytes:
    """One line of an input file; ``body`` is the Chat Completions request, exactly as sent live."""
    line = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def starts_new_file(lines: int, size: int, line: int, max_requests: int, max_bytes: int) -> bool:
    """Whether a line of ``line`` bytes goes to a new file when the current one holds ``lines``
    lines of ``size`` bytes: the one rule of how a Batch API input is cut into files."""
    return lines > 0 and (lines >= max_requests or size + line > max_bytes)


@dataclass(frozen=True)
class BatchLine:
    """A line of an output or error file: the request's HTTP status and body when it ran, else the error."""

    custom_id: str
    status_code: int | None = None
    body: str | None = None  # the response body as JSON text, what a live request would have returned
    error_code: str | None = None
    error_message: str | None = None


def read_output_line(text: str) -> BatchLine:
    """One output or error line; ValueError when it is not one."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
        raise ValueError("not a Batch API output line (no custom_id)")
    response, error = data.get("response"), data.get("error")
    status = body = None
    if isinstance(response, dict):
        status = response.get("status_code") if isinstance(response.get("status_code"), int) else None
        raw = response.get("body")
        body = raw if isinstance(raw, str) or raw is None else json.dumps(raw)
    code = message = None
    if isinstance(error, dict):
        code = str(error["code"]) if error.get("code") is not None else None
        message = str(error.get("message") or "")
    return BatchLine(data["custom_id"], status, body, code, message)


# -- where batches go --------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchEndpoint:
    """Where a judge's batches go, as the judge declares it (`BatchJudge.batch_endpoint`) and each
    submission records: a Batch API at ``url``, sent the key in the environment variable
    ``key_variable``; or, without a key variable, a runner on this machine that ``url`` names (its
    batches are files beside the database: nothing is sent anywhere)."""

    url: str
    key_variable: str | None = None

    @property
    def on_this_machine(self) -> bool:
        return self.key_variable is None

    @classmethod
    def remote(cls, base_url: str | None, key_variable: str) -> BatchEndpoint:
        """A Batch API's endpoint in one spelling (`normalized_endpoint`; None: OpenAI's); a value that
        is no URL (a database's) is kept as it is: compared, never reached."""
        try:
            return cls(normalized_endpoint(base_url or OPENAI_BASE_URL), key_variable)
        except ValueError:
            return cls(str(base_url), key_variable)


# -- batches -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchInfo:
    """What the API says of a batch."""

    id: str
    status: str
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    created_at: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    errors: tuple[str, ...] = ()  # why a batch failed validation: "line 3: invalid model", ...

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


def batch_info(batch: Any) -> BatchInfo:
    """A Batch object of the openai package (or its JSON as a dict) as plain data."""
    data = batch.model_dump() if hasattr(batch, "model_dump") else dict(batch)
    counts = data.get("request_counts") or {}
    errors = ((data.get("errors") or {}).get("data")) or []
    return BatchInfo(
        data["id"],
        data.get("status") or "unknown",
        data.get("input_file_id"),
        data.get("output_file_id"),
        data.get("error_file_id"),
        int(counts.get("total") or 0),
        int(counts.get("completed") or 0),
        int(counts.get("failed") or 0),
        int(data.get("created_at") or 0),
        {str(k): str(v) for k, v in (data.get("metadata") or {}).items()},
        tuple(
            (f"line {e['line']}: " if e.get("line") else "") + f"{e.get('code') or 'error'}: {e.get('message') or ''}".strip()
            for e in errors
            if isinstance(e, dict)
        ),
    )


# -- the client --------------------------------------------------------------------------------


class BatchApiError(FatalJudgeError):
    """The Batch API did not do what was asked. ``verdict.action`` says whether trying later can help
    (`retry`: timeouts, 429, 5xx) or not (`fail`, `fatal`: the request was refused, nothing was created)."""

    def __init__(self, message: str, verdict: ErrorVerdict):
        super().__init__(message)
        self.verdict = verdict

    @property
    def refused(self) -> bool:
        """The server answered and refused: whatever was asked was not created."""
        return self.verdict.action != "retry"


class BatchApiUnsupported(BatchApiError):
    """The endpoint has no `/files` or `/batches` (HTTP 404 there): it does not implement the Batch API."""


@dataclass(frozen=True)
class BatchSettings:
    """How a judge runs in batch mode (see the openai judge's `batch_*` options)."""

    max_requests: int = MAX_REQUESTS_PER_FILE
    max_bytes: int = MAX_BYTES_PER_FILE
    max_tries: int = 6  # batches a pair may be sent in before a retryable failure becomes its model_error
    poll_initial: float = 30.0
    poll_max: float = 600.0


class BatchClient:
    """`/files` and `/batches` of one endpoint, with the key kept out of every message."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str,
        key_variable: str = "the key's environment variable",
        timeout: float = 60.0,
        max_tries: int = 6,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
    ):
        from openai import OpenAI

        from qrelkit.io.limits import limits
        from qrelkit.judges.bodies import bounded_client

        self.base_url, self.key_variable = base_url, key_variable
        self._secrets = [api_key]
        self._upload_timeout = max(timeout, 600.0)  # a 200 MB file takes minutes on a slow line

        # Every answer read within bounds once decoded: a call's (a batch, a list) like a judge's
        # answer, a file's content up to the size of an input file and within DOWNLOAD_DEADLINE.
        # No automatic retries on the client: a retried POST could create a second batch. GETs
        # are retried by `_call`, POSTs only after asking the API whether the first one landed.
        def client(max_bytes: int, deadline: float) -> Any:
            bounded = bounded_client(timeout, max_bytes, deadline)
            return OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0, http_client=bounded)

        self._client = client(limits().max_response_bytes, timeout)
        self._uploads = client(limits().max_response_bytes, self._upload_timeout)
        self._files = client(limits().max_input_bytes, DOWNLOAD_DEADLINE)
        self._tries, self._initial, self._max = max(1, max_tries), initial_backoff, max_backoff

    # -- errors and retries ------------------------------------------------------------------

    def _error(self, exc: Exception, what: str, collection: bool) -> BatchApiError:
        verdict = classify_error(exc)
        message = redact(verdict.message, self._secrets) or ""
        if collection and verdict.status == 404:
            return BatchApiUnsupported(
                f"the endpoint {self.base_url} does not implement the Batch API (HTTP 404 on {what}); "
                "run the job with `mode: sync` (or `--mode sync`)",
                verdict,
            )
        if verdict.status in (401, 403):
            return BatchApiError(f"Batch API at {self.base_url}: {message} on {what}; check the key in {self.key_variable}", verdict)
        return BatchApiError(f"Batch API at {self.base_url}: {what} failed: {message}", verdict)

    def _wait(self, attempt: int, verdict: ErrorVerdict) -> None:
        wait = verdict.retry_after if verdict.retry_after is not None else self._initial * 2 ** (attempt - 1)
        time.sleep(min(wait, self._max))

    def _call(self, what: str, call: Callable[[], Any], *, collection: bool = False, look: Callable[[], Any] | None = None) -> Any:
        """A request tried up to ``max_tries`` times on timeouts, 429 and 5xx. One that creates
        something (``look`` given) is sent again only when ``look`` finds nothing of the first try."""
        for attempt in range(1, self._tries + 1):
            if look is not None and attempt > 1:
                found = look()
                if found is not None:
                    return found
            try:
                return call()
            except Exception as exc:  # noqa: BLE001 - classified below
                error = self._error(exc, what, collection)
                if error.refused or attempt == self._tries:
                    raise error from None
                self._wait(attempt, error.verdict)
        raise AssertionError("unreachable")

    def _listed(
        self, what: str, items: Callable[[], Iterable[Any]], named: Callable[[Any], tuple[Any, Any]], names: Iterable[str]
    ) -> dict[str, Any]:
        """name -> value of the listed ``items`` whose name (``named(item)``: name and value) is one of ``names``."""
        wanted, found = set(names), dict[str, Any]()
        if not wanted:
            return found

        def scan() -> None:
            for item in items():
                name, value = named(item)
                if name in wanted and name not in found:
                    found[name] = value
                if len(found) == len(wanted):
                    return

        self._call(what, scan, collection=True)
        return found

    # -- files -------------------------------------------------------------------------------

    def upload(self, path: Path, filename: str) -> str:
        """Upload a request file (`purpose: batch`) under ``filename``; its file id."""

        def post() -> str:
            with open(path, "rb") as handle:
                created = self._uploads.files.create(
                    file=(filename, handle, "application/jsonl"), purpose="batch", timeout=self._upload_timeout
                )
            return created.id

        return self._call("POST /files", post, collection=True, look=lambda: self.find_files([filename]).get(filename))

    def find_files(self, filenames: Iterable[str]) -> dict[str, str]:
        """filename -> file id, for those of ``filenames`` the API's file list (`purpose: batch`) holds."""
        return self._listed(
            "GET /files", lambda: self._client.files.list(purpose="batch"), lambda item: (item.filename, item.id), filenames
        )

    def download(self, file_id: str) -> Iterator[bytes]:
        """The file's content as a stream of byte chunks (a generator: the caller's own errors never
        pass through it, so only the network's failures become BatchApiError)."""
        try:
            with self._files.files.with_streaming_response.content(file_id) as response:
                yield from response.iter_bytes(1 << 20)
        except Exception as exc:  # noqa: BLE001 - classified
            raise self._error(exc, f"GET /files/{file_id}/content", False) from None

    # -- batches -----------------------------------------------------------------------------

    def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchInfo:
        """Create a batch for an uploaded file; ``metadata[META_SUBMISSION]`` is how a retry finds it."""
        submission = metadata[META_SUBMISSION]

        def post() -> BatchInfo:
            created = self._client.batches.create(
                input_file_id=input_file_id, endpoint=ENDPOINT, completion_window=COMPLETION_WINDOW, metadata=metadata
            )
            return batch_info(created)

        return self._call("POST /batches", post, collection=True, look=lambda: self.find_batches([submission]).get(submission))

    def find_batches(self, submission_ids: Iterable[str]) -> dict[str, BatchInfo]:
        """submission id -> the batch whose metadata names it, from the API's list of batches."""

        def named(item: Any) -> tuple[str | None, BatchInfo]:
            info = batch_info(item)
            return info.metadata.get(META_SUBMISSION), info

        return self._listed("GET /batches", lambda: self._client.batches.list(limit=100), named, submission_ids)

    def retrieve(self, batch_id: str) -> BatchInfo:
        return self._call(f"GET /batches/{batch_id}", lambda: batch_info(self._client.batches.retrieve(batch_id)))

    def cancel(self, batch_id: str) -> BatchInfo:
        try:
            return batch_info(self._client.batches.cancel(batch_id))
        except Exception as exc:  # noqa: BLE001 - classified
            raise self._error(exc, f"POST /batches/{batch_id}/cancel", False) from None

    def close(self) -> None:
        for client in (self._client, self._uploads, self._files):
            client.close()
