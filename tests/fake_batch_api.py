"""A Batch API on 127.0.0.1 with the documented shapes, whose batches finish when a test says so.

Endpoints: `GET /v1/models`; `POST /v1/files` (multipart: `purpose`, `file`), `GET /v1/files`
(cursor pages: `after`, `limit`, `has_more`, newest first), `GET /v1/files/{id}/content`;
`POST /v1/batches`, `GET /v1/batches` (cursor pages), `GET /v1/batches/{id}`,
`POST /v1/batches/{id}/cancel`; and `POST /v1/chat/completions` (the live route, same answers).

`complete()` runs the open batches: each request line is answered as fake_openai's server answers
it (scripted per marker with fake_openai.Reply, else "Relevance: <grade>"), a 200 into the output
file and anything else into the error file; `expire_after=n` answers the first n lines and marks
the rest `batch_expired`, a cancelling batch ends `cancelled` the same way. `paid` counts, per
custom_id, the answers the API would bill. Faults: `refuse` answers a route with a status without
doing anything; `fail_after` does the work and then answers with a status (a lost response).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from email import policy
from email.parser import BytesParser
from typing import Any
from urllib.parse import parse_qs, urlparse

from fake_openai import MARKER, QuietHandler, Reply, completion, serve


@dataclass
class StoredFile:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
        }


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]


class FakeBatchAPI:
    def __init__(self, *, batch_api: bool = True, page_size: int = 2):
        self.batch_api, self.page_size = batch_api, page_size
        self.files: dict[str, StoredFile] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.live: list[dict[str, Any]] = []  # bodies of live chat completions
        self.paid: Counter[str] = Counter()  # custom_id -> answers billed
        self.scripts: dict[str, deque[Reply]] = {}
        self.refuse: dict[str, deque[int]] = {}  # "POST /v1/files" -> statuses to answer without doing anything
        self.fail_after: dict[str, deque[int]] = {}  # "POST /v1/batches" -> statuses to answer after doing the work
        self.lock = threading.RLock()
        self._ids = 0
        self._clock = 1_700_000_000

    # -- test controls -----------------------------------------------------------------------------

    def script(self, marker: str, *replies: Reply) -> None:
        with self.lock:
            self.scripts.setdefault(marker, deque()).extend(replies)

    def _next_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids:04d}"

    def _now(self) -> int:
        self._clock += 1  # strictly increasing: list order is well defined
        return self._clock

    def open_batches(self) -> list[str]:
        return [b["id"] for b in self.batches.values() if b["status"] in ("validating", "in_progress", "finalizing", "cancelling")]

    def complete(self, batch_id: str | None = None, *, expire_after: int | None = None) -> list[str]:
        """Finish one open batch or all: completed, expired (``expire_after`` lines answered) or cancelled."""
        with self.lock:
            done = []
            for bid in [batch_id] if batch_id else self.open_batches():
                self._finish(self.batches[bid], expire_after)
                done.append(bid)
            return done

    def input_lines(self, batch_id: str) -> list[dict[str, Any]]:
        batch = self.batches[batch_id]
        return [json.loads(line) for line in self.files[batch["input_file_id"]].data.decode().splitlines() if line.strip()]

    def sent_custom_ids(self) -> Counter[str]:
        """custom_id -> in how many created batches it was sent."""
        return Counter(line["custom_id"] for bid in self.batches for line in self.input_lines(bid))

    # -- batch processing --------------------------------------------------------------------------

    def _answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        found = MARKER.search(json.dumps(body.get("messages", [])))
        marker = found.group(1) if found else None
        queue = self.scripts.get(marker or "")
        reply = queue.popleft() if queue else Reply()
        if reply.body is None:
            return reply.status, completion(body, marker, reply)
        return reply.status, reply.body

    def _finish(self, batch: dict[str, Any], expire_after: int | None) -> None:
        cancelling = batch["status"] == "cancelling"
        limit = expire_after if expire_after is not None else (0 if cancelling else None)
        outputs, errors = [], []
        for index, line in enumerate(self.input_lines(batch["id"])):
            request_id = self._next_id("batch_req_")
            if limit is not None and index >= limit:
                code = "batch_cancelled" if cancelling else "batch_expired"
                message = "This request could not be executed before the completion window expired."
                errors.append(
                    {"id": request_id, "custom_id": line["custom_id"], "response": None, "error": {"code": code, "message": message}}
                )
                continue
            status, body = self._answer(line["body"])
            response = {"status_code": status, "request_id": self._next_id("req_"), "body": body}
            entry = {"id": request_id, "custom_id": line["custom_id"], "response": response, "error": None}
            if status == 200:
                self.paid[line["custom_id"]] += 1
                outputs.append(entry)
            else:
                errors.append(entry)
        for kind, lines in (("output", outputs), ("error", errors)):
            if lines:
                data = "".join(json.dumps(x) + "\n" for x in lines).encode()
                stored = StoredFile(self._next_id("file-"), f"{batch['id']}_{kind}.jsonl", "batch_output", data, self._now())
                self.files[stored.id] = stored
                batch[f"{kind}_file_id"] = stored.id
        now = self._now()
        batch["status"] = "cancelled" if cancelling else "expired" if expire_after is not None else "completed"
        batch[{"cancelled": "cancelled_at", "expired": "expired_at", "completed": "completed_at"}[batch["status"]]] = now
        batch["request_counts"] = {"total": len(outputs) + len(errors), "completed": len(outputs), "failed": len(errors)}

    def _create_batch(self, body: dict[str, Any]) -> tuple[int, Any]:
        stored = self.files.get(body.get("input_file_id", ""))
        if stored is None or stored.purpose != "batch":
            return 400, {"error": {"message": f"No batch input file with id {body.get('input_file_id')!r}", "code": "invalid_file"}}
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return 400, {"error": {"message": "endpoint must be /v1/chat/completions and completion_window 24h"}}
        problems, seen = [], set()
        for number, text in enumerate(stored.data.decode().splitlines(), 1):
            line = json.loads(text)
            if line.get("method") != "POST" or line.get("url") != "/v1/chat/completions" or not isinstance(line.get("body"), dict):
                problems.append({"code": "invalid_request", "message": "bad request line", "line": number})
            if line.get("custom_id") in seen:
                problems.append({"code": "duplicate_custom_id", "message": "custom_id repeats", "line": number})
            seen.add(line.get("custom_id"))
        now = self._now()
        batch = {
            "id": self._next_id("batch_"),
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": {"object": "list", "data": problems} if problems else None,
            "input_file_id": stored.id,
            "completion_window": "24h",
            "status": "failed" if problems else "in_progress",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "in_progress_at": None if problems else now,
            "expires_at": now + 86400,
            "failed_at": now if problems else None,
            "request_counts": {"total": len(seen), "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        self.batches[batch["id"]] = batch
        return 200, batch

    def _page(self, items: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any]:
        items = sorted(items, key=lambda x: x["created_at"], reverse=True)
        after = query.get("after", [None])[0]
        if after is not None:
            ids = [x["id"] for x in items]
            items = items[ids.index(after) + 1 :] if after in ids else []
        size = min(int(query.get("limit", ["100"])[0]), self.page_size)
        page = items[:size]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(items) > size,
        }

    # -- HTTP --------------------------------------------------------------------------------------

    def handle(self, method: str, url: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any, str]:
        """(status, payload, content type) for one request."""
        parsed = urlparse(url)
        path, query = parsed.path, parse_qs(parsed.query)
        route = f"{method} " + re.sub(r"/(file|batch)[-_]\w+", lambda m: "/{" + m.group(1) + "}", path)
        with self.lock:
            self.calls.append(Call(method, path, headers))
            if route in self.refuse and self.refuse[route]:
                return self.refuse[route].popleft(), {"error": {"message": "refused by the test"}}, "application/json"
            status, payload, kind = self._route(method, path, query, headers, raw)
            if status == 200 and route in self.fail_after and self.fail_after[route]:
                return self.fail_after[route].popleft(), {"error": {"message": "the response was lost"}}, "application/json"
            return status, payload, kind

    def _route(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes) -> tuple[int, Any, str]:
        js = "application/json"
        if method == "GET" and path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "fake", "object": "model"}]}, js
        if method == "POST" and path == "/v1/chat/completions":
            self.live.append(json.loads(raw))
            return (*self._answer(self.live[-1]), js)
        if not self.batch_api or not path.startswith(("/v1/files", "/v1/batches")):
            return 404, {"error": {"message": f"Not Found: {method} {path}"}}, js
        parts = path.strip("/").split("/")[1:]  # files | batches, id, action
        if parts[0] == "files":
            if method == "POST" and len(parts) == 1:
                return 200, self._upload(headers, raw).to_json(), js
            if method == "GET" and len(parts) == 1:
                wanted = query.get("purpose", [None])[0]
                return 200, self._page([f.to_json() for f in self.files.values() if wanted in (None, f.purpose)], query), js
            stored = self.files.get(parts[1])
            if stored is None:
                return 404, {"error": {"message": f"No such File object: {parts[1]}"}}, js
            if method == "GET" and parts[2:] == ["content"]:
                return 200, stored.data, "application/octet-stream"
            return 200, stored.to_json(), js
        if method == "POST" and len(parts) == 1:
            return (*self._create_batch(json.loads(raw)), js)
        if method == "GET" and len(parts) == 1:
            return 200, self._page(list(self.batches.values()), query), js
        batch = self.batches.get(parts[1])
        if batch is None:
            return 404, {"error": {"message": f"No batch with id {parts[1]!r}"}}, js
        if method == "POST" and parts[2:] == ["cancel"]:
            if batch["status"] not in ("validating", "in_progress", "finalizing"):
                return 400, {"error": {"message": f"Cannot cancel a batch with status {batch['status']}"}}, js
            batch["status"], batch["cancelling_at"] = "cancelling", self._now()
        return 200, batch, js

    def _upload(self, headers: dict[str, str], raw: bytes) -> StoredFile:
        message = BytesParser(policy=policy.HTTP).parsebytes(f"Content-Type: {headers['content-type']}\r\n\r\n".encode() + raw)
        fields: dict[str, Any] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[name] = (part.get_filename(), part.get_payload(decode=True))
        filename, data = fields["file"]
        stored = StoredFile(self._next_id("file-"), filename, fields["purpose"][1].decode(), data, self._now())
        self.files[stored.id] = stored
        return stored

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeBatchAPI:
        fake = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload, kind = fake.handle(self.command, self.path, headers, raw)
                data = payload if isinstance(payload, bytes) else (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = _serve

        self.server, self.thread = serve(Handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_for(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)
